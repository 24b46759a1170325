"""Server-to-client traffic: requests the server makes and notifications it sends.

Requests (2025-11-25 client/*): ``sampling/createMessage``, ``elicitation/create``
and ``roots/list`` go to the handlers the application registered, ``ping`` is
answered here. Each runs in its own task, so a handler waiting on a user never
blocks the reader, and ``notifications/cancelled`` from the server cancels it
(utilities/cancellation: no response is sent for a cancelled request).

A server cannot make the client work without bound: at most ``max_server_requests``
of its requests are handled (and answered) at once. Beyond that a request is
refused with :data:`TOO_MANY_REQUESTS` (again at most that many refusals in
flight, since over HTTP each answer is a POST of its own), and beyond that it is
dropped unanswered. Reading goes on all along, so the answers to the client's
own calls, which share the server's streams, still arrive, and a flood costs a
bounded number of tasks, POSTs and buffered answers. A request whose id names one
still being handled is refused too (basic § requests: ids are unique among the
sender's unanswered requests), the first keeping the id; the table of requests
being handled follows the protocol's rules (``protocol.correlation``: admit,
finish, cancelled), as on the server.

Notifications: progress goes to the callback of the call that asked for it,
``notifications/message`` to Python logging (prefixed with the server's name)
and/or a callback, resource updates and list changes to their callbacks.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import orjson

from ..errors import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ConfigurationError,
    MCPError,
)
from ..protocol import jsonrpc
from ..protocol.correlation import Admission, admit, cancelled, finish, refusal
from ..protocol.error_answers import to_jsonrpc_error
from .elicitation import normalize_elicit_result

if TYPE_CHECKING:
    from .session import ClientSession

__all__ = [
    "DEFAULT_LOG_LEVEL",
    "MAX_SERVER_REQUESTS",
    "TOO_MANY_REQUESTS",
    "ElicitationHandler",
    "ListChangedCallback",
    "LogCallback",
    "ProgressCallback",
    "ResourceUpdatedCallback",
    "RootsSpec",
    "SamplingHandler",
    "ServerHandlers",
    "check_max_server_requests",
]

log = logging.getLogger("mcpkit.client")
server_log = logging.getLogger("mcpkit.client.server_log")

MaybeAwaitable: TypeAlias = Awaitable[Any] | Any
SamplingHandler: TypeAlias = Callable[[dict[str, Any]], MaybeAwaitable]
"""``handler(params) -> CreateMessageResult dict`` (sync or async)."""
ElicitationHandler: TypeAlias = Callable[[dict[str, Any]], MaybeAwaitable]
"""``handler(params) -> {"action": ..., "content": {...}}`` (sync or async)."""
RootsSpec: TypeAlias = Sequence[str | Mapping[str, Any]] | Callable[[], MaybeAwaitable]
"""Roots as URIs or ``{"uri", "name"}`` dicts, or a function returning them."""
ProgressCallback: TypeAlias = Callable[[float, float | None, str | None], MaybeAwaitable]
"""``callback(progress, total, message)`` for one call."""
LogCallback: TypeAlias = Callable[[dict[str, Any]], MaybeAwaitable]
"""``callback(params)`` for each ``notifications/message``."""
ResourceUpdatedCallback: TypeAlias = Callable[[str], MaybeAwaitable]
ListChangedCallback: TypeAlias = Callable[[str], MaybeAwaitable]
"""``callback(kind)`` with kind ``"tools"``, ``"resources"``, ``"prompts"``."""

# The least severe server log level a client that shows server logs asks for where it must
# ask (2026-07-28: per request); what mcpkit servers send by default in the handshake era.
DEFAULT_LOG_LEVEL: Final = "info"
# notifications/message levels (RFC 5424 severities) → Python logging levels.
_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}

# Server requests handled at once by default; elicitations waiting on a user count too.
MAX_SERVER_REQUESTS: Final = 32
# The error refusing a request beyond the limit: mcpkit's own code, outside JSON-RPC's
# reserved -32768 .. -32000 (2026-07-28 basic § error codes); 429 is HTTP's.
TOO_MANY_REQUESTS: Final = -31429
_WARN_EVERY: Final = 60.0  # seconds between two warnings about a flood


def check_max_server_requests(value: Any, label: str = "max_server_requests") -> int:
    """``value`` if it is a valid ``max_server_requests``; else ``ConfigurationError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{label} must be a positive integer, not {value!r}")
    return value


def _reply_to(rid: Any, **member: Any) -> dict[str, Any]:
    """An answer to a server request. The id stays the exact value the server sent, also
    beyond 64 bits (as traces see it); the transports write such an id as its digits
    (``jsonrpc.dumps``)."""
    return {"jsonrpc": jsonrpc.JSONRPC, "id": rid, **member}


_LIST_CHANGED: Final = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}
# What a 2026-07-28 server sends only on a subscriptions/listen stream.
_SUBSCRIBED: Final = frozenset({*_LIST_CHANGED, "notifications/resources/updated"})


