"""Running a server: the ``run_*``/``serve_*`` and ``*_app`` conveniences of ``MCPServer``.

The transports sit above the server in the layer order (``docs/architecture.md``):
they drive a server, the server does not know them. These conveniences are the
one place the server reaches up, and only inside the methods, so that
``import mcpkit`` stays light and the server package imports no transport at
module level (``tests/test_layers.py`` allows exactly these lazy imports).
``MCPServer`` mixes :class:`ServerRunning` in; each method hands the server
itself to the transport (``cast``: only ``MCPServer`` mixes this in, and naming
it here would be an import loop).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Container

    from ..auth.resource_server import ProtectedResource
    from ..transports.asgi import ASGIApp
    from ..transports.serve import ServeOptions

__all__ = ["ServerRunning", "http_banner", "sse_banner"]

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
            from ..errors import ConfigurationError

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
