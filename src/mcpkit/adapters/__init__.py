"""Adapters between mcpkit and agent frameworks; each framework is an optional extra.

- :mod:`mcpkit.adapters.agents`: any agent (a ``generate`` method, or an object
  a framework adapter recognises) as an ``ask_*`` tool; what
  ``MCPServer(agents=...)`` uses. :mod:`mcpkit.adapters.base` holds what the
  framework adapters share with it (``AgentResponse``, the adapter registry).
- :mod:`mcpkit.adapters.pydantic_ai`: expose a ``pydantic_ai.Agent`` as an
  ``ask_*`` tool, and :class:`~mcpkit.adapters.pydantic_ai.SamplingModel`, a
  pydantic-ai model that thinks with the calling client's LLM through MCP
  sampling (``pip install 'mcpkit[pydantic-ai]'``).
- :mod:`mcpkit.adapters.langchain`: expose a LangChain runnable (anything
  with ``ainvoke`` or ``run``) as an ``ask_*`` tool.

``MCPServer(agents=...)`` applies these adapters by itself; import a module
here only to use its classes directly. Nothing here is imported by
``import mcpkit``.
"""
