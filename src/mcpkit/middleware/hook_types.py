"""The typed params and results of :class:`~.hooks.Hooks`, and how each reads from the wire.

A hook sees a request's params as a small dataclass (``CallToolParams`` with
the tool's ``name`` and ``arguments``, ...) and ``call_next`` returns the
result typed the same way: a :class:`~mcpkit.ToolResult` for ``tools/call``
(the type a tool may return), the list of definitions for a listing, the list
of contents for ``resources/read``, a :class:`PromptResult` for
``prompts/get``, an :class:`InitializeResult` for ``initialize``. The fields
keep the specification's JSON as it is (content blocks, definitions, schemas
are dicts), so nothing is converted that the hook does not touch.

Each method's :class:`Kind` maps both ways: a typed object left as it was
gives back the very dict it was read from (no copy on the way out), and one
the hook changed or made is written back into the wire's shape, with the
fields it does not know (``nextCursor``, ``resultType``, ``task``) kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..server.content import ToolResult, shape_result, to_content

if TYPE_CHECKING:
    from ..server.middleware import MiddlewareContext

__all__ = [
    "CallToolParams",
    "GetPromptParams",
    "InitializeParams",
    "InitializeResult",
    "Kind",
    "ListParams",
    "PromptResult",
    "ReadResourceParams",
]


@dataclass(slots=True)
class CallToolParams:
    """``tools/call``: the tool's ``name`` and its ``arguments``.

    ``arguments`` is the request's own dict: assign a new one to change what the
    tool gets (``params.arguments = {**params.arguments, "x": 1}``).
    """

    name: str
    arguments: dict[str, Any]
    meta: dict[str, Any] | None = None


@dataclass(slots=True)
class ReadResourceParams:
    """``resources/read``: the resource's ``uri``."""

    uri: str
    meta: dict[str, Any] | None = None


@dataclass(slots=True)
class GetPromptParams:
    """``prompts/get``: the prompt's ``name`` and its (string) ``arguments``."""

    name: str
    arguments: dict[str, Any]
    meta: dict[str, Any] | None = None


@dataclass(slots=True)
class ListParams:
    """A listing (``tools/list``, ``resources/list``, ...): the page ``cursor``."""

    cursor: str | None = None
    meta: dict[str, Any] | None = None


@dataclass(slots=True)
class InitializeParams:
    """``initialize`` (handshake era): what the client offers."""

    protocol_version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any]
    meta: dict[str, Any] | None = None


@dataclass(slots=True)
class PromptResult:
    """``prompts/get``'s result: ``messages`` (dicts, or :class:`~mcpkit.PromptMessage`)."""

    messages: list[Any] = field(default_factory=list)
    description: str | None = None
    meta: dict[str, Any] | None = None


@dataclass(slots=True)
class InitializeResult:
    """``initialize``'s result: what the server answers the handshake with."""

    protocol_version: str
    capabilities: dict[str, Any]
    server_info: dict[str, Any]
    instructions: str | None = None
    meta: dict[str, Any] | None = None


def _meta(params: dict[str, Any]) -> dict[str, Any] | None:
    meta = params.get("_meta")
    return meta if isinstance(meta, dict) else None


def _put(
    raw: dict[str, Any], changes: dict[str, Any], meta: dict[str, Any] | None
) -> dict[str, Any]:
    """``raw`` with ``changes`` and ``meta`` (``_meta`` dropped when None)."""
    out = {**raw, **changes}
    if meta is None:
        out.pop("_meta", None)
    else:
        out["_meta"] = meta
    return out


class Kind:
    """How one method's params and result read as typed objects, and back."""

    __slots__ = ("hook", "method")

    def __init__(self, hook: str, method: str) -> None:
        self.hook = hook
        self.method = method

    def params(self, raw: dict[str, Any]) -> Any:
        return raw

    def request(self, typed: Any, raw: dict[str, Any]) -> dict[str, Any]:
        """The params to serve: ``raw`` itself when ``typed`` is as read from it."""
        if type(typed) is not dict:
            raise TypeError(f"{self.hook}: context.params must stay a dict")
        return typed

    def result(self, raw: dict[str, Any]) -> Any:
        return raw

    def same(self, typed: Any, raw: dict[str, Any]) -> bool:
        """Is ``typed`` (read from ``raw``) as it was?"""
        return typed is raw

    def out(self, typed: Any, raw: dict[str, Any] | None, ctx: MiddlewareContext) -> dict[str, Any]:
        """The result dict for a ``typed`` result changed (``raw``: what it was read
        from) or made by the hook (``raw`` None)."""
        if type(typed) is not dict:
            raise TypeError(f"{self.hook} returned {type(typed).__name__}, not the result dict")
        return typed


