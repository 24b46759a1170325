"""pydantic-ai: an MCP client's tools as a pydantic-ai toolset, and sampling answered by any pydantic-ai model.

:func:`pydantic_ai_toolset` wraps the tools of an ``MCPClient`` (one long-lived
session per server, reused by every run of every agent) as a
``FunctionToolset``: each tool keeps its JSON schema and description, and a tool
error result raises ``ModelRetry`` with the error's text, pydantic-ai's way to
show a failure to the model and let it try again (the agent's retry limit
applies). A tool that sent structured content returns it; others return their
text. (The server side, an agent as an ``ask_*`` tool and a model that samples
the client's LLM, is :mod:`mcpkit.adapters.pydantic_ai`.)

:func:`pydantic_ai_sampling_handler` answers ``sampling/createMessage``
(2025-11-25 client/sampling) with any pydantic-ai model (OpenAI, Anthropic,
Gemini, Ollama, a test model...) through ``pydantic_ai.direct.model_request``:
the system prompt, text, image and audio messages, max tokens, temperature and
stop sequences carry over; a server's hint picks one of ``models`` by name.

Requires ``pydantic-ai`` (or ``pydantic-ai-slim``): ``pip install 'mcpkit[pydantic-ai]'``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._extras import require_extra

with require_extra(
    "pydantic-ai", feature="the pydantic-ai toolset (mcpkit.frameworks.pydantic_ai)"
):
    from pydantic_ai import ModelRetry, Tool
    from pydantic_ai.direct import model_request
    from pydantic_ai.messages import (
        BinaryContent,
        ModelMessage,
        ModelRequest,
        ModelRequestPart,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        UserContent,
        UserPromptPart,
    )
    from pydantic_ai.models import Model
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.toolsets import FunctionToolset

from ..errors import InvalidParams, ToolCallError
from .common import (
    ToolSource,
    choose_model,
    function_names,
    message_role,
    result_text,
    sampling_result,
    sampling_text_parts,
)

if TYPE_CHECKING:
    from ..client.tools import Tool as MCPTool

__all__ = ["pydantic_ai_sampling_handler", "pydantic_ai_toolset", "toolset_of"]


async def pydantic_ai_toolset(source: ToolSource, *, id: str | None = None) -> FunctionToolset[Any]:
    """The tools ``source`` (an ``MCPClient``) lists now, as a pydantic-ai toolset:
    ``Agent(model, toolsets=[await pydantic_ai_toolset(mcp)])``."""
    return toolset_of(await source.get_tools(), id=id)


def toolset_of(tools: Mapping[str, MCPTool], *, id: str | None = None) -> FunctionToolset[Any]:
    """``tools`` (``await mcp.get_tools()``, filtered as you like) as a pydantic-ai toolset."""
    names = function_names(tools)
    return FunctionToolset(
        [_pydantic_ai_tool(names[name], tool) for name, tool in tools.items()], id=id
    )


def _pydantic_ai_tool(name: str, tool: MCPTool) -> Tool[Any]:
    async def run(**arguments: Any) -> Any:
        try:
            output = await tool.call(arguments, raise_on_error=True)
        except ToolCallError as exc:
            raise ModelRetry(result_text(exc.result) or str(exc)) from None
        if isinstance(output, list):
            return result_text({"content": output})
        return output

    return Tool.from_schema(
        run, name=name, description=tool.description, json_schema=tool.input_schema
    )


# -- sampling ----------------------------------------------------------------------------------


def pydantic_ai_sampling_handler(
    model: Model | str,
    *,
    models: Mapping[str, Model | str] | None = None,
    settings: ModelSettings | None = None,
) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    """A sampling handler backed by a pydantic-ai ``model`` (a ``Model`` or a name such
    as ``"openai:gpt-4o"``). A server's hint picks one of ``models`` by its key;
    ``settings`` are the base ``ModelSettings`` the request's own override."""
    choices = dict(models or {})

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        key = choose_model(params.get("modelPreferences"), "", list(choices))
        chosen = choices[key] if key else model
        request_settings: dict[str, Any] = dict(settings or {})
        if isinstance(params.get("maxTokens"), int):
            request_settings["max_tokens"] = params["maxTokens"]
        if isinstance(params.get("temperature"), int | float):
            request_settings["temperature"] = params["temperature"]
        stops = params.get("stopSequences")
        if isinstance(stops, list) and stops:
            request_settings["stop_sequences"] = stops
        messages = _pydantic_ai_messages(params)
        response = await model_request(
            chosen,
            messages,
            model_settings=ModelSettings(**request_settings),  # type: ignore[typeddict-item]
        )
        text = "".join(part.content for part in response.parts if isinstance(part, TextPart))
        name = response.model_name or (chosen if isinstance(chosen, str) else chosen.model_name)
        finish = response.finish_reason
        return sampling_result(
            text, model=name, provider_reason="tool_use" if finish == "tool_call" else finish
        )

    return sample


def _pydantic_ai_messages(params: Mapping[str, Any]) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    system = params.get("systemPrompt")
    pending_system: list[ModelRequestPart] = (
        [SystemPromptPart(content=system)] if isinstance(system, str) and system else []
    )
    for message in params.get("messages") or ():
        role = message_role(message if isinstance(message, Mapping) else {})
        blocks = sampling_text_parts(message.get("content")) if isinstance(message, Mapping) else []
        if role == "assistant":
            texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
            if len(texts) != len(blocks):
                raise InvalidParams("this sampling handler takes only text in assistant messages")
            out.append(ModelResponse(parts=[TextPart(content="".join(texts))]))
        else:
            content: list[UserContent] = [_user_content(b) for b in blocks]
            out.append(ModelRequest(parts=[*pending_system, UserPromptPart(content=content)]))
            pending_system = []
    if pending_system:  # only a system prompt: still a request
        out.insert(0, ModelRequest(parts=pending_system))
    return out


def _user_content(block: Mapping[str, Any]) -> UserContent:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        try:
            data = base64.b64decode(str(block.get("data", "")), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidParams(f"the {kind} block's data is not base64") from None
        return BinaryContent(data=data, media_type=str(block.get("mimeType", "")))
    raise InvalidParams(
        f"this sampling handler cannot send a {kind!r} block to a pydantic-ai model"
    )
