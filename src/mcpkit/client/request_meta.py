"""Extensions on the client side: the hooks that change each outgoing request's ``_meta``,
and the capability an extension declares.

``Client(extensions=[...])`` takes extensions (``mcpkit.Extension`` is one) and
runs the ``request_meta(method, meta)`` hook of each on every request the
session sends, to add trace context (``traceparent``, 2026-07-28 basic/index §
_meta), an extension's opt-ins, or anything else an extension keeps in
``_meta``. The hooks run before the 2026-07-28 envelope is added, and may not
set its keys (the session's alone), so they work the same on both eras.

An extension that also has a ``client_capability`` attribute (a JSON object, not
None) is declared as ``capabilities.extensions[identifier]`` (SEP-2133): in
``initialize`` on the handshake era, in every request's envelope on 2026-07-28
(:func:`declared_extensions`). ``mcpkit.Extension`` has none: a server's extension
given to a client (trace context) declares nothing. One with a ``result_handlers``
attribute completes results of its own ``resultType`` (:mod:`.results`). One with an
``observe`` attribute (a :data:`~mcpkit.protocol.observe.ObserveHook`) watches each
request and notification the session sends and each server request it answers
(:func:`observe_hook`): OpenTelemetry's client spans.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

from ..protocol.observe import Kind, ObserveHook, Observer, telemetry_module
from .stateless.discover import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    PROTOCOL_VERSION_KEY,
)

__all__ = [
    "ClientExtension",
    "RequestMetaHook",
    "client_capability_of",
    "declared_extensions",
    "observe_hook",
    "with_request_meta",
]

RequestMetaHook = Callable[[str, dict[str, Any]], None]
"""``hook(method, meta)``: changes the ``_meta`` of one outgoing request in place."""


class ClientExtension(Protocol):
    """What a client reads of an extension (``mcpkit.Extension`` is one): its
    identifier and the hook it runs on each outgoing request's ``_meta``.
    Described here, not imported: the server's ``Extension`` lives beside the
    server, which the client does not know."""

    @property
    def identifier(self) -> str: ...
    @property
    def request_meta(self) -> RequestMetaHook | None: ...


def client_capability_of(extension: object) -> Mapping[str, Any] | None:
    """What ``extension`` declares in the client's ``capabilities.extensions`` (its
    optional ``client_capability`` attribute), None when it declares nothing."""
    capability = getattr(extension, "client_capability", None)
    return capability if isinstance(capability, Mapping) else None


def declared_extensions(
    extensions: Iterable[ClientExtension], capabilities: Mapping[str, Any]
) -> dict[str, Any]:
    """``capabilities`` (copied) with each declaring extension under ``extensions``.

    SEP-2133: a client lists the extensions it supports in ``capabilities.extensions``,
    keyed by identifier, each with its settings (an empty object: no settings). An
    entry the caller wrote in ``capabilities`` itself wins over the extension's.
    """
    out = dict(capabilities)
    entries: dict[str, Any] = {}
    for ext in extensions:
        capability = client_capability_of(ext)
        if capability is not None:
            entries[ext.identifier] = dict(capability)
    if entries:
        given = out.get("extensions")
        out["extensions"] = {**entries, **(given if isinstance(given, Mapping) else {})}
    return out


def observe_hook(extensions: Iterable[object]) -> ObserveHook | None:
    """The hook that observes the session's exchanges: the extensions' ``observe``
    hooks together; when none has one, the automatic telemetry's, or None (the
    session then skips observing)."""
    hooks: list[ObserveHook] = [
        hook for ext in extensions if callable(hook := getattr(ext, "observe", None))
    ]
    if not hooks:
        # None given: the automatic telemetry's, when the application configured a
        # provider (as OpenTelemetry-instrumented libraries do; MCPKIT_TELEMETRY=off: never).
        auto: Any = telemetry_module()
        found: ObserveHook | None = auto.client_observer() if auto is not None else None
        return found
    if len(hooks) == 1:
        return hooks[0]

    def together(session: Any, kind: Kind, method: str) -> Observer | None:
        observers = [o for hook in hooks if (o := hook(session, kind, method)) is not None]
        return _Observers(observers) if observers else None

    return together


class _Observers:
    """Several extensions' observers of one exchange, told in order."""

    __slots__ = ("observers",)

    def __init__(self, observers: list[Observer]) -> None:
        self.observers = observers

    def opened(self, message: dict[str, Any]) -> None:
        for observer in self.observers:
            observer.opened(message)

    def finished(self, result: dict[str, Any] | None, error: BaseException | None) -> None:
        for observer in reversed(self.observers):
            observer.finished(result, error)


_ENVELOPE_KEYS: Final = (
    PROTOCOL_VERSION_KEY,
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
)


def with_request_meta(
    hooks: tuple[RequestMetaHook, ...], method: str, params: dict[str, Any] | None
) -> dict[str, Any]:
    """``params`` (copied, never the caller's) with a ``_meta`` the ``hooks`` changed.

    An envelope key a hook set is dropped: on the handshake era it would make a
    dual-era server take the request for a 2026-07-28 one.
    """
    out = dict(params) if params else {}
    given = out.get("_meta")
    meta = dict(given) if isinstance(given, dict) else {}
    for hook in hooks:
        hook(method, meta)
    for key in _ENVELOPE_KEYS:
        if key in meta and not (isinstance(given, dict) and key in given):
            del meta[key]
    if meta:
        out["_meta"] = meta
    else:
        out.pop("_meta", None)
    return out
