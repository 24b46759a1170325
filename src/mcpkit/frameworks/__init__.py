"""The mcpkit client inside agent frameworks: MCP tools as the framework's tools, sampling by its models.

One module per framework; each needs only its own framework, loaded when the
module is imported (never by ``import mcpkit``):

- :mod:`mcpkit.frameworks.pydantic_ai`: ``await pydantic_ai_toolset(mcp)`` and
  ``pydantic_ai_sampling_handler(model)`` (extra ``pydantic-ai``);
- :mod:`mcpkit.frameworks.langchain`: ``await langchain_tools(mcp)`` (extra
  ``langchain``);
- :mod:`mcpkit.frameworks.openai`: ``await openai_tools(mcp)`` (no dependency)
  and ``openai_sampling_handler(AsyncOpenAI(), model=...)``;
- :mod:`mcpkit.frameworks.anthropic`: ``await anthropic_tools(mcp)`` (no
  dependency) and ``anthropic_sampling_handler(AsyncAnthropic(), model=...)``.

Each takes an ``MCPClient``, whose one long-lived session per server every call
reuses (:class:`~mcpkit.frameworks.common.ToolSource`). The server side (agents
of these frameworks as ``ask_*`` tools) is :mod:`mcpkit.adapters`.
"""
