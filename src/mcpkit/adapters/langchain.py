"""LangChain (and look-alikes): objects with ``ainvoke`` or ``run`` as ``ask_*`` tools.

Nothing here imports LangChain: a runnable is recognised by its methods. The
message goes in as the runnable expects it (see :func:`default_input`), and
the reply is read from what comes back: an ``AIMessage`` (its text and
``usage_metadata``), a LangGraph state (its last message), an
``AgentExecutor`` dict (its ``output``), or plain text.

Most runnables have no description, so name and describe them when
registering: ``MCPServer(agents={"chef": as_agent(chain, description="...")})``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ..server.content import dump_text, jsonable
from ..server.context import Context, current_context, run_sync
from .base import AgentResponse, agent_reply, register_agent_adapter

__all__ = ["RunnableAgent", "default_input"]


def default_input(runnable: Any, message: str) -> Any:
    """What to pass to ``runnable``: a chat state when it takes ``messages``, else the text.

    A runnable whose input schema has a ``messages`` property (LangGraph agents)
    gets ``{"messages": [{"role": "user", "content": message}]}``; one whose
    schema has a single ``input`` property (a classic ``AgentExecutor``) gets
    ``{"input": message}``; anything else gets the message itself.
    """
    schema: Any = None
    getter = getattr(runnable, "get_input_jsonschema", None)
    try:
        if callable(getter):
            schema = getter()
        else:
            model = getattr(runnable, "input_schema", None)
            if model is not None and hasattr(model, "model_json_schema"):
                schema = model.model_json_schema()
    except Exception:  # a schema we cannot build tells us nothing
        schema = None
    props = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(props, dict):
        if "messages" in props:
            return {"messages": [{"role": "user", "content": message}]}
        if list(props) == ["input"]:
            return {"input": message}
    return message


class RunnableAgent:
    """An object with ``ainvoke`` (preferred) or ``run`` as an mcpkit agent.

    ``make_input(message)`` overrides :func:`default_input`.
    """

    def __init__(
        self,
        runnable: Any,
        *,
        name: str | None = None,
        description: str | None = None,
        make_input: Callable[[str], Any] | None = None,
    ) -> None:
        self.runnable = runnable
        self.name: str | None = name if name is not None else _name_of(runnable)
        own = getattr(runnable, "description", None)
        self.description: str | None = (
            description if description is not None else own if isinstance(own, str) else None
        )
        self._make_input = make_input or functools.partial(default_input, runnable)

    async def generate(self, message: str, *, context: Context | None = None) -> Any:
        value = self._make_input(message)
        ainvoke = getattr(self.runnable, "ainvoke", None)
        if callable(ainvoke):
            result = await ainvoke(value)
        else:
            run = self.runnable.run
            if inspect.iscoroutinefunction(run):
                result = await run(value)
            else:
                result = await run_sync(
                    functools.partial(run, value), {}, context or current_context()
                )
                if inspect.isawaitable(result):
                    result = await result
        return reply_from_langchain(result)


def _name_of(runnable: Any) -> str | None:
    name = getattr(runnable, "name", None)
    if isinstance(name, str) and name:
        return name
    get_name = getattr(runnable, "get_name", None)
    if callable(get_name):
        try:
            got = get_name()
        except Exception:
            return None
        return got if isinstance(got, str) else None
    return None


def _message_text(content: Any) -> str:
    """An AIMessage's ``content``: a string, or a list of blocks whose text parts are joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if isinstance(block, str):
                texts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                texts.append(str(block.get("text", "")))
        return "".join(texts)
    return str(content)


def reply_from_langchain(result: Any) -> dict[str, Any]:
    if isinstance(result, Mapping):
        messages = result.get("messages")
        if isinstance(messages, list) and messages:
            return reply_from_langchain(messages[-1])
        if "output" in result and "text" not in result:
            output = result["output"]
            if isinstance(output, str):
                return {"text": output}
            data = jsonable(output)
            return {"text": dump_text(data), "output": data}
        return agent_reply(result)
    content = getattr(result, "content", None)
    if content is not None and not isinstance(result, str):
        usage = getattr(result, "usage_metadata", None)
        return AgentResponse(
            text=_message_text(content),
            usage=dict(usage) if isinstance(usage, Mapping) and usage else None,
        ).to_dict()
    return agent_reply(result)


# ``as_agent`` (and so ``MCPServer(agents=...)``) finds this adapter through the registry.
register_agent_adapter(__name__, RunnableAgent)
