"""Serving one request of the stateless era (2026-07-28) with the same handlers.

A stateless request brings its own envelope (see :mod:`mcpkit.protocol.stateless`);
the session it runs in lives for that request only. This module wraps the
ordinary dispatch: it refuses the methods the revision removed, reads the
envelope into the session (capabilities, client info, the log level the
request asked for), runs the handler, and completes the result with what the
revision requires: ``resultType`` on every result, the server's identity in
``_meta`` and, on list and read results, the caching hints ``ttlMs`` and
``cacheScope`` (SEP-2549). It also owns the two methods only this era has:
``server/discover`` and ``subscriptions/listen``.

Caching hints are resolved from the most specific setting down: the read
resource's or template's own :class:`CacheHint` (``resources/read`` only),
then the per-method hint of ``MCPServer(cache={...})``, then the server-wide
``cache_ttl_ms``/``cache_scope``. A hint field left ``None`` falls through to
the next level, so ``CacheHint(ttl_ms=60_000)`` keeps the server's scope.
Handshake-era results never carry them (the fields do not exist there).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import orjson

from ..errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    ConfigurationError,
    InvalidParams,
    MCPError,
    MethodNotFound,
)
from ..protocol import jsonrpc
from ..protocol.jsonrpc import json_type
from ..protocol.stateless import (
    CACHEABLE_METHODS,
    REMOVED_METHODS,
    SERVER_INFO,
    SUBSCRIPTION_ID,
    Envelope,
    Refusal,
    read_envelope,
)
from ..protocol.versions import REVISIONS
from .context import LOG_LEVELS
from .middleware import serve_round
from .mrtr import INPUT_METHODS, NOT_PAUSABLE, Restart, runs_inline

if TYPE_CHECKING:
    from .server import MCPServer
    from .session import Request, Send, ServerSession

log = logging.getLogger("mcpkit.server")

__all__ = [
    "DEFAULT_LISTEN_QUEUE_BYTES",
    "CacheHint",
    "CacheScope",
    "discover",
    "end_subscriptions",
    "listen",
    "serve_stateless",
]

#: Bytes of notifications that may wait for one subscriptions/listen stream.
DEFAULT_LISTEN_QUEUE_BYTES: Final = 1024 * 1024

CacheScope = Literal["public", "private"]
_SCOPES: Final = ("public", "private")  # 2026-07-28 server/utilities/caching § cache scope


def check_ttl_ms(option: str, value: object) -> None:
    """Refuse a ``ttlMs`` servers may not send: an integer >= 0 (caching § TTL field)."""
    if type(value) is not int or value < 0:
        raise ConfigurationError(f"{option} must be an integer >= 0 (milliseconds), got {value!r}")


def check_cache_scope(option: str, value: object) -> None:
    if value not in _SCOPES:
        raise ConfigurationError(f"{option} must be 'public' or 'private', got {value!r}")


@dataclass(frozen=True, slots=True)
class CacheHint:
    """``ttlMs`` and ``cacheScope`` for a list method, a resource or a resource template.

    A field left ``None`` inherits from the next, less specific level (see the
    module docstring). ``scope="public"`` lets a shared cache serve the result
    to every caller, so keep it for results that are the same for everyone.
    """

    ttl_ms: int | None = None
    scope: CacheScope | None = None

    def __post_init__(self) -> None:
        if self.ttl_ms is not None:
            check_ttl_ms("CacheHint.ttl_ms", self.ttl_ms)
        if self.scope is not None:
            check_cache_scope("CacheHint.scope", self.scope)

    def fields(self) -> dict[str, Any]:
        """The hint's set fields as result members (``ttlMs``, ``cacheScope``)."""
        out: dict[str, Any] = {}
        if self.ttl_ms is not None:
            out["ttlMs"] = self.ttl_ms
        if self.scope is not None:
            out["cacheScope"] = self.scope
        return out


