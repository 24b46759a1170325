"""Run an ASGI app on the embedded server (uvicorn, the ``http`` extra).

uvicorn picks uvloop and httptools when they are installed (``pip install
'mcpkit[fast]'``). On SIGINT or SIGTERM the server stops accepting, the open
SSE streams of every mcpkit app are closed with a ``retry`` hint (otherwise
uvicorn would wait for them forever), in-flight requests get
``graceful_timeout`` seconds to finish, sessions are closed through the ASGI
lifespan, and :func:`serve` returns normally.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from .asgi import ASGIApp, end_all_streams

if TYPE_CHECKING:
    import uvicorn

__all__ = ["serve", "serve_async"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError:
        raise ConfigurationError(
            "serving over HTTP needs uvicorn: pip install 'mcpkit[http]' "
            "(or 'mcpkit[fast]' for uvloop and httptools)"
        ) from None
    return uvicorn


def _server(
    app: ASGIApp,
    host: str,
    port: int,
    log_level: str,
    graceful_timeout: float,
    options: dict[str, Any],
) -> uvicorn.Server:
    uv = _uvicorn()

    class Server(uv.Server):  # type: ignore[misc,name-defined]
        """uvicorn's server, ending mcpkit's SSE streams when asked to stop."""

        _mcp_loop: asyncio.AbstractEventLoop | None = None

        async def serve(self, sockets: Any = None) -> None:
            self._mcp_loop = asyncio.get_running_loop()
            await super().serve(sockets)

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

    config = uv.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        loop="auto",
        http="auto",
        timeout_graceful_shutdown=graceful_timeout,
        **options,
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
    **options: Any,
) -> None:
    """Serve ``app`` until SIGINT/SIGTERM; extra ``options`` go to ``uvicorn.Config``."""
    _server(app, host, port, log_level, graceful_timeout, options).run()


async def serve_async(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    graceful_timeout: float = 5.0,
    **options: Any,
) -> None:
    """:func:`serve` inside a running event loop."""
    await _server(app, host, port, log_level, graceful_timeout, options).serve()
