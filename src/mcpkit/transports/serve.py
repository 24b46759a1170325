"""Run an ASGI app on the embedded server (uvicorn, the ``http`` extra).

uvicorn picks uvloop and httptools when they are installed (``pip install
'mcpkit[fast]'``). On SIGINT or SIGTERM the server stops accepting, the open
SSE streams of every mcpkit app are closed with a ``retry`` hint (otherwise
uvicorn would wait for them forever), a connection whose client does not read
(its writes stay paused for about a second) is aborted, in-flight requests get
``graceful_timeout`` seconds to finish, those still running are then answered
with the JSON-RPC error ``SHUTTING_DOWN`` (see :func:`_stop_late_requests`),
sessions are closed through the ASGI lifespan, and :func:`serve` returns
normally.

Before anything is printed, :func:`serve` checks the port (0 to 65535; 0 picks
a free one), refuses to listen on a non-loopback address when the mcpkit app
has no ``allowed_hosts`` (DNS-rebinding protection, see :mod:`.security`), and
binds the listening sockets itself, so a port in use is one clear
:class:`~mcpkit.errors.ConfigurationError`. The ``banner`` (``{url}`` in it
becomes ``http://host:port``) goes to stderr once the server is up.

An app whose ASGI lifespan startup fails (an unreachable ``RedisStore``, a
failing ``MCPServer(lifespan=...)``) makes :func:`serve` raise the app's own
exception (``StoreUnavailable``, ``LifespanError``; ``LifespanError`` with the
message for other apps), instead of uvicorn's log lines and ``SystemExit(3)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, Final, NamedTuple, TypedDict

from .._extras import require_extra

with require_extra("http", feature="serving over HTTP (mcpkit.transports.serve)"):
    import uvicorn

from ..errors import ConfigurationError, LifespanError
from ..server.request import stop_for_shutdown
from .asgi import ASGIApp, Receive, Scope, Send, end_all_streams, stop_all_requests
from .connection_limits import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_HEADER_SIZE,
    limited_protocol,
)
from .security import RequestGuard, is_loopback_bind

__all__ = ["ServeOptions", "exposure_problem", "serve", "serve_async"]


class ServeOptions(TypedDict, total=False):
    """Keyword options of :func:`serve` (``run_http(serve_options=...)``), all optional.

    The first ones are mcpkit's; the rest go unchanged to ``uvicorn.Config``
    (any other uvicorn option works too when calling :func:`serve` directly).
    """

    log_level: str
    graceful_timeout: float
    header_timeout: float | None
    max_connections: int | None
    max_header_size: int | None
    # uvicorn's own
    timeout_keep_alive: int
    limit_concurrency: int | None
    backlog: int
    h11_max_incomplete_event_size: int | None
    proxy_headers: bool
    forwarded_allow_ips: list[str] | str | None
    root_path: str
    ssl_keyfile: str | None
    ssl_certfile: str | None
    loop: str
    http: str


log = logging.getLogger("mcpkit.transports.serve")

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _check_port(port: object) -> int:
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigurationError(f"port must be an integer from 0 to 65535, got {port!r}")
    return port


def exposure_problem(app: object, host: str) -> bool:
    """Would serving ``app`` on ``host`` leave an mcpkit app without a Host allow-list?

    Only mcpkit's own apps can be inspected (their ``guard``); a framework app
    that mounts one relies on the request-time default of :mod:`.security`.
    """
    guard = getattr(app, "guard", None)
    return (
        isinstance(guard, RequestGuard)
        and not guard.hosts_configured
        and not is_loopback_bind(host)
    )


def _refuse_exposure(app: object, host: str) -> None:
    if exposure_problem(app, host):
        raise ConfigurationError(
            f"refusing to listen on {host!r} without allowed_hosts: the server would be "
            "reachable from other machines, and DNS-rebinding protection needs the host names "
            "clients use; pass allowed_hosts=['mcp.example.com'] ('name:*' for any port, "
            "'*.example.com' for subdomains), or allowed_hosts=['*'] to turn the Host check "
            "off deliberately (e.g. behind a proxy that checks it)"
        )


def _bind(host: str, port: int, backlog: int) -> list[socket.socket]:
    """Listening sockets for ``host:port`` (every address the name resolves to)."""
    where = _netloc(host, port)
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise ConfigurationError(f"cannot listen on {where}: {exc.strerror}") from None
    sockets: list[socket.socket] = []
    seen: set[tuple[int, Any]] = set()
    try:
        for family, kind, proto, _, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            if sys.platform != "win32":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:  # the same free port on every address
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(backlog)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        reason = exc.strerror or str(exc)
        if exc.errno == errno.EADDRINUSE:
            reason = "the address is already in use (is another server running?)"
        raise ConfigurationError(f"cannot listen on {where}: {reason}") from None
    return sockets


def _url(sockets: list[socket.socket], host: str) -> str:
    port = sockets[0].getsockname()[1]
    return f"http://{_netloc(host, port)}"


class _LimitSettings(NamedTuple):
    header_timeout: float | None
    max_connections: int | None
    max_header_size: int | None

    def check(self) -> _LimitSettings:
        for name, value in self._asdict().items():
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if value is not None and (not number or value <= 0):
                raise ConfigurationError(f"{name} must be a positive number or None, got {value!r}")
        if self.max_connections is None:
            return self
        room = _descriptor_room()
        if room is not None and self.max_connections > room:
            log.warning(
                "max_connections=%d does not fit the file-descriptor limit (ulimit -n); "
                "using %d (raise the limit to allow more)",
                self.max_connections,
                room,
            )
            return self._replace(max_connections=room)
        return self


def _descriptor_room() -> int | None:
    """How many connections fit under the soft RLIMIT_NOFILE, keeping some descriptors spare."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    return max(16, soft - 64)