def check_cache_hint(where: str, value: object) -> None:
    """Refuse a ``cache=`` that is not a :class:`CacheHint` (None means none)."""
    if value is not None and not isinstance(value, CacheHint):
        raise ConfigurationError(f"{where}: cache must be a CacheHint, got {value!r}")


def check_cache_option(cache: Mapping[str, CacheHint] | None) -> dict[str, CacheHint]:
    """``MCPServer(cache=...)``: per-method hints, keyed by a cacheable method name."""
    if cache is None:
        return {}
    if not isinstance(cache, Mapping):
        raise ConfigurationError("cache must be a mapping of method name to CacheHint")
    out: dict[str, CacheHint] = {}
    for method, hint in cache.items():
        if method not in CACHEABLE_METHODS:
            raise ConfigurationError(
                f"cache[{method!r}]: not a cacheable method; use one of {sorted(CACHEABLE_METHODS)}"
            )
        if not isinstance(hint, CacheHint):
            raise ConfigurationError(f"cache[{method!r}]: expected a CacheHint, got {hint!r}")
        out[method] = hint
    return out


# Above every level: a request without io.modelcontextprotocol/logLevel gets no
# notifications/message at all (changelog 2026-07-28 §5).
_SILENT: Final = max(LOG_LEVELS.values()) + 1

# subscriptions/listen filter key -> the notification it lets through (SubscriptionFilter).
_FILTERS: Final = {
    "toolsListChanged": "notifications/tools/list_changed",
    "promptsListChanged": "notifications/prompts/list_changed",
    "resourcesListChanged": "notifications/resources/list_changed",
}

Run = Callable[[dict[str, Any], "Send", Any], Awaitable[dict[str, Any] | None]]


async def serve_stateless(
    session: ServerSession,
    msg: dict[str, Any],
    send: Send,
    auth_info: Any,
    run: Run,
    envelope: Envelope | Refusal | None = None,
) -> dict[str, Any] | None:
    """Admit ``msg`` by its envelope, ``run`` it, and complete the response for the revision."""
    rid = msg["id"]
    method = msg["method"]
    if method in REMOVED_METHODS:
        return jsonrpc.error_response(
            rid, METHOD_NOT_FOUND, f"Method not found: {method} (removed in 2026-07-28)"
        )
    if envelope is None:
        envelope = read_envelope(msg.get("params"))
    if isinstance(envelope, Refusal):
        return {"jsonrpc": "2.0", "id": rid, "error": envelope.error()}
    session.revision = envelope.revision
    session.client_capabilities = envelope.capabilities
    session.client_info = envelope.client_info
    session.log_level = LOG_LEVELS[envelope.log_level] if envelope.log_level else _SILENT
    chain = session.server._chain
    if chain is not None and method in session.server._methods:
        # Middleware wraps the whole round: a retry with inputResponses passes through
        # it again, and sees the input_required result of a round that asks for more.
        resp = await serve_round(
            chain,
            session,
            msg,
            auth_info,
            functools.partial(_serve_round, session, msg, send, auth_info, run),
            functools.partial(complete_result, session, method),
        )
        if resp is None or "error" not in resp:
            return resp
    else:
        resp = await _serve_round(session, msg, send, auth_info, run)
        if resp is None:
            return None
    error = resp.get("error")
    if error is not None:
        if error.get("code") == RESOURCE_NOT_FOUND:  # SEP-2164: -32602 from 2026-07-28 on
            resp["error"] = {**error, "code": session.revision.resource_not_found_code}
        return resp
    resp["result"] = complete_result(session, method, resp["result"])
    return resp


