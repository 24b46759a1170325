"""What every agent adapter shares: the agent protocol, the reply shape, the registry.

:mod:`mcpkit.adapters.agents` turns agents into ``ask_*`` tools; the framework
adapters (:mod:`.pydantic_ai`, :mod:`.langchain`) wrap a framework's object as
an :class:`AgentLike` and register themselves here when imported. Both build on
this module and it imports neither, so the agents module can import an adapter
by name on first use without an import cycle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from ..server.content import dump_text, jsonable
from ..server.context import Context

__all__ = [
    "AgentAdapter",
    "AgentLike",
    "AgentResponse",
    "agent_reply",
    "register_agent_adapter",
    "registered_adapter",
]


@runtime_checkable
class AgentLike(Protocol):
    """What ``MCPServer(agents=...)`` needs from an agent."""

    name: str | None
    description: str | None

    def generate(self, message: str, *, context: Context | None = None) -> Any:
        """Answer ``message``; may be ``async``. Returns text, a mapping or an :class:`AgentResponse`."""


@dataclass(slots=True, kw_only=True)
class AgentResponse:
    """An agent's reply: the answer ``text`` and whatever else the agent reports.

    ``output`` is a structured (non-text) result, JSON-able; ``usage`` counts
    tokens and requests; ``extra`` adds further top-level fields.
    """

    text: str
    output: Any = None
    usage: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text}
        if self.output is not None:
            out["output"] = jsonable(self.output)
        if self.usage:
            out["usage"] = jsonable(self.usage)
        for key, value in self.extra.items():
            out.setdefault(key, jsonable(value))
        return out


def agent_reply(value: Any) -> dict[str, Any]:
    """The JSON object an ``ask_*`` tool returns for whatever ``generate`` returned.

    Text becomes ``{"text": ...}``; a mapping is kept (a missing ``text`` is
    filled with the mapping's JSON, and the mapping goes under ``output``); an
    object with a ``text`` attribute (Mastra's ``generate()`` result) keeps
    its ``usage``; any other value is the ``output``, its JSON the ``text``.
    """
    if isinstance(value, AgentResponse):
        return value.to_dict()
    if isinstance(value, str):
        return {"text": value}
    if isinstance(value, BaseModel) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
        value = jsonable(value)
    if isinstance(value, Mapping):
        data = {str(k): jsonable(v) for k, v in value.items()}
        text = data.get("text")
        if isinstance(text, str):
            return data
        if text is None:
            return {"text": dump_text(data), "output": data}
        data["text"] = dump_text(text)
        return data
    text_attr = getattr(value, "text", None)
    if isinstance(text_attr, str):
        reply = AgentResponse(text=text_attr, usage=_usage_of(value))
        return reply.to_dict()
    data = jsonable(value)
    return {"text": dump_text(data), "output": data}


def _usage_of(value: Any) -> dict[str, Any] | None:
    usage = getattr(value, "usage", None)
    if usage is None or (callable(usage) and not dataclasses.is_dataclass(usage)):
        return None
    data = jsonable(usage)
    return data if isinstance(data, dict) else None


class AgentAdapter(Protocol):
    """Wraps one agent framework's object as an :class:`AgentLike` (a class fits)."""

    def __call__(
        self, agent: Any, /, *, name: str | None = None, description: str | None = None
    ) -> AgentLike: ...


#: Registered adapters, by the name of the module that registered them.
_adapters: dict[str, AgentAdapter] = {}


def register_agent_adapter(module: str, adapter: AgentAdapter) -> None:
    """Register the adapter that module ``module`` provides (it calls this when imported)."""
    _adapters[module] = adapter


def registered_adapter(module: str) -> AgentAdapter | None:
    """The adapter module ``module`` registered, None before it is imported."""
    return _adapters.get(module)