def _protocol_class(http: object, limits: _LimitSettings) -> object:
    """uvicorn's HTTP protocol class for ``http``, with the limits when any is set."""
    if limits == (None, None, None):
        return http
    if isinstance(http, str):
        from uvicorn.config import HTTP_PROTOCOLS
        from uvicorn.importer import import_from_string

        try:
            base = import_from_string(HTTP_PROTOCOLS.get(http, http))
        except Exception as exc:  # uvicorn's ImportFromStringError and friends
            raise ConfigurationError(f"http={http!r}: {exc}") from None
    else:
        base = http
    if not isinstance(base, type):
        raise ConfigurationError(f"http={http!r} is not a protocol class")
    return limited_protocol(
        base,
        header_timeout=limits.header_timeout,
        max_connections=limits.max_connections,
        max_header_size=limits.max_header_size,
    )


DrainHook = Callable[[Callable[[], None]], None]

_STARTUP_FAILED: Final = "Application startup failed. Exiting."


class _StartupWatch:
    """The app, noting why its lifespan startup failed (uvicorn only logs it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.error: BaseException | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def watch(message: Any) -> None:
            if message["type"] == "lifespan.startup.failed":
                message = dict(message)
                error = message.pop("mcpkit.error", None)
                text = message.pop("message", None) or "the application's startup failed"
                self.error = error if isinstance(error, Exception) else LifespanError(text)
            await send(message)  # without its message: serve() raises it instead of a log

        await self.app(scope, receive, watch)

    def filter(self, record: logging.LogRecord) -> bool:
        """Drop uvicorn's own line about the failure, which serve() raises."""
        return self.error is None or record.getMessage() != _STARTUP_FAILED


class _Prepared:
    """A uvicorn server with its sockets bound, ready to run."""

    def __init__(
        self,
        app: ASGIApp,
        host: str,
        port: object,
        log_level: str,
        graceful_timeout: float,
        banner: str | None,
        limits: _LimitSettings,
        options: dict[str, Any],
        sockets: list[socket.socket] | None = None,
        on_started: Callable[[], None] | None = None,
        drain_hook: DrainHook | None = None,
    ) -> None:
        port = _check_port(port)
        if "timeout_graceful_shutdown" in options:  # set below, from graceful_timeout
            raise ConfigurationError(
                "pass graceful_timeout, not uvicorn's timeout_graceful_shutdown (serve() "
                "gives uvicorn graceful_timeout + 2 s, to answer the requests it stops)"
            )
        limits = limits.check()
        _refuse_exposure(app, host)
        options["http"] = _protocol_class(options.get("http", "auto"), limits)
        if limits.max_header_size is not None:
            # h11 refuses an incomplete head past 16 KiB by default (400): let the head limit
            # (431 on both stacks) decide; the slack covers blank lines before a request line.
            options.setdefault("h11_max_incomplete_event_size", limits.max_header_size + 1024)
        external = "uds" in options or "fd" in options
        if sockets is not None:  # already listening (a worker of .workers)
            self.sockets = list(sockets)
        else:
            backlog = int(options.get("backlog", 2048))
            self.sockets = [] if external else _bind(host, port, backlog)
        if banner is not None:
            where = (options.get("uds") or "fd") if external else _url(self.sockets, host)
            banner = banner.replace("{url}", str(where))
        self.watch = _StartupWatch(app)
        self.server = _server(
            self.watch,
            host,
            port,
            log_level,
            graceful_timeout,
            banner,
            options,
            on_started,
            drain_hook,
        )

    def run(self) -> None:
        with self._quiet():
            self.server.run(sockets=self.sockets or None)

    async def serve(self) -> None:
        with self._quiet():
            await self.server.serve(sockets=self.sockets or None)

    @contextlib.contextmanager
    def _quiet(self) -> Iterator[None]:
        logger = logging.getLogger("uvicorn.error")
        logger.addFilter(self.watch.filter)
        try:
            yield
        except SystemExit:
            if self.watch.error is not None:  # uvicorn's exit for a failed startup
                raise self.watch.error from None
            raise
        finally:
            logger.removeFilter(self.watch.filter)

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