class ServerHandlers:
    """Handles what the server sends that is not an answer to our requests."""

    def __init__(
        self,
        session: ClientSession,
        *,
        sampling_handler: SamplingHandler | None,
        elicitation_handler: ElicitationHandler | None,
        roots: RootsSpec | None,
        server_logs: bool,
        log_handler: LogCallback | None,
        on_resource_updated: ResourceUpdatedCallback | None,
        on_list_changed: ListChangedCallback | None,
        max_server_requests: int = MAX_SERVER_REQUESTS,
    ) -> None:
        self.session = session
        self.max_server_requests = max_server_requests
        # The server's requests being handled: id -> task, at most max_server_requests,
        # changed only with the functions of protocol/correlation.py.
        self.serving: dict[Any, asyncio.Task[None]] = {}
        self.sampling_handler = sampling_handler
        self.elicitation_handler = elicitation_handler
        self.roots = roots
        self.server_logs = server_logs
        self.log_handler = log_handler
        self.resource_updated: list[ResourceUpdatedCallback] = (
            [on_resource_updated] if on_resource_updated else []
        )
        self.list_changed: list[ListChangedCallback] = [on_list_changed] if on_list_changed else []
        self.notification_callbacks: dict[str, list[Callable[[dict[str, Any]], Any]]] = {}
        self._refusing = 0  # refusals being sent
        self._warned_at = -math.inf  # when the last flood warning was logged
        self._tasks: set[asyncio.Task[Any]] = set()

    def capabilities(self, elicitation_modes: tuple[str, ...]) -> dict[str, Any]:
        """Client capabilities for ``initialize``: declare only what has a handler."""
        caps: dict[str, Any] = {}
        if self.roots is not None:
            caps["roots"] = {"listChanged": True}
        if self.sampling_handler is not None:
            caps["sampling"] = {}
        if self.elicitation_handler is not None:
            # 2025-11-25 client/elicitation § capabilities: modes as keys ({} means form only).
            caps["elicitation"] = {mode: {} for mode in elicitation_modes}
        return caps

    def on_notification(self, method: str, callback: Callable[[dict[str, Any]], Any]) -> None:
        """Call ``callback(params)`` for every ``method`` notification."""
        self.notification_callbacks.setdefault(method, []).append(callback)

    # -- tasks --------------------------------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run a user callback; a coroutine result runs as a task. Errors are logged."""
        try:
            result = fn(*args)
        except Exception:
            log.exception("callback %r failed", fn)
            return
        if inspect.isawaitable(result):
            self.spawn(_guard(result, fn))

    def close(self) -> None:
        observe = self.session.observe
        if observe is not None:  # the session ended (telemetry: its duration)
            observe(self.session, "closed", "")
        for task in list(self.serving.values()):
            task.cancel()
        self.serving.clear()
        for task in list(self._tasks):
            task.cancel()

    # -- server requests ----------------------------------------------------------------------
    def serve(self, msg: dict[str, Any]) -> None:
        """Handle one server request (``msg`` is one, as ``jsonrpc.classify`` says) in a
        task of its own, or refuse it."""
        rid = msg["id"]
        serving = self.serving
        refused = refusal(serving, rid, self.max_server_requests)
        if refused == Admission.FULL:
            self._flood(msg)
        elif refused is not None:
            self._refuse(
                msg,
                INVALID_REQUEST,
                "Invalid request: a request with this id is still being handled; request "
                "ids must be unique among unanswered requests",
            )
        else:
            task = asyncio.get_running_loop().create_task(self._answer(msg))
            admit(serving, rid, task, None)  # refusal() said yes
            task.add_done_callback(lambda t: finish(serving, rid, t))

    def _flood(self, msg: dict[str, Any]) -> None:
        """Too many server requests at once: answer with an error, or drop it unanswered."""
        limit = self.max_server_requests
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY:  # an endless flood must not flood the log
            self._warned_at = now
            log.warning(
                "MCP server %r sent more than %d requests at once; refusing the excess with "
                "error %d (and ignoring it while %d refusals are being sent)",
                self.session.name,
                limit,
                TOO_MANY_REQUESTS,
                limit,
            )
        self._refuse(
            msg,
            TOO_MANY_REQUESTS,
            f"Too many concurrent requests: the client handles at most {limit} at once",
        )

    def _refuse(self, msg: dict[str, Any], code: int, message: str) -> None:
        """Answer ``msg`` with an error; at most ``max_server_requests`` such answers are
        sent at once (over HTTP each is a POST), beyond that it is dropped unanswered."""
        if self._refusing >= self.max_server_requests:
            log.debug("ignored %s from %r: too many at once", msg["method"], self.session.name)
            return
        self._refusing += 1
        reply = _reply_to(msg["id"], error={"code": code, "message": message})
        task = self.spawn(self._reply(reply, msg["method"]))
        task.add_done_callback(self._refused)

    def _refused(self, _task: asyncio.Task[None]) -> None:
        self._refusing -= 1

    async def _reply(self, reply: dict[str, Any], method: str) -> None:
        try:
            await self.session.send_message(reply)
        except Exception as exc:
            log.debug("could not answer %s from %r: %s", method, self.session.name, exc)

    async def _answer(self, msg: dict[str, Any]) -> None:
        rid = msg["id"]
        method = msg["method"]
        params = msg.get("params")
        if not isinstance(params, dict):
            params = {}
        observe = self.session.observe  # telemetry (protocol/observe.py): a span of its own
        observer = observe(self.session, "served", method) if observe is not None else None
        if observer is not None:
            observer.opened(msg)
        try:
            result = await self._result(method, params)
            reply = _reply_to(rid, result=result)
        except Exception as exc:
            if not isinstance(exc, MCPError):
                # Logged here; the server only learns that it failed (errors.py: no leaks).
                log.exception("handler for %s from %r failed: %s", method, self.session.name, exc)
            reply = _reply_to(rid, error=to_jsonrpc_error(exc))
            if observer is not None:
                observer.finished(None, exc)
        except BaseException as exc:  # cancelled: the server withdrew it, or we closed
            if observer is not None:
                observer.finished(None, exc)
            raise
        else:
            if observer is not None:
                observer.finished(result, None)
        await self._reply(reply, method)

    async def fulfil(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer one server request with the registered handler (also MRTR input requests)."""
        return await self._result(method, params)

    async def _result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "ping":
            return {}
        if method == "sampling/createMessage" and self.sampling_handler is not None:
            return _as_dict(await _maybe_await(self.sampling_handler(params)), method)
        if method == "elicitation/create" and self.elicitation_handler is not None:
            answer = await _maybe_await(self.elicitation_handler(params))
            return normalize_elicit_result(params, answer)
        if method == "roots/list" and self.roots is not None:
            return {"roots": await self.list_roots()}
        # The client did not declare the capability (or the method is unknown).
        raise MCPError(f"Method not found: {method}", code=METHOD_NOT_FOUND)

    async def list_roots(self) -> list[dict[str, Any]]:
        roots = self.roots
        if callable(roots):
            roots = await _maybe_await(roots())
        out: list[dict[str, Any]] = []
        for root in roots or ():
            if isinstance(root, str):
                out.append({"uri": root})
            elif isinstance(root, Mapping):
                out.append(dict(root))
            else:  # objects with .uri/.name (mcpkit.Root)
                item = {"uri": root.uri}
                if getattr(root, "name", None):
                    item["name"] = root.name
                out.append(item)
        return out

    # -- notifications ------------------------------------------------------------------------
    def notification(self, msg: dict[str, Any]) -> None:
        observe = self.session.observe  # telemetry: a span, parented by its _meta
        observer = observe(self.session, "served", msg["method"]) if observe is not None else None
        if observer is None:
            self._notification(msg)
            return
        observer.opened(msg)
        try:
            self._notification(msg)
        finally:
            observer.finished(None, None)

    def _notification(self, msg: dict[str, Any]) -> None:
        method = msg["method"]
        params = msg.get("params")
        if not isinstance(params, dict):
            params = {}
        if method in _SUBSCRIBED and self.session.listener.stale(params):
            # From a subscriptions/listen request that a newer one replaced (2026-07-28
            # subscriptions § receiving notifications): the live one delivers it too.
            log.debug("dropped %s of a replaced subscription from %r", method, self.session.name)
            return
        if method == "notifications/progress":
            entry = self.session.outgoing.progress(params)
            if entry is not None:
                self._call(
                    entry.on_progress,
                    params.get("progress"),
                    params.get("total"),
                    params.get("message"),
                )
        elif method == "notifications/message":
            self._log(params)
        elif method == "notifications/cancelled":
            task = cancelled(self.serving, params)
            if task is not None:
                task.cancel()
        elif method == "notifications/resources/updated":
            uri = params.get("uri")
            for on_updated in self.resource_updated:
                self._call(on_updated, uri)
        elif method in _LIST_CHANGED:
            kind = _LIST_CHANGED[method]
            for on_changed in self.list_changed:
                self._call(on_changed, kind)
        for cb in self.notification_callbacks.get(method, ()):
            self._call(cb, params)

    def _log(self, params: dict[str, Any]) -> None:
        if self.log_handler is not None:
            self._call(self.log_handler, params)
        if not self.server_logs:
            return
        level = _LEVELS.get(params.get("level"), logging.INFO)  # type: ignore[arg-type]
        if not server_log.isEnabledFor(level):
            return
        data = params.get("data")
        text = data if isinstance(data, str) else orjson.dumps(data).decode()
        source = params.get("logger")
        if isinstance(source, str) and source:
            server_log.log(level, "[%s] %s: %s", self.session.name, source, text)
        else:
            server_log.log(level, "[%s] %s", self.session.name, text)


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


async def _guard(awaitable: Awaitable[Any], fn: Callable[..., Any]) -> None:
    try:
        await awaitable
    except Exception:
        log.exception("callback %r failed", fn)


def _as_dict(result: Any, method: str) -> dict[str, Any]:
    if not isinstance(result, Mapping):
        raise TypeError(f"the {method} handler must return a dict, not {type(result).__name__}")
    return dict(result)
