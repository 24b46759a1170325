"""What every framework bridge shares: tool names a model accepts, results as text, model choice.

An MCP tool name may hold characters the function-calling APIs refuse (OpenAI
and Anthropic take ``^[a-zA-Z0-9_-]{1,64}$``; MCP allows dots, slashes and up to
128 characters, 2025-11-25 server/tools § tool names), so :func:`function_names`
maps each tool to a name they accept, unique within the set. A tool's result goes
back to the model as text (:func:`result_text`): its structured content as JSON
when it sent some, else its text blocks, with a one-line stand-in for each
image, audio or resource block. :func:`choose_model` applies the spec's model
preferences (2025-11-25 client/sampling § model preferences: hints are
substrings, tried in order; the priorities only break ties here, as the client
knows no scores of its own).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InvalidParams

if TYPE_CHECKING:
    from ..client.tools import Tool

__all__ = [
    "ToolSource",
    "choose_model",
    "function_names",
    "message_role",
    "result_text",
    "sampling_result",
    "sampling_text_parts",
    "stop_reason",
]

#: What OpenAI and Anthropic accept as a function or tool name.
_NAME_OK = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_NAME = 64


class ToolSource(Protocol):
    """An ``MCPClient`` (or anything with its ``get_tools``): one long-lived session
    per server, so every call of every tool reuses its server's connection."""

    async def get_tools(self, *, raise_on_error: bool = True) -> dict[str, Tool]: ...


def function_names(names: Iterable[str]) -> dict[str, str]:
    """``{mcp_name: function_name}``: each name as the function-calling APIs accept it.

    A valid name is kept. Others get their bad characters replaced by ``_`` and
    are cut to 64 characters; a name that then collides with another gets a short
    hash of the original at its end, so the mapping is stable from one listing to
    the next.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    pending: list[str] = []
    for name in names:
        if _NAME_OK.match(name) and name not in taken:
            out[name] = name
            taken.add(name)
        else:
            pending.append(name)
    for name in pending:
        candidate = _BAD_CHARS.sub("_", name)[:_MAX_NAME] or "tool"
        if candidate in taken:
            digest = hashlib.sha256(name.encode()).hexdigest()[:8]
            candidate = f"{candidate[: _MAX_NAME - 9]}_{digest}"
        out[name] = candidate
        taken.add(candidate)
    return out


def result_text(result: Mapping[str, Any]) -> str:
    """A ``CallToolResult`` as the text a model reads."""
    structured = result.get("structuredContent")
    if structured is not None:
        return json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    parts: list[str] = []
    for block in result.get("content") or ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {block.get('mimeType', 'unknown type')}]")
        elif kind == "resource_link":
            parts.append(f"[resource: {block.get('uri', '')}]")
        elif kind == "resource":
            resource = block.get("resource")
            if isinstance(resource, Mapping) and isinstance(resource.get("text"), str):
                parts.append(resource["text"])
            elif isinstance(resource, Mapping):
                parts.append(f"[resource: {resource.get('uri', '')}]")
    return "\n".join(parts)


def choose_model(preferences: object, default: str, allowed: Sequence[str] = ()) -> str:
    """The model to sample with: the first hint matching one of ``allowed`` (substring,
    case-insensitive, as the spec says hints are), else ``default``. Without
    ``allowed`` models hints are ignored: a server does not pick the client's model."""
    if not allowed or not isinstance(preferences, Mapping):
        return default
    hints = preferences.get("hints")
    for hint in hints if isinstance(hints, list) else ():
        name = hint.get("name") if isinstance(hint, Mapping) else None
        if not isinstance(name, str) or not name:
            continue
        for model in allowed:
            if name.lower() in model.lower():
                return model
    return default


def sampling_text_parts(content: object) -> list[Mapping[str, Any]]:
    """A sampling message's content blocks (one block, or a list of them in 2025-11-25)."""
    if isinstance(content, Mapping):
        return [content]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, Mapping)]
    return []


#: Provider stop reasons in the spec's words (2025-11-25 client/sampling, CreateMessageResult).
_STOP_REASONS = {
    "stop": "endTurn",
    "end_turn": "endTurn",
    "length": "maxTokens",
    "max_tokens": "maxTokens",
    "stop_sequence": "stopSequence",
    "tool_calls": "toolUse",
    "tool_use": "toolUse",
}


def stop_reason(provider_reason: object) -> str | None:
    """The spec's ``stopReason`` for a provider's finish reason (None when unknown)."""
    if not isinstance(provider_reason, str):
        return None
    return _STOP_REASONS.get(provider_reason, provider_reason)


def sampling_result(text: str, *, model: str, provider_reason: object) -> dict[str, Any]:
    """A ``CreateMessageResult`` for a provider's text answer, its ``stopReason`` in the spec's
    words when the provider gave one the spec knows."""
    result: dict[str, Any] = {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": model,
    }
    reason = stop_reason(provider_reason)
    if reason is not None:
        result["stopReason"] = reason
    return result


def message_role(message: Mapping[str, Any]) -> str:
    """A sampling message's role, refused with ``InvalidParams`` unless user or assistant (the
    only roles ``SamplingMessage`` allows)."""
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise InvalidParams(f"a sampling message's role is user or assistant, not {role!r}")
    return str(role)