UNREAD_GRACE: Final = 0.5
"""Seconds between the checks for connections blocked on a client that does not read."""


async def _abort_unread_connections(state: Any) -> None:
    """While uvicorn shuts down, abort connections whose client does not read.

    Such a connection never finishes: its response waits in uvicorn's flow control
    (paused writes) and nothing but the client ends that wait, so it would hold the
    shutdown for the whole graceful timeout, then end with a cancelled-task traceback. A
    connection found paused on two checks in a row is aborted: its pending send returns
    as for a client that left, and the stream or request ends on its own.
    """
    paused: set[int] = set()
    while True:
        await asyncio.sleep(UNREAD_GRACE)
        now: set[int] = set()
        for conn in list(state.connections):
            flow = getattr(conn, "flow", None)
            if flow is None or not getattr(flow, "write_paused", False):
                continue
            if id(conn) in paused:
                transport = getattr(conn, "transport", None)
                if transport is not None:
                    log.info("aborting a connection whose client does not read")
                    transport.abort()
            else:
                now.add(id(conn))
        paused = now


ANSWER_TIME: Final = 2.0
"""Seconds the requests stopped at the end of the graceful period get to write their answer."""


def _stop_late_requests(state: Any, grace: float) -> None:
    """The graceful period is over: answer what still runs with a JSON-RPC error.

    uvicorn would cancel these tasks itself a little later, and a request cancelled by it
    ends with a plain-text 500 (or a cut stream) the client cannot tell from a crash.
    Cancelled here, each request is answered by its session with ``SHUTTING_DOWN`` on its
    own channel (the JSON body or the SSE stream of its POST), which tells the client to
    retry on another server.
    """
    spared = stop_all_requests()  # legacy SSE: its answers go out on its streams
    tasks = [task for task in state.tasks if not task.done() and task not in spared]
    if tasks:
        log.warning(
            "%d request(s) still running after the %.3g s graceful timeout: answering "
            "them with a 'server is shutting down' error",
            len(tasks),
            grace,
        )
    for task in tasks:
        stop_for_shutdown(task)