class NotificationKind(Kind):
    """A notification: its raw params; ``call_next`` has no result."""

    __slots__ = ()

    def result(self, raw: dict[str, Any]) -> None:
        return None


class CallToolKind(Kind):
    __slots__ = ()

    def params(self, raw: dict[str, Any]) -> CallToolParams:
        args = raw.get("arguments")
        return CallToolParams(raw.get("name", ""), args if args is not None else {}, _meta(raw))

    def request(self, typed: Any, raw: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(typed, CallToolParams):
            raise TypeError(f"on_call_tool: context.params must be CallToolParams, not {typed!r}")
        name, args, meta = typed.name, typed.arguments, typed.meta
        if name == raw.get("name") and args is raw.get("arguments") and meta is _meta(raw):
            return raw
        if not args and "arguments" not in raw and name == raw.get("name") and meta is _meta(raw):
            return raw  # read as {} from a request without arguments, left empty
        return _put(raw, {"name": name, "arguments": args}, meta)

    def result(self, raw: dict[str, Any]) -> ToolResult:
        content = raw.get("content")
        return ToolResult(
            content if content is not None else [],
            raw.get("structuredContent"),
            raw.get("isError") is True,
            raw.get("_meta"),
        )

    def same(self, typed: Any, raw: dict[str, Any]) -> bool:
        content = typed.content
        return (
            (content is raw.get("content") or (not content and "content" not in raw))
            and typed.structured_content is raw.get("structuredContent")
            and typed.is_error is (raw.get("isError") is True)
            and typed.meta is raw.get("_meta")
        )

    def out(self, typed: Any, raw: dict[str, Any] | None, ctx: MiddlewareContext) -> dict[str, Any]:
        if type(typed) is dict:
            return typed  # a CallToolResult dict, as a generic middleware returns
        if not isinstance(typed, ToolResult):
            raise TypeError(
                f"on_call_tool returned {type(typed).__name__}, not a ToolResult "
                "(return await call_next(context), or a ToolResult)"
            )
        made = typed.to_dict()
        if raw is not None:
            kept = {k: v for k, v in raw.items() if k not in _TOOL_FIELDS}
            made = {**kept, **made}
        # Content the hook made is shaped for the session's revision, as a tool's is.
        return shape_result(made, ctx.session.revision)


_TOOL_FIELDS = frozenset({"content", "structuredContent", "isError", "_meta"})


class ReadResourceKind(Kind):
    __slots__ = ()

    def params(self, raw: dict[str, Any]) -> ReadResourceParams:
        return ReadResourceParams(raw.get("uri", ""), _meta(raw))

    def request(self, typed: Any, raw: dict[str, Any]) -> dict[str, Any]:
        if typed.uri == raw.get("uri") and typed.meta is _meta(raw):
            return raw
        return _put(raw, {"uri": typed.uri}, typed.meta)

    # The result: the list of contents (as ListKind's, under "contents").


class GetPromptKind(Kind):
    __slots__ = ()

    def params(self, raw: dict[str, Any]) -> GetPromptParams:
        args = raw.get("arguments")
        return GetPromptParams(raw.get("name", ""), args if args is not None else {}, _meta(raw))

    def request(self, typed: Any, raw: dict[str, Any]) -> dict[str, Any]:
        name, args, meta = typed.name, typed.arguments, typed.meta
        if name == raw.get("name") and meta is _meta(raw):
            if args is raw.get("arguments") or (not args and "arguments" not in raw):
                return raw
        return _put(raw, {"name": name, "arguments": args}, meta)

    def result(self, raw: dict[str, Any]) -> PromptResult:
        messages = raw.get("messages")
        return PromptResult(
            messages if messages is not None else [], raw.get("description"), raw.get("_meta")
        )

    def same(self, typed: Any, raw: dict[str, Any]) -> bool:
        return (
            typed.messages is raw.get("messages")
            and typed.description is raw.get("description")
            and typed.meta is raw.get("_meta")
        )

    def out(self, typed: Any, raw: dict[str, Any] | None, ctx: MiddlewareContext) -> dict[str, Any]:
        if not isinstance(typed, PromptResult):
            raise TypeError(f"on_get_prompt returned {type(typed).__name__}, not a PromptResult")
        made: dict[str, Any] = {k: v for k, v in (raw or {}).items() if k != "description"}
        made["messages"] = [_message(m) for m in typed.messages]
        if typed.description is not None:
            made["description"] = typed.description
        if typed.meta is not None:
            made["_meta"] = typed.meta
        else:
            made.pop("_meta", None)
        return made


def _message(message: Any) -> Any:
    to_dict = getattr(message, "to_dict", None)
    if to_dict is not None:
        return to_dict()
    if isinstance(message, dict) and not isinstance(message.get("content"), dict):
        return {**message, "content": to_content(message.get("content"))}
    return message


class ListKind(Kind):
    """A result that is one list under ``key`` (definitions, or a read's contents)."""

    __slots__ = ("key",)

    def __init__(self, hook: str, method: str, key: str) -> None:
        super().__init__(hook, method)
        self.key = key

    def params(self, raw: dict[str, Any]) -> Any:
        return ListParams(raw.get("cursor"), _meta(raw))

    def request(self, typed: Any, raw: dict[str, Any]) -> dict[str, Any]:
        if typed.cursor == raw.get("cursor") and typed.meta is _meta(raw):
            return raw
        changes = {"cursor": typed.cursor} if typed.cursor is not None else {}
        out = _put(raw, changes, typed.meta)
        if typed.cursor is None:
            out.pop("cursor", None)
        return out

    def result(self, raw: dict[str, Any]) -> list[Any]:
        items = raw.get(self.key)
        return items if isinstance(items, list) else []

    def same(self, typed: Any, raw: dict[str, Any]) -> bool:
        return typed is raw.get(self.key) or (not typed and self.key not in raw)

    def out(self, typed: Any, raw: dict[str, Any] | None, ctx: MiddlewareContext) -> dict[str, Any]:
        if isinstance(typed, str | bytes | dict) or not isinstance(typed, list | tuple):
            raise TypeError(f"{self.hook} returned {type(typed).__name__}, not a list")
        return {**(raw or {}), self.key: list(typed)}


class ReadListKind(ReadResourceKind, ListKind):
    """``resources/read``: its params, and its contents as a list."""

    __slots__ = ()


class InitializeKind(Kind):
    __slots__ = ()

    def params(self, raw: dict[str, Any]) -> InitializeParams:
        caps, info = raw.get("capabilities"), raw.get("clientInfo")
        return InitializeParams(
            raw.get("protocolVersion", ""),
            caps if isinstance(caps, dict) else {},
            info if isinstance(info, dict) else {},
            _meta(raw),
        )

    def request(self, typed: Any, raw: dict[str, Any]) -> dict[str, Any]:
        wire = {
            "protocolVersion": typed.protocol_version,
            "capabilities": typed.capabilities,
            "clientInfo": typed.client_info,
        }
        if all(raw.get(k) is v or raw.get(k) == v for k, v in wire.items()):
            if typed.meta is _meta(raw):
                return raw
        return _put(raw, wire, typed.meta)

    def result(self, raw: dict[str, Any]) -> InitializeResult:
        return InitializeResult(
            raw.get("protocolVersion", ""),
            raw.get("capabilities", {}),
            raw.get("serverInfo", {}),
            raw.get("instructions"),
            raw.get("_meta"),
        )

    def same(self, typed: Any, raw: dict[str, Any]) -> bool:
        return (
            typed.protocol_version == raw.get("protocolVersion")
            and typed.capabilities is raw.get("capabilities")
            and typed.server_info is raw.get("serverInfo")
            and typed.instructions is raw.get("instructions")
            and typed.meta is raw.get("_meta")
        )

    def out(self, typed: Any, raw: dict[str, Any] | None, ctx: MiddlewareContext) -> dict[str, Any]:
        if not isinstance(typed, InitializeResult):
            raise TypeError(
                f"on_initialize returned {type(typed).__name__}, not an InitializeResult"
            )
        made = dict(raw or {})
        made.update(
            protocolVersion=typed.protocol_version,
            capabilities=typed.capabilities,
            serverInfo=typed.server_info,
        )
        for key, value in (("instructions", typed.instructions), ("_meta", typed.meta)):
            if value is None:
                made.pop(key, None)
            else:
                made[key] = value
        return made


#: The typed hooks: hook name -> how its method reads (the generic on_request first).
KINDS: dict[str, Kind] = {
    kind.hook: kind
    for kind in (
        CallToolKind("on_call_tool", "tools/call"),
        ReadListKind("on_read_resource", "resources/read", "contents"),
        GetPromptKind("on_get_prompt", "prompts/get"),
        ListKind("on_list_tools", "tools/list", "tools"),
        ListKind("on_list_resources", "resources/list", "resources"),
        ListKind("on_list_resource_templates", "resources/templates/list", "resourceTemplates"),
        ListKind("on_list_prompts", "prompts/list", "prompts"),
        InitializeKind("on_initialize", "initialize"),
    )
}
