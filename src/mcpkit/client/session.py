"""``ClientSession``: one MCP session over any client transport.

The session correlates requests and responses by id (one future per call, no
queue), enforces a timeout on every wait, turns cancellation of the awaiting
task into ``notifications/cancelled``, runs the ``initialize`` handshake, and
answers the server's own requests (sampling, elicitation, roots, ping).
Messages stay plain dicts from the transport's ``orjson.loads`` to the caller
(ARCHITECTURE.md, principle 3).

Server-to-client traffic is handled by :mod:`mcpkit.client.handlers`; the
transport interface is in :mod:`mcpkit.client.transports.base`.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Final

from .._version import version as mcpkit_version
from ..errors import (
    INTERNAL_ERROR,
    ConnectionClosed,
    MCPError,
    MCPKitError,
    PeerTimeout,
    RemoteError,
)
from ..protocol import jsonrpc
from ..protocol.correlation import Outgoing, Reply
from ..protocol.observe import Observer, observed
from ..protocol.versions import REVISIONS, Revision
from .cache import ResultCache
from .deadlines import Deadlines, timeout_problem, valid_timeout
from .handlers import (
    DEFAULT_LOG_LEVEL,
    ProgressCallback,
    ServerHandlers,
)
from .options import DEFAULT_TIMEOUT, ClientOptions, Trace
from .request_meta import declared_extensions, observe_hook, with_request_meta
from .results import result_handlers_of
from .session_api import SessionAPI
from .stateless import discover
from .stateless.listen import Listener
from .transports.base import ClientTransport, SessionExpired

__all__ = ["DEFAULT_TIMEOUT", "ClientOptions", "ClientSession", "Trace"]

log = logging.getLogger("mcpkit.client")

# How long a timed-out call waits for its notifications/cancelled to go out before raising
# PeerTimeout (the sending goes on in the background, for at most 5 s).
_CANCEL_GRACE: Final = 0.1


class ClientSession(SessionAPI):
    """A session with one MCP server over ``transport``.

    >>> async with ClientSession(transport) as session:   # doctest: +SKIP
    ...     tools = await session.list_tools()

    ``options`` (a :class:`~mcpkit.client.options.ClientOptions`, the defaults when
    omitted) says how; ``Client`` builds it from its keyword arguments.
    Every request waits at most ``timeout`` seconds (overridable per call); a
    timeout raises :class:`~mcpkit.errors.PeerTimeout` and tells the server with
    ``notifications/cancelled``. Handlers for server requests and callbacks for
    notifications are keyword options; see :class:`~mcpkit.client.handlers.ServerHandlers`.
    At most ``max_server_requests`` of the server's own requests are handled at once;
    the excess is refused (see :mod:`mcpkit.client.handlers`).
    """

    def __init__(self, transport: ClientTransport, options: ClientOptions | None = None) -> None:
        if options is None:
            options = ClientOptions()
        self.options = options
        self.transport = transport
        self.timeout = options.timeout
        # No protocol_version: the newest revision, the era chosen for the handlers too
        # (discover.prefers_handshake); a pinned one is kept whatever the server offers.
        self.auto_era = options.protocol_version is None
        self.requested_version = options.protocol_version or discover.first_choice(
            options.supported_versions
        )
        self.supported_versions = options.supported_versions
        info = options.client_info or {"name": "mcpkit", "version": mcpkit_version()}
        self.client_info = dict(info)  # a copy: the caller's dict is not ours to change
        self.initialize_result: dict[str, Any] | None = None
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self.revision: Revision | None = None
        # The stateless revision in use (2026-07-28): every request carries it in `_meta`.
        self.stateless_version: str | None = None
        # The stateless era's per-request log level. A server sends no logs unless a request
        # asks (2026-07-28 server/utilities/logging), so a client that shows them asks for
        # what a handshake-era server sends by default.
        self.log_level: str | None = (
            DEFAULT_LOG_LEVEL if options.server_logs or options.log_handler is not None else None
        )
        self._label = options.name
        self._trace = options.trace
        # Our requests: ids, the pending table, cancellation and progress rules (sans-IO);
        # each entry's waiter is the future its caller awaits.
        self.outgoing = Outgoing()
        self._closed: BaseException | None = None
        self._started = False
        self._generation = 0  # bumped by every successful handshake (HTTP re-initialization)
        self._reinit_lock: asyncio.Lock | None = None
        self._deadlines = Deadlines()
        self.handlers = ServerHandlers(
            self,
            sampling_handler=options.sampling_handler,
            elicitation_handler=options.elicitation_handler,
            roots=options.roots,
            server_logs=options.server_logs,
            log_handler=options.log_handler,
            on_resource_updated=options.on_resource_updated,
            on_list_changed=options.on_list_changed,
            max_server_requests=options.max_server_requests,
        )
        # Cacheable results (2026-07-28 caching): a cache of our own unless one is shared.
        cache = options.cache
        if isinstance(cache, ResultCache):
            self.cache: ResultCache | None = cache
        else:
            self.cache = ResultCache() if cache else None
        origin = getattr(transport, "url", None)
        self._origin = origin if isinstance(origin, str) else f"session-{id(self):x}"
        if self.cache is not None:
            results = self.cache
            self.handlers.list_changed.append(lambda kind: results.list_changed(self._origin, kind))
            self.handlers.resource_updated.append(
                lambda uri: results.resource_updated(self._origin, uri)
            )
        self.listener = Listener(self)  # the stateless era's subscriptions/listen
        self._elicitation_modes = options.elicitation_modes
        # The capabilities asked for, with the extensions that declare one (SEP-2133).
        self._declared = declared_extensions(options.extensions, options.capabilities or {})
        # The extensions' hooks on each outgoing request's `_meta` (trace context, opt-ins).
        self._meta_hooks = tuple(
            hook for ext in options.extensions if (hook := ext.request_meta) is not None
        )
        # Telemetry (an extension's observe hook, protocol/observe.py); None: nothing watches.
        self.observe = observe_hook(options.extensions)
        self._capabilities = self.handlers.capabilities(options.elicitation_modes)
        self._capabilities.update(self._declared)
        # resultType -> the extension handler that completes such results (client.results).
        self.result_handlers = result_handlers_of(options.extensions)

    @property
    def _target(self) -> ClientSession:  # SessionAPI's methods work on the session itself
        return self

    # -- identity -----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The server's name for messages: the one given, else ``serverInfo.name``."""
        if self._label:
            return self._label
        name = self.server_info.get("name")
        if isinstance(name, str) and name:
            return name
        label = getattr(self.transport, "label", None)
        return label if isinstance(label, str) and label else "MCP server"

    @property
    def protocol_version(self) -> str | None:
        """The negotiated revision's name (None before the handshake or the probe)."""
        if self.stateless_version is not None:
            return self.stateless_version
        return self.revision.name if self.revision is not None else None

    @property
    def capabilities(self) -> dict[str, Any]:
        """The client capabilities sent in ``initialize``."""
        return self._capabilities

    def declare_handlers(self) -> bool:
        """Declare the handlers installed since connecting; True if the server learns of them.

        In 2026-07-28 the capabilities ride in every request's ``_meta``, so the next
        request declares them; the handshake era declares them once, in ``initialize``
        (basic/lifecycle), so there only a new connection can (False).
        """
        if self.stateless_version is None:
            return False
        self._capabilities.update(self.handlers.capabilities(self._elicitation_modes))
        self._capabilities.update(self._declared)
        return True

    @property
    def closed(self) -> bool:
        return self._closed is not None

    @property
    def close_reason(self) -> BaseException | None:
        """Why the session ended (the server exited, the client closed it…); None while open."""
        return self._closed

    def on_notification(self, method: str, callback: Callable[[dict[str, Any]], Any]) -> None:
        """Also call ``callback(params)`` for every ``method`` notification from the server."""
        self.handlers.on_notification(method, callback)

    # -- lifecycle ----------------------------------------------------------------------------
    async def __aenter__(self) -> ClientSession:
        try:
            await self.start()
            await self.initialize()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Open the transport (``__aenter__`` does this and the handshake)."""
        if not self._started:
            self._started = True
            await self.transport.start(self)

    async def initialize(self, *, timeout: float | None = None) -> dict[str, Any]:
        """Agree on a revision; returns the ``initialize`` or ``server/discover`` result.

        When the requested version is a stateless one (2026-07-28) the server is probed
        with ``server/discover`` and a legacy server gets the handshake instead
        (:func:`mcpkit.client.stateless.discover.discover`). ``timeout`` (default: the session's)
        includes a stdio server's start-up.
        """
        if discover.is_stateless(self.requested_version):
            asked = self.requested_version
            grace = discover.PROBE_GRACE if getattr(self.transport, "races_probe", False) else None
            outcome = await discover.discover(self, timeout, grace=grace)
            if isinstance(outcome, asyncio.Future):
                return await self._race(outcome, asked, timeout)
            if outcome is not None:
                return await self._modern(outcome, timeout)
        return await self.handshake(timeout)

    async def _race(
        self, probe: asyncio.Future[dict[str, Any]], version: str, timeout: float | None
    ) -> dict[str, Any]:
        """A silent probe: ``initialize`` goes out too and decides.

        An accepted ``initialize`` selects the handshake era for the whole stdio process
        (2026-07-28 basic/versioning § dual-era servers), even when the probe's answer
        comes first, so the handshake wins whenever it is accepted; the probe's answer is
        used only when the handshake is refused (a modern-only server that is slow to start).
        """
        init = asyncio.ensure_future(self._initialize(timeout))
        try:
            await asyncio.wait({init})
            if init.exception() is not None:
                await asyncio.wait({probe})  # bounded by the probe's own timeout
                result = discover.probe_won(probe, version)
                if result is not None:
                    self.stateless_version = version
                    self.requested_version = version
                    return await self._modern(result, timeout)
            return await self._initialized(await init)
        finally:
            for task in (probe, init):
                if not task.done():
                    task.cancel()

    async def _modern(self, result: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        """A modern server answered the probe: use 2026-07-28, unless the handlers need the
        handshake era (:func:`mcpkit.client.stateless.discover.prefers_handshake`) and the server
        accepts ``initialize`` too (2026-07-28 basic/versioning § dual-era servers)."""
        if self.auto_era and discover.prefers_handshake(result, self._capabilities):
            answer = await discover.try_handshake(self, timeout)
            if answer is not None:
                return answer
            if self.stateless_version is None:  # a new process of a modern-only server
                outcome = await discover.discover(self, timeout)
                if not isinstance(outcome, dict):  # no grace: never a pending probe
                    raise MCPError(
                        f"MCP server {self.name!r} refused initialize, then server/discover",
                        code=INTERNAL_ERROR,
                    )
                result = outcome
        self._discovered(result)
        await self._listen(timeout)
        return result

    async def _listen(self, timeout: float | None) -> None:
        """Open ``subscriptions/listen``, awaiting its acknowledgment: no change is missed."""
        try:
            await self.listener.update(self.timeout if timeout is None else timeout)
        except MCPKitError as exc:  # late, or refused (a proxy's upstream down, say)
            log.warning("subscriptions/listen: %s; list changes may arrive late", exc)

    def _discovered(self, result: dict[str, Any]) -> None:
        self.initialize_result = result
        self.revision = REVISIONS.get(self.stateless_version or "")
        meta = result.get("_meta")
        info = meta.get(discover.SERVER_INFO_KEY) if isinstance(meta, dict) else None
        if not isinstance(info, dict):  # some servers put it at the top level
            info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        caps = result.get("capabilities")
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self._generation += 1

    async def handshake(self, timeout: float | None) -> dict[str, Any]:
        """The handshake (2025-11-25 basic/lifecycle § initialization)."""
        return await self._initialized(await self._initialize(timeout))

    async def _initialize(self, timeout: float | None) -> dict[str, Any]:
        params = {
            "protocolVersion": self.requested_version,
            "capabilities": self._capabilities,
            "clientInfo": self.client_info,
        }
        return await self.request("initialize", params, timeout=timeout, _retry=False)

    async def _initialized(self, result: dict[str, Any]) -> dict[str, Any]:
        """Accept the ``initialize`` result (or refuse its version) and say ``initialized``."""
        version = result.get("protocolVersion")
        # A stateless revision cannot be negotiated by a handshake (it has none).
        if version not in self.supported_versions or discover.is_stateless(version):
            # Lifecycle § version negotiation: a client that does not support the
            # server's version SHOULD disconnect.
            exc = MCPError(
                f"{self._describe(result)} answered initialize with protocol version {version!r}, "
                f"which this client does not support (it asked for {self.requested_version!r}; "
                f"supported: {', '.join(self.supported_versions)})",
                code=INTERNAL_ERROR,
                data={"requested": self.requested_version, "received": version},
            )
            self._fail_all(ConnectionClosed(str(exc)))
            await self.transport.aclose()
            raise exc
        self.initialize_result = result
        self.revision = REVISIONS[version]
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        caps = result.get("capabilities")
        self.server_capabilities = caps if isinstance(caps, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        await self.notify("notifications/initialized", _retry=False)
        self._generation += 1
        return result

    def _describe(self, result: Mapping[str, Any]) -> str:
        info = result.get("serverInfo")
        if not self._label and isinstance(info, dict) and isinstance(info.get("name"), str):
            return f"MCP server {info['name']!r}"
        return f"MCP server {self.name!r}"

    async def aclose(self) -> None:
        """Fail pending calls, stop serving server requests and close the transport."""
        if self._closed is None:
            self._closed = ConnectionClosed(f"the session with {self.name!r} was closed")
        self._fail_all(self._closed)
        self.handlers.close()
        self._deadlines.close()
        await self.transport.aclose()

    def _fail_all(self, exc: BaseException) -> None:
        for entry in self.outgoing.drain():
            fut = entry.waiter
            if not fut.done():
                fut.set_exception(_copy(exc))

    # -- requests -----------------------------------------------------------------------------
    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        _retry: bool = True,
    ) -> dict[str, Any]:
        """Send a request and return its result; raises ``RemoteError`` for an error answer."""
        observer = self.observe(self, "request", method) if self.observe is not None else None
        sending = self._request(method, params, timeout, progress, _retry, observer)
        return await (sending if observer is None else observed(observer, sending))

    async def _request(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        progress: ProgressCallback | None,
        _retry: bool,
        observer: Observer | None,
    ) -> dict[str, Any]:
        if self._closed is not None:
            raise _copy(self._closed)
        if timeout is None:
            wait = self.timeout
        elif valid_timeout(timeout, infinite=True):
            wait = timeout
        else:
            raise ValueError(timeout_problem(f"the timeout of {method}", timeout, infinite=True))
        if _retry and self._reinit_lock is not None and self._reinit_lock.locked():
            async with self._reinit_lock:  # a new session is being made: wait for it
                pass
        if self._meta_hooks:
            # Before the envelope, so that its protocol keys always win over a hook's.
            params = with_request_meta(self._meta_hooks, method, params)
        if self.stateless_version is not None:
            params = discover.envelope(
                params,
                version=self.stateless_version,
                capabilities=discover.capabilities(self._capabilities),
                client_info=self.client_info,
                log_level=self.log_level,
            )
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        outgoing = self.outgoing
        # With a progress callback, the request's `_meta.progressToken` is its id.
        entry, msg = outgoing.open(method, params, fut, progress)
        if observer is not None:
            observer.opened(msg)  # may add to msg's _meta (trace context)
        rid = entry.id
        generation = self._generation
        deadline = self._deadlines.add(rid, wait)
        try:
            if self._trace is not None:
                self._trace("sent", msg)
            await self.transport.send(msg)
            return await fut
        except asyncio.CancelledError:
            if deadline.expired and deadline.task.uncancel() == 0:
                cancelled = outgoing.cancel(rid, f"timed out after {wait:g} s")
                if cancelled is not None and self._closed is None:
                    # The caller learns of the timeout on time: telling the server may take
                    # a POST of its own, behind whatever else is in flight.
                    task = self.handlers.spawn(self._cancel_quietly(cancelled))
                    await asyncio.wait({task}, timeout=_CANCEL_GRACE)
                raise PeerTimeout(
                    f"MCP server {self.name!r} did not answer {method} within {wait:g} s"
                ) from None
            cancelled = outgoing.cancel(rid, "cancelled by the client")
            if cancelled is not None and self._closed is None:
                self.handlers.spawn(self._cancel_quietly(cancelled))
            raise
        except SessionExpired:
            if not _retry:
                raise
            self._deadlines.discard(rid)  # the handshake and the retry are timed on their own
            await self._reinitialize(generation)
        finally:
            self._deadlines.discard(rid)
            outgoing.forget(rid)
            if fut.done() and not fut.cancelled():
                fut.exception()  # failed by a close while the transport sent: seen, not lost
        # The server forgot the session (it restarted): a new one was made; try once more.
        return await self._request(method, params, timeout, progress, False, observer)

    async def notify(
        self, method: str, params: dict[str, Any] | None = None, *, _retry: bool = True
    ) -> None:
        """Send a notification."""
        if self._closed is not None:
            raise _copy(self._closed)
        msg = jsonrpc.notification(method, params)
        observer = self.observe(self, "notification", method) if self.observe is not None else None
        if observer is not None:
            observer.opened(msg)
        sending = self._notify(msg, _retry)
        await (sending if observer is None else observed(observer, sending))

    async def _notify(self, msg: dict[str, Any], _retry: bool) -> None:
        generation = self._generation
        try:
            await self.send_message(msg)
        except SessionExpired:
            if not _retry:
                raise
            await self._reinitialize(generation)
            await self.send_message(msg)

    async def send_message(self, message: dict[str, Any]) -> None:
        """Write one raw message (responses to the server use this).

        Bounded by the session's timeout like every other wait: an HTTP server
        that never answers a notification's POST, or a stdio server that stops
        reading its stdin, fails the send with :class:`PeerTimeout`.
        """
        if self._trace is not None:
            self._trace("sent", message)
        wait = self.timeout
        try:
            async with asyncio.timeout(wait) as scope:
                await self.transport.send(message)
        except TimeoutError:
            if not scope.expired():
                raise
            method = message.get("method")
            what = method if method is not None else f"the answer to request {message.get('id')!r}"
            raise PeerTimeout(
                f"MCP server {self.name!r} did not accept {what} within {wait:g} s"
            ) from None

    async def _cancel_quietly(self, cancelled: dict[str, Any]) -> None:
        if self._closed is not None:
            return
        try:
            await asyncio.wait_for(self.send_message(cancelled), 5.0)
        except Exception as exc:  # the connection may be what failed
            log.debug("could not send notifications/cancelled %r: %s", cancelled["params"], exc)

    async def _reinitialize(self, generation: int) -> None:
        """Run the handshake again, once for every request that saw the session expire."""
        if self._reinit_lock is None:
            self._reinit_lock = asyncio.Lock()
        async with self._reinit_lock:
            if self._generation != generation:
                return  # another call already made a new session
            log.info("MCP server %r forgot our session; initializing a new one", self.name)
            await self.initialize()

    # -- what the transport delivers (transports.base.Inbound) --------------------------------
    def message_received(self, message: Any) -> None:
        if self._trace is not None:
            self._trace("received", message)
        if type(message) is dict:
            self._dispatch(message)
        elif type(message) is list:  # a batch (2025-03-26 servers may answer with one)
            for item in message:
                if type(item) is dict:
                    self._dispatch(item)
        else:
            log.warning("MCP server %r sent a non-object message: %.200r", self.name, message)

    def _dispatch(self, msg: dict[str, Any]) -> None:
        if "method" in msg:
            if "id" in msg:
                self.handlers.serve(msg)
            else:
                self.handlers.notification(msg)
            return
        reply, entry = self.outgoing.answer(msg)
        if entry is None:
            log.debug(
                "MCP server %r answered a request id that is not pending (%s): %r",
                self.name,
                reply,
                msg.get("id"),
            )
            return
        fut: asyncio.Future[dict[str, Any]] = entry.waiter
        if fut.done():
            return
        if reply == Reply.RESULT:
            fut.set_result(msg["result"])
            return
        if reply == Reply.ERROR:
            err = msg["error"]
            code = err.get("code")
            fut.set_exception(
                RemoteError(
                    str(err.get("message", "")),
                    code=code if type(code) is int else INTERNAL_ERROR,
                    data=err.get("data"),
                )
            )
        else:
            fut.set_exception(
                RemoteError(
                    f"MCP server {self.name!r} sent a malformed response: {msg!r:.300}",
                    code=INTERNAL_ERROR,
                )
            )

    def request_failed(self, request_id: Any, exc: BaseException) -> None:
        entry = self.outgoing.get(request_id)
        if entry is not None and not entry.waiter.done():
            entry.waiter.set_exception(exc)

    def connection_lost(self, exc: BaseException) -> None:
        if self._closed is None:
            self._closed = exc
            log.debug("connection to %r lost: %s", self.name, exc)
        self._fail_all(exc)
        self.handlers.close()


def _copy(exc: BaseException) -> BaseException:
    """A fresh exception like ``exc`` (raising one instance from many calls tangles tracebacks)."""
    try:
        new = copy.copy(exc)
    except Exception:
        return exc
    new.__traceback__ = None
    return new