async def _serve_round(
    session: ServerSession, msg: dict[str, Any], send: Send, auth_info: Any, run: Run
) -> dict[str, Any] | None:
    """``run`` the request, in an input round when its method may ask for input (MRTR)."""
    rid = msg["id"]
    if msg["method"] not in INPUT_METHODS:
        return await run(msg, send, auth_info)
    inline = runs_inline(session, msg)
    if inline:  # in this task (see runs_inline), unless the tool asks for input
        session.inputs = NOT_PAUSABLE
        try:
            return await run(msg, send, auth_info)
        except Restart:
            log.debug("the tool asked for input: run again as a pausable call")
        finally:
            session.inputs = None
    try:
        return await session.server.input_rounds.serve(session, msg, send, auth_info, run)
    except MCPError as exc:  # a bad requestState: the handler never sees it
        return {"jsonrpc": "2.0", "id": rid, "error": exc.to_error()}
    finally:
        # A handler paused for input is still registered under this id: the
        # answer (input_required) frees the id all the same.
        session.answered(rid)


def complete_result(session: ServerSession, method: str, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with ``resultType``, ``_meta`` server info and, if cacheable, caching hints."""
    server = session.server
    out = dict(result)  # the handler's dict may be the caller's own: never changed in place
    if "resultType" not in out:
        out["resultType"] = "complete"
    meta = out.get("_meta")
    info = server.implementation_info(session.revision)
    out["_meta"] = {**meta, SERVER_INFO: info} if isinstance(meta, dict) else {SERVER_INFO: info}
    if method in CACHEABLE_METHODS and out["resultType"] == "complete":
        # A handler may have set the hint of the resource it read; fill what it left.
        hint = server.cache_hints.get(method)
        if hint is not None:
            for key, value in hint.fields().items():
                out.setdefault(key, value)
        out.setdefault("ttlMs", server.cache_ttl_ms)
        out.setdefault("cacheScope", server.cache_scope)
    return out


async def discover(session: ServerSession, req: Request) -> dict[str, Any]:
    """``server/discover``: versions, capabilities and identity (2026-07-28 server/discover)."""
    if session.revision.era != "stateless":
        raise MethodNotFound("Method not found: server/discover (use initialize)")
    server = session.server
    result: dict[str, Any] = {
        # Both eras are served at the one endpoint; the newest first.
        "supportedVersions": list(reversed(REVISIONS)),
        "capabilities": server.capabilities(session.revision),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


async def listen(session: ServerSession, req: Request) -> dict[str, Any]:
    """``subscriptions/listen``: acknowledge, then forward the opted-in notifications.

    The request stays open until the client goes away (the transport cancels
    it) or the server closes the session. Every notification on the
    stream carries the subscription id in ``_meta`` (2026-07-28
    basic/patterns/subscriptions).
    """
    if session.revision.era != "stateless":
        raise MethodNotFound("Method not found: subscriptions/listen")
    asked = _subscription_filter(req.params.get("notifications"))
    server = session.server
    caps = server.capabilities(session.revision)
    offered = {
        "toolsListChanged": "tools" in caps,
        "promptsListChanged": "prompts" in caps,
        "resourcesListChanged": "resources" in caps,
    }
    granted: dict[str, Any] = {k: True for k, ok in offered.items() if ok and asked.get(k) is True}
    uris = asked.get("resourceSubscriptions")
    if "resources" in caps and isinstance(uris, list):
        granted["resourceSubscriptions"] = [u for u in uris if isinstance(u, str)]
    wanted = {_FILTERS[k] for k in granted if k in _FILTERS}
    session.subscriptions = set(granted.get("resourceSubscriptions", ()))
    if session.subscriptions:
        wanted.add("notifications/resources/updated")
    tag = {SUBSCRIPTION_ID: jsonrpc.wire_id(req.id)}
    send = req.send_raw
    task = asyncio.current_task()
    assert task is not None
    # Notifications wait in the listener's own bounded queue, written by this request's
    # task: a listener that does not read never holds up the notifier, nor other
    # listeners (a broadcast awaits every session). One that lets more than
    # listen_queue_bytes pile up is dropped.
    outbox = _Outbox(server.listen_queue_bytes)

    async def forward(message: dict[str, Any]) -> None:
        if message.get("method") not in wanted or outbox.closed:
            return
        params = dict(message.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), **tag}
        if not outbox.put({**message, "params": params}):
            log.warning(
                "dropped a subscriptions/listen stream: its client let more than %d bytes of "
                "notifications pile up unread",
                outbox.limit,
            )
            outbox.close(dropped=True)
            task.cancel()  # it may be stuck writing to the client: see below

    session.standalone = forward
    server._remember(session)
    listening = _listening.setdefault(server, set())
    listening.add(outbox)
    try:
        # Changes made while the acknowledgment is being written wait for it in the queue:
        # a client may rely on every change after the acknowledgment reaching it
        # (subscriptions § ack).
        await send(
            jsonrpc.notification(
                "notifications/subscriptions/acknowledged",
                {"notifications": granted, "_meta": tag},
            )
        )
        # Until the client closes the stream (the transport cancels the request) or the
        # session is closed, which end the stream without a result, or until the server
        # ends it (end_subscriptions).
        while (message := await outbox.get()) is not None:
            await send(message)
    except asyncio.CancelledError:
        if not outbox.dropped or task.uncancel() > 0:
            raise
        raise MCPError(
            "Subscription dropped: the client did not read its subscriptions/listen stream "
            f"and more than {outbox.limit} bytes of notifications were waiting; listen again",
            code=INTERNAL_ERROR,
        ) from None
    finally:
        listening.discard(outbox)
        server._forget(session)
        outbox.close()
    # The server's own end is graceful: a result tagged with the subscription id
    # (basic/patterns/subscriptions § graceful closure).
    return {"_meta": dict(tag)}


class _Outbox:
    """The notifications waiting for one ``subscriptions/listen`` stream, bounded in bytes."""

    __slots__ = ("_items", "_size", "_waiter", "closed", "dropped", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: deque[tuple[dict[str, Any], int]] = deque()
        self._size = 0
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False  # no more messages: get() returns None once the queue is empty
        self.dropped = False

    def put(self, message: dict[str, Any]) -> bool:
        """Queue ``message``; False (nothing queued) when that would pass the limit."""
        size = len(orjson.dumps(message))
        if self._size + size > self.limit:
            return False
        self._items.append((message, size))
        self._size += size
        self._wake()
        return True

    async def get(self) -> dict[str, Any] | None:
        while not self._items:
            if self.closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        message, size = self._items.popleft()
        self._size -= size
        return message

    def close(self, *, dropped: bool = False) -> None:
        self.closed = True
        if dropped:
            self.dropped = True
            self._items.clear()
            self._size = 0
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


def _subscription_filter(asked: Any) -> dict[str, Any]:
    """``params.notifications`` checked against ``SubscriptionFilter`` (2026-07-28 schema).

    The member is required by the schema; a missing one is read as "nothing", a
    wrong-typed one is the caller's error (-32602), never a silently empty grant.
    """
    if asked is None:
        return {}
    if type(asked) is not dict:
        raise InvalidParams(
            f"subscriptions/listen: 'notifications' must be an object, got {json_type(asked)}"
        )
    for key in _FILTERS:
        flag = asked.get(key)
        if flag is not None and type(flag) is not bool:
            raise InvalidParams(
                f"subscriptions/listen: 'notifications.{key}' must be a boolean, "
                f"got {json_type(flag)}"
            )
    uris = asked.get("resourceSubscriptions")
    if uris is not None and (type(uris) is not list or any(type(u) is not str for u in uris)):
        raise InvalidParams(
            "subscriptions/listen: 'notifications.resourceSubscriptions' must be an array of "
            "URI strings"
        )
    return asked


# The open subscriptions/listen requests of each server, ended by end_subscriptions.
_listening: weakref.WeakKeyDictionary[MCPServer, set[_Outbox]] = weakref.WeakKeyDictionary()


def end_subscriptions(server: MCPServer) -> None:
    """Answer every open ``subscriptions/listen`` of ``server``, so their streams end (a
    shutdown: long-lived streams keep an HTTP server waiting). Call on the server's loop."""
    for outbox in list(_listening.get(server, ())):
        outbox.close()
