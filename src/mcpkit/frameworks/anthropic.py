"""Anthropic: an MCP client's tools as Claude tools, and sampling answered by a Claude model.

:func:`anthropic_tools` lists the tools of an ``MCPClient`` (one long-lived
session per server) in the Messages API's ``tools=`` format (``definitions``) and
runs the model's ``tool_use`` blocks (``await tools.call(block)``), answering each
with the ``tool_result`` block the next user message carries. A failure is a
``tool_result`` with ``is_error: true`` and the error as its content, Anthropic's
own convention, so the model can read it and recover. None of this needs the
``anthropic`` package.

:func:`anthropic_sampling_handler` answers ``sampling/createMessage`` (2025-11-25
client/sampling) with ``client.messages.create`` of an
``anthropic.AsyncAnthropic``: the system prompt, text and image messages, max
tokens and stop sequences carry over (the current Messages API has no
temperature, so a request's ``temperature`` is not sent); the model is ``model``, or the
first of ``models`` a server's hint names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

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

__all__ = ["AnthropicTools", "anthropic_sampling_handler", "anthropic_tools"]

#: The image types the Messages API takes (others are refused with a clear error).
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


class AnthropicTools:
    """The tools of an MCP client as Claude tools (see the module docstring)."""

    def __init__(self, tools: Mapping[str, Tool]) -> None:
        names = function_names(tools)
        self._by_name = {names[name]: tool for name, tool in tools.items()}

    @property
    def names(self) -> list[str]:
        return list(self._by_name)

    @property
    def definitions(self) -> list[dict[str, Any]]:
        """For ``client.messages.create(tools=...)``."""
        return [
            {"name": name, "description": tool.description, "input_schema": tool.input_schema}
            for name, tool in self._by_name.items()
        ]

    def tool(self, name: str) -> Tool | None:
        return self._by_name.get(name)

    async def call(self, tool_use: Any) -> dict[str, Any]:
        """Run one ``tool_use`` block (the SDK's object or its dict); its ``tool_result``."""
        use_id = _field(tool_use, "id")
        name = _field(tool_use, "name")
        arguments = _field(tool_use, "input")
        text, failed = await self._run(name, arguments)
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": use_id, "content": text}
        if failed:
            block["is_error"] = True
        return block

    async def call_all(self, content: Sequence[Any]) -> list[dict[str, Any]]:
        """Every ``tool_use`` block of an assistant message's content, run concurrently:
        the ``tool_result`` blocks of the next user message, in order."""
        uses = [block for block in content if _field(block, "type") == "tool_use"]
        return list(await asyncio.gather(*(self.call(block) for block in uses)))

    async def _run(self, name: Any, arguments: Any) -> tuple[str, bool]:
        tool = self._by_name.get(name) if isinstance(name, str) else None
        if tool is None:
            return f"there is no tool named {name!r}; the tools are {', '.join(self.names)}", True
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return f"the input of {name} must be an object", True
        try:
            result = await tool.call(dict(arguments), raise_on_error=True)
        except ToolCallError as exc:
            return result_text(exc.result) or str(exc), True
        output = {"content": result} if isinstance(result, list) else {"structuredContent": result}
        return result_text(output), False


async def anthropic_tools(source: ToolSource) -> AnthropicTools:
    """The tools ``source`` (an ``MCPClient``) lists now, as Claude tools."""
    return AnthropicTools(await source.get_tools())


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


# -- sampling ----------------------------------------------------------------------------------


def anthropic_sampling_handler(
    client: Any,
    *,
    model: str,
    models: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    """A sampling handler backed by ``client`` (an ``anthropic.AsyncAnthropic``).

    ``model`` answers unless a server's hint names one of ``models``; ``extra`` is
    passed to every request as is. ``includeContext`` cannot be honoured by a
    single client and is ignored; a request with tool use is refused.
    """

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        chosen = choose_model(params.get("modelPreferences"), model, models)
        request: dict[str, Any] = {
            "model": chosen,
            "max_tokens": params.get("maxTokens")
            if isinstance(params.get("maxTokens"), int)
            else 1024,
            "messages": [_anthropic_message(m) for m in params.get("messages") or ()],
        }
        system = params.get("systemPrompt")
        if isinstance(system, str) and system:
            request["system"] = system
        stops = params.get("stopSequences")
        if isinstance(stops, list) and stops:
            request["stop_sequences"] = stops
        request.update(extra or {})
        message = await client.messages.create(**request)
        text = "".join(
            block.text for block in message.content if getattr(block, "type", None) == "text"
        )
        return sampling_result(
            text, model=message.model or chosen, provider_reason=message.stop_reason
        )

    return sample


def _anthropic_message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = message_role(message)
    blocks: list[dict[str, Any]] = []
    for block in sampling_text_parts(message.get("content")):
        kind = block.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": str(block.get("text", ""))})
        elif kind == "image" and block.get("mimeType") in _IMAGE_TYPES:
            source = {
                "type": "base64",
                "media_type": block["mimeType"],
                "data": block.get("data", ""),
            }
            blocks.append({"type": "image", "source": source})
        else:
            what = f"{kind!r} block" if kind != "image" else f"{block.get('mimeType')!r} image"
            raise InvalidParams(f"this sampling handler cannot send a {what} to Anthropic")
    return {"role": role, "content": blocks}