def _server(
    app: ASGIApp,
    host: str,
    port: int,
    log_level: str,
    graceful_timeout: float,
    banner: str | None,
    options: dict[str, Any],
    on_started: Callable[[], None] | None = None,
    drain_hook: DrainHook | None = None,
) -> uvicorn.Server:
    class Server(uvicorn.Server):
        """uvicorn's server, ending mcpkit's SSE streams when asked to stop."""

        _mcp_loop: asyncio.AbstractEventLoop | None = None
        _mcp_draining: asyncio.Future[None] | None = None

        async def serve(self, sockets: Any = None) -> None:
            self._mcp_loop = asyncio.get_running_loop()
            await super().serve(sockets)

        async def shutdown(self, sockets: Any = None) -> None:
            watch = asyncio.ensure_future(_abort_unread_connections(self.server_state))
            late = None
            if graceful_timeout is not None:
                late = asyncio.get_running_loop().call_later(
                    graceful_timeout, _stop_late_requests, self.server_state, graceful_timeout
                )
            try:
                await super().shutdown(sockets)
            finally:
                watch.cancel()
                if late is not None:
                    late.cancel()

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if banner is not None and not self.should_exit:
                # After the bind and the lifespan startup: the server really is up.
                print(banner, file=sys.stderr, flush=True)
            if on_started is not None and not self.should_exit:
                on_started()
            if drain_hook is not None and not self.should_exit:
                drain_hook(self.drain)

        def drain(self) -> None:
            """Stop accepting; let the open connections finish (for up to the graceful
            timeout: the caller makes their responses close them), then stop as on SIGTERM."""
            if self.should_exit or self._mcp_draining is not None:
                return
            for server in self.servers:
                server.close()  # this process's listeners only: the sockets stay bound
            # Long-lived streams would hold the drain to its end: their clients reconnect
            # (the retry hint) to the processes still accepting.
            end_all_streams()
            self._mcp_draining = asyncio.ensure_future(self._drained())

        async def _drained(self) -> None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + (graceful_timeout or 0.0)
            ticks = 0
            while self.server_state.connections and loop.time() < deadline:
                await asyncio.sleep(0.05)
                ticks += 1
                if ticks % 10 == 0:
                    end_all_streams()  # one opened since, on a connection still open
            self.should_exit = True  # uvicorn's main loop notices, then runs shutdown()

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            super().handle_exit(sig, frame)
            loop = self._mcp_loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(end_all_streams)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            # Like uvicorn's, but without re-raising the signal afterwards: serve() returns.
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in _SIGNALS}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    settings: dict[str, Any] = {"loop": "auto", "http": "auto", **options}
    # uvicorn's own deadline comes ANSWER_TIME after ours (_stop_late_requests): by then
    # the requests it would cancel (ending them with a bare 500) have been answered.
    hard = None if graceful_timeout is None else graceful_timeout + ANSWER_TIME
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=hard,  # type: ignore[arg-type]  # uvicorn waits float seconds
        **settings,
    )
    server: uvicorn.Server = Server(config)
    return server


def serve(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    graceful_timeout: float = 5.0,
    banner: str | None = None,
    header_timeout: float | None = DEFAULT_HEADER_TIMEOUT,
    max_connections: int | None = DEFAULT_MAX_CONNECTIONS,
    max_header_size: int | None = DEFAULT_MAX_HEADER_SIZE,
    sockets: list[socket.socket] | None = None,
    on_started: Callable[[], None] | None = None,
    drain_hook: DrainHook | None = None,
    **options: Any,
) -> None:
    """Serve ``app`` until SIGINT/SIGTERM; extra ``options`` go to ``uvicorn.Config``.

    ``banner`` is printed to stderr once the server listens; ``{url}`` in it
    becomes ``http://host:port`` (the real port when ``port`` is 0).

    Limits (None turns one off; see :mod:`.connection_limits`): a request head
    must arrive within ``header_timeout`` seconds (default 10) and
    ``max_header_size`` bytes (64 KiB); at most ``max_connections`` (1000,
    lowered to fit the process's file-descriptor limit) are open at once, one
    more gets 503. uvicorn's own ``timeout_keep_alive`` (default 5 s),
    ``limit_concurrency``, ``backlog`` and ``h11_max_incomplete_event_size``
    pass through ``options``.

    ``sockets`` are already-listening sockets to serve on instead of binding
    ``host:port`` (which then only name them), as the workers of
    :mod:`.workers` do with the sockets their parent bound; ``on_started`` is
    called once the server is up (after the lifespan startup), then
    ``drain_hook`` with a function that drains the server (call it on the
    server's loop): it stops accepting, lets the open connections finish within
    ``graceful_timeout``, then stops as on SIGTERM (how a worker is recycled).
    """
    limits = _LimitSettings(header_timeout, max_connections, max_header_size)
    prepared = _Prepared(
        app,
        host,
        port,
        log_level,
        graceful_timeout,
        banner,
        limits,
        dict(options),
        sockets,
        on_started,
        drain_hook,
    )
    try:
        prepared.run()
    finally:
        prepared.close()


async def serve_async(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    graceful_timeout: float = 5.0,
    banner: str | None = None,
    header_timeout: float | None = DEFAULT_HEADER_TIMEOUT,
    max_connections: int | None = DEFAULT_MAX_CONNECTIONS,
    max_header_size: int | None = DEFAULT_MAX_HEADER_SIZE,
    sockets: list[socket.socket] | None = None,
    on_started: Callable[[], None] | None = None,
    drain_hook: DrainHook | None = None,
    **options: Any,
) -> None:
    """:func:`serve` inside a running event loop."""
    limits = _LimitSettings(header_timeout, max_connections, max_header_size)
    prepared = _Prepared(
        app,
        host,
        port,
        log_level,
        graceful_timeout,
        banner,
        limits,
        dict(options),
        sockets,
        on_started,
        drain_hook,
    )
    try:
        await prepared.serve()
    finally:
        prepared.close()
