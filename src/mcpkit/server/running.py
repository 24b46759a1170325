"""Running a server: the ``run_*``/``serve_*`` and ``*_app`` conveniences of ``MCPServer``.

The transports sit above the server in the layer order (``docs/architecture.md``):
they drive a server, the server does not know them. These conveniences are the
one place the server reaches up, and only inside the methods, so that
``import mcpkit`` stays light and the server package imports no transport at
module level (``tests/test_layers.py`` allows exactly these lazy imports).
``MCPServer`` mixes :class:`ServerRunning` in; each method hands the server
itself to the transport (``cast``: only ``MCPServer`` mixes this in, and naming
it here would be an import loop).

The other direction goes through one public hook: a transport that starts
serving the server calls :meth:`ServerRunning.register_transport`, and
:meth:`~ServerRunning.unregister_transport` when it stops, which is what
``stdio_transport``, ``sse_transport`` and ``streamable_http_transport`` read
(Mastra's ``getStdioTransport()`` and friends, "mainly for internal checks and
tests"). Both happen at start and stop only, never per request.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final, Literal, cast, get_args

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Callable, Container, Iterable

    from ..auth.resource_server import ProtectedResource
    from ..transports.asgi import ASGIApp
    from ..transports.http_routes import Route, RouteHandler
    from ..transports.serve import ServeOptions
    from ..transports.sse_legacy import SSEApp
    from ..transports.stdio import StdioConnection
    from ..transports.streamable_http import StreamableHTTPApp

__all__ = ["TRANSPORT_KINDS", "ServerRunning", "TransportKind", "http_banner", "sse_banner"]

#: What :meth:`ServerRunning.register_transport` is told a transport is.
TransportKind = Literal["stdio", "sse", "streamable_http"]
TRANSPORT_KINDS: Final[tuple[TransportKind, ...]] = get_args(TransportKind)

log = logging.getLogger("mcpkit.server")


def http_banner(name: str, path: str) -> str:
    """What ``run_http`` prints once it listens (``{url}`` becomes ``http://host:port``)."""
    return f"mcpkit: serving {name!r} on {{url}}{path} (Streamable HTTP); Ctrl+C stops it"


def sse_banner(name: str, sse_path: str) -> str:
    """What ``run_sse`` prints once it listens (``{url}`` becomes ``http://host:port``)."""
    return f"mcpkit: serving {name!r} on {{url}}{sse_path} (legacy HTTP+SSE); Ctrl+C stops it"


class ServerRunning:
    """Mixed into ``MCPServer``; the attributes below are the server's own."""

    name: str
    tools: Container[str]
    back_channel_needs: dict[str, tuple[str, ...]]
    auth: ProtectedResource | None
    # The transports serving this server now, per kind, oldest first (register_transport).
    # A class-level None until the first registration: a server that is never served, or
    # only in memory, carries nothing, and MCPServer.__init__ needs no line for it.
    _running_transports: dict[TransportKind, list[object]] | None = None
    # The extra HTTP routes (custom_route), by path; None, like the above, until the first.
    _custom_routes: dict[str, Route] | None = None

    # -- the transports serving this server (Mastra's getStdioTransport() and friends) --------
    @property
    def stdio_transport(self) -> StdioConnection | None:
        """The stdio connection serving this server, or None.

        Set while ``run_stdio``/``serve_stdio`` (``mcpkit run``) serves: from
        just before the first message is read until the session has ended. Its
        ``session`` is the one session of the process.
        """
        return cast("StdioConnection | None", self._running("stdio"))

    @property
    def sse_transport(self) -> SSEApp | None:
        """The legacy HTTP+SSE app (``sse_app()``) serving this server, or None.

        Set from the app's ASGI lifespan startup (``run_sse``, ``mcpkit run -t
        sse``, uvicorn) to its shutdown, after its sessions have ended. Behind
        ``auth`` it is the app inside the protection layer.
        """
        return cast("SSEApp | None", self._running("sse"))

    @property
    def streamable_http_transport(self) -> StreamableHTTPApp | None:
        """The Streamable HTTP app (``http_app()``) serving this server, or None.

        Set from the app's ASGI lifespan startup (``run_http``, ``mcpkit run -t
        http``, uvicorn) to its shutdown, after its sessions have ended; see
        :attr:`sse_transport`.
        """
        return cast("StreamableHTTPApp | None", self._running("streamable_http"))

    def _running(self, kind: TransportKind) -> object | None:
        running = self._running_transports
        stack = running.get(kind) if running is not None else None
        return stack[-1] if stack else None

    def register_transport(self, kind: TransportKind, transport: object) -> None:
        """Note that ``transport`` has started serving this server (a hook for transports).

        The built-in transports call it themselves; a custom transport may too.
        Several transports of one kind may serve at once (two apps in one host):
        the property of that kind shows the latest still serving.
        """
        if kind not in TRANSPORT_KINDS:
            raise ConfigurationError(
                f"unknown transport kind {kind!r}: one of {', '.join(TRANSPORT_KINDS)}"
            )
        if self._running_transports is None:
            self._running_transports = {}
        self._running_transports.setdefault(kind, []).append(transport)

    def unregister_transport(self, kind: TransportKind, transport: object) -> None:
        """Note that ``transport`` has stopped serving this server; no-op if it was not noted."""
        stack = self._running_transports.get(kind) if self._running_transports else None
        if stack is None:
            return
        for i in range(len(stack) - 1, -1, -1):
            if stack[i] is transport:
                del stack[i]
                return

    # -- extra HTTP routes ----------------------------------------------------------------------
    def custom_route(
        self, path: str, *, methods: Iterable[str] = ("GET",), public: bool = False
    ) -> Callable[[RouteHandler], RouteHandler]:
        """Decorate ``async def handler(request) -> response`` to answer ``path`` on the HTTP
        apps (see :mod:`mcpkit.transports.http_routes`).

        ``methods``: what it answers (GET brings HEAD; another gets 405). ``public``: no
        bearer token needed on a protected server. Routes are read when an app is built
        (``http_app()``, ``sse_app()``, ``run_*``): declare them first. A path the app's
        MCP endpoint or the RFC 9728 metadata uses is refused then (ConfigurationError).
        """
        from ..transports.http_routes import Route, check_route

        allowed = check_route(path, methods)
        routes = self._custom_routes
        if routes is None:
            routes = self._custom_routes = {}
        if path in routes:
            raise ConfigurationError(f"custom route {path!r} is already declared")

        def register(handler: RouteHandler) -> RouteHandler:
            if not callable(handler):
                raise ConfigurationError(f"custom route {path!r}: the handler must be callable")
            routes[path] = Route(path, allowed, handler, public)
            return handler

        return register

    def custom_routes(self) -> dict[str, Route]:
        """The routes declared with :meth:`custom_route`, by path (a copy): what the HTTP
        apps read when they are built (``transports/http_routes.py``)."""
        return dict(self._custom_routes or {})

    # -- starting it ----------------------------------------------------------------------------
    def run_stdio(self) -> None:
        """Serve on stdin/stdout until stdin closes or SIGTERM."""
        from ..transports.stdio import run_stdio

        self._note_stdio_auth()
        run_stdio(cast(Any, self))

    async def serve_stdio(self) -> None:
        from ..transports.stdio import serve_stdio

        self._note_stdio_auth()
        await serve_stdio(cast(Any, self))

    def _note_stdio_auth(self) -> None:
        if self.auth is not None:
            # MCP authorization § protocol requirements: stdio SHOULD NOT use it.
            log.info(
                "%r has auth configured, which applies to HTTP only: on stdio the server "
                "takes its credentials from the environment",
                self.name,
            )

    def http_app(
        self, path: str = "/mcp", *, auth: ProtectedResource | None = None, **options: Any
    ) -> ASGIApp:
        """A Streamable HTTP ASGI app (see :mod:`mcpkit.transports.streamable_http`).

        ``auth`` (default: the server's own, ``MCPServer(auth=...)``) puts the app
        behind a :class:`~mcpkit.auth.ProtectedResource`: its metadata is served beside
        ``path`` and every request needs a good bearer token.
        """
        from ..transports.streamable_http import StreamableHTTPApp

        if options.get("stateless"):
            self._warn_back_channels("stateless HTTP")
        app = StreamableHTTPApp(cast(Any, self), path=path, **options)
        return self._protect(app, auth, (path,))

    def _protect(
        self, app: ASGIApp, auth: ProtectedResource | None, paths: tuple[str, ...]
    ) -> ASGIApp:
        auth = self.auth if auth is None else auth
        if auth is None:
            return app  # unprotected: no layer at all, so no per-request cost
        from ..auth.resource_server import ProtectedResource

        if not isinstance(auth, ProtectedResource):
            raise ConfigurationError(
                f"auth must be a mcpkit.auth.ProtectedResource, not {type(auth).__name__}"
            )
        return auth.protect(app, paths=paths)

    def _warn_back_channels(self, transport: str) -> None:
        """Name, at start-up, each tool that needs a channel back to the client it cannot get."""
        for name, needs in self.back_channel_needs.items():
            if name in self.tools:
                log.warning(
                    "tool %r needs %s, which %s cannot offer (no channel for server-to-client "
                    "requests): calls to it will fail",
                    name,
                    " and ".join(needs),
                    transport,
                )

    def sse_app(
        self,
        sse_path: str = "/sse",
        message_path: str = "/message",
        *,
        auth: ProtectedResource | None = None,
        **options: Any,
    ) -> ASGIApp:
        """A legacy HTTP+SSE (2024-11-05) ASGI app; ``auth`` as in :meth:`http_app`."""
        from ..transports.sse_legacy import SSEApp

        app = SSEApp(cast(Any, self), sse_path=sse_path, message_path=message_path, **options)
        return self._protect(app, auth, (sse_path,))

    def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        *,
        auth: ProtectedResource | None = None,
        serve_options: ServeOptions | None = None,
        **options: Any,
    ) -> None:
        """Serve Streamable HTTP on the embedded server (uvicorn) until SIGINT/SIGTERM.

        ``auth`` and ``options`` go to :meth:`http_app`, ``serve_options`` to
        :func:`~mcpkit.transports.serve.serve` (limits, timeouts, uvicorn options).
        Prints where it listens to stderr once the port is bound.
        """
        from ..transports.serve import serve

        if serve_options and "max_header_size" in serve_options:  # the app checks heads too
            options.setdefault("max_header_size", serve_options["max_header_size"])
        app = self.http_app(path, auth=auth, **options)
        banner = http_banner(self.name, path)
        serve(app, host=host, port=port, banner=banner, **(serve_options or {}))

    def run_sse(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        auth: ProtectedResource | None = None,
        serve_options: ServeOptions | None = None,
        **options: Any,
    ) -> None:
        """Serve legacy HTTP+SSE (2024-11-05) on the embedded server; see :meth:`run_http`."""
        from ..transports.serve import serve

        if serve_options and "max_header_size" in serve_options:
            options.setdefault("max_header_size", serve_options["max_header_size"])
        app = self.sse_app(auth=auth, **options)
        banner = sse_banner(self.name, getattr(app, "sse_path", "/sse"))
        serve(app, host=host, port=port, banner=banner, **(serve_options or {}))
