"""Receiving the authorization redirect on a loopback port, for command-line and desktop use.

OAuth 2.1 § 8.4.2 (native apps): the redirect URI is ``http://127.0.0.1:<port>/...``
on a port the client listens on; the browser delivers the response there.
:class:`LoopbackAuthorizer` opens the system browser (:mod:`webbrowser`) on the
authorization URL, or prints the URL when no browser can be started (a remote
shell), then waits for the one redirect that carries this request's response.
The port is chosen when the object is made (``port=0``: any free one) and kept,
because the registered redirect URI must not change.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
import webbrowser
from collections.abc import Callable
from typing import Final
from urllib.parse import urlsplit

from ...errors import AuthorizationFailed

__all__ = ["LoopbackAuthorizer"]

log = logging.getLogger("mcpkit.auth.client")

_PAGE: Final = (
    b"<!doctype html><meta charset=utf-8><title>Authorized</title>"
    b"<p>The application received the authorization response. You can close this window."
)
_MAX_HEAD: Final = 16 * 1024


def _announce(url: str) -> None:
    print(f"Open this URL in a browser to authorize:\n\n    {url}\n", file=sys.stderr, flush=True)


class LoopbackAuthorizer:
    """Open the browser (or print the URL); receive the redirect on ``127.0.0.1``.

    ``open_browser=False`` only prints; ``announce`` replaces the printing
    (a GUI can show the URL itself). ``timeout`` bounds the wait for the user.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = "/callback",
        open_browser: bool = True,
        announce: Callable[[str], None] | None = None,
        timeout: float = 300.0,
    ) -> None:
        self.host = host
        self.path = path if path.startswith("/") else "/" + path
        self.open_browser = open_browser
        self.announce = announce or _announce
        self.timeout = timeout
        if port == 0:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind((host, 0))
                port = int(probe.getsockname()[1])
        self.port = port

    @property
    def redirect_uri(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"

    async def authorize(self, url: str) -> str:
        loop = asyncio.get_running_loop()
        received: asyncio.Future[str] = loop.create_future()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
                if len(head) > _MAX_HEAD:
                    return
                line = head.split(b"\r\n", 1)[0].decode("latin-1")
                parts = line.split(" ")
                target = parts[1] if len(parts) == 3 else ""
                if parts[0] == "GET" and urlsplit(target).path == self.path:
                    writer.write(
                        b"HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\n"
                        b"cache-control: no-store\r\nconnection: close\r\n"
                        + f"content-length: {len(_PAGE)}\r\n\r\n".encode()
                        + _PAGE
                    )
                    if not received.done():
                        received.set_result(f"http://{self.host}:{self.port}{target}")
                else:
                    writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
                pass
            finally:
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

        server = await asyncio.start_server(handle, self.host, self.port, reuse_address=True)
        try:
            opened = False
            if self.open_browser:
                try:
                    opened = await asyncio.to_thread(webbrowser.open, url)
                except webbrowser.Error:
                    opened = False
            if not opened:
                self.announce(url)
            else:
                log.info("opened the browser for authorization")
            try:
                return await asyncio.wait_for(received, self.timeout)
            except TimeoutError:
                raise AuthorizationFailed(
                    f"no authorization response within {self.timeout:g} s",
                    error="authorization_timeout",
                ) from None
        finally:
            server.close()
            await server.wait_closed()

    def __repr__(self) -> str:
        return f"LoopbackAuthorizer(redirect_uri={self.redirect_uri!r})"
