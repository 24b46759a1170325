"""OpenAI: an MCP client's tools as OpenAI function tools, and sampling answered by an OpenAI model.

:func:`openai_tools` lists the tools of an ``MCPClient`` (one long-lived session
per server) in the Chat Completions ``tools=`` format (``definitions``) or the
Responses API's (``responses_definitions``), and runs the model's tool calls
(``await tools.call(tool_call)``), answering each with the ``tool`` message the
next request needs. As OpenAI's guides do, a failure (a tool error result,
arguments that are not JSON, an unknown tool) is the content of that message,
for the model to read, never an exception that ends the loop. None of this
needs the ``openai`` package.

:func:`openai_sampling_handler` answers ``sampling/createMessage`` (2025-11-25
client/sampling) with ``client.chat.completions.create`` of an
``openai.AsyncOpenAI`` (or any OpenAI-compatible server behind one): the
system prompt, text and image messages, max tokens, temperature and stop
sequences carry over; the model is ``model``, or the first of ``models`` a
server's hint names.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

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
    from ..client.tools import Tool

__all__ = ["OpenAITools", "openai_sampling_handler", "openai_tools"]


class OpenAITools:
    """The tools of an MCP client as OpenAI function tools (see the module docstring)."""

    def __init__(self, tools: Mapping[str, Tool]) -> None:
        names = function_names(tools)
        self._by_function = {names[name]: tool for name, tool in tools.items()}

    @property
    def names(self) -> list[str]:
        """The function names the model sees, in listing order."""
        return list(self._by_function)

    @property
    def definitions(self) -> list[dict[str, Any]]:
        """For ``client.chat.completions.create(tools=...)``."""
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                },
            }
            for name, tool in self._by_function.items()
        ]

    @property
    def responses_definitions(self) -> list[dict[str, Any]]:
        """For ``client.responses.create(tools=...)``."""
        return [
            {
                "type": "function",
                "name": name,
                "description": tool.description,
                "parameters": tool.input_schema,
            }
            for name, tool in self._by_function.items()
        ]

    def tool(self, function_name: str) -> Tool | None:
        """The MCP tool behind a function name."""
        return self._by_function.get(function_name)

    async def call(self, tool_call: Any) -> dict[str, Any]:
        """Run one tool call of a chat completion (the SDK's object or its dict); the
        ``{"role": "tool", "tool_call_id", "content"}`` message that answers it."""
        call_id, name, arguments = _tool_call_parts(tool_call)
        return {
            "role": "tool",
            "tool_call_id": call_id,
            "content": await self._run(name, arguments),
        }

    async def call_all(self, tool_calls: Sequence[Any]) -> list[dict[str, Any]]:
        """Every tool call of one assistant message, run concurrently, answers in order."""
        return list(await asyncio.gather(*(self.call(c) for c in tool_calls)))

    async def call_output(self, function_call: Any) -> dict[str, Any]:
        """Run one ``function_call`` item of the Responses API; its ``function_call_output``."""
        call_id = _field(function_call, "call_id")
        name = _field(function_call, "name")
        output = await self._run(name, _field(function_call, "arguments"))
        return {"type": "function_call_output", "call_id": call_id, "output": output}

    async def _run(self, name: Any, arguments: Any) -> str:
        tool = self._by_function.get(name) if isinstance(name, str) else None
        if tool is None:
            return f"Error: there is no tool named {name!r}; the tools are {', '.join(self.names)}"
        try:
            args = json.loads(arguments) if isinstance(arguments, str) and arguments else {}
        except ValueError as exc:
            return f"Error: the arguments of {name} are not valid JSON ({exc})"
        if not isinstance(args, dict):
            return f"Error: the arguments of {name} must be a JSON object"
        try:
            result = await tool.call(args, raise_on_error=True)
        except ToolCallError as exc:
            return f"Error: {result_text(exc.result) or exc}"
        return result_text(_as_result(result))


async def openai_tools(source: ToolSource) -> OpenAITools:
    """The tools ``source`` (an ``MCPClient``) lists now, as OpenAI function tools."""
    return OpenAITools(await source.get_tools())


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _tool_call_parts(tool_call: Any) -> tuple[Any, Any, Any]:
    function = _field(tool_call, "function")
    return _field(tool_call, "id"), _field(function, "name"), _field(function, "arguments")


def _as_result(output: Any) -> dict[str, Any]:
    """``Tool.call``'s output (structured content or the content list) as a result dict."""
    if isinstance(output, list):
        return {"content": output}
    return {"structuredContent": output}


# -- sampling ----------------------------------------------------------------------------------


def openai_sampling_handler(
    client: Any,
    *,
    model: str,
    models: Sequence[str] = (),
    token_parameter: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens",
    extra: Mapping[str, Any] | None = None,
) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    """A sampling handler backed by ``client`` (an ``openai.AsyncOpenAI``).

    ``model`` answers unless a server's hint names one of ``models``. OpenAI
    calls the limit ``max_completion_tokens``; some compatible servers know only
    ``max_tokens`` (``token_parameter``). ``extra`` is passed to every request as
    is. ``includeContext`` cannot be honoured by a single client and is ignored;
    a request with tool use (2025-11-25 sampling with tools) is refused.
    """

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        chosen = choose_model(params.get("modelPreferences"), model, models)
        messages: list[dict[str, Any]] = []
        system = params.get("systemPrompt")
        if isinstance(system, str) and system:
            messages.append({"role": "system", "content": system})
        for message in params.get("messages") or ():
            messages.append(_openai_message(message))
        request: dict[str, Any] = {"model": chosen, "messages": messages}
        max_tokens = params.get("maxTokens")
        if isinstance(max_tokens, int):
            request[token_parameter] = max_tokens
        if isinstance(params.get("temperature"), int | float):
            request["temperature"] = params["temperature"]
        stops = params.get("stopSequences")
        if isinstance(stops, list) and stops:
            request["stop"] = stops
        request.update(extra or {})
        completion = await client.chat.completions.create(**request)
        choice = completion.choices[0]
        return sampling_result(
            choice.message.content or "",
            model=completion.model or chosen,
            provider_reason=choice.finish_reason,
        )

    return sample


def _openai_message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = message_role(message)
    parts: list[dict[str, Any]] = []
    for block in sampling_text_parts(message.get("content")):
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "image" and role == "user":
            url = f"data:{block.get('mimeType', 'image/png')};base64,{block.get('data', '')}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        elif kind == "audio" and role == "user":
            fmt = str(block.get("mimeType", "audio/wav")).rsplit("/", 1)[-1]
            fmt = "mp3" if fmt == "mpeg" else fmt
            parts.append(
                {
                    "type": "input_audio",
                    "input_audio": {"data": block.get("data", ""), "format": fmt},
                }
            )
        else:
            raise InvalidParams(
                f"this sampling handler cannot send a {kind!r} block in a {role} message to OpenAI"
            )
    if role == "assistant":  # assistant messages take text only
        return {"role": "assistant", "content": "".join(p["text"] for p in parts)}
    return {"role": "user", "content": parts}
