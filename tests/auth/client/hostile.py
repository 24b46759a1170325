"""An ASGI wrapper that makes one endpoint of a real peer misbehave, and a recorder.

:class:`Hostile` answers one ``(method, path)`` of the app it wraps with a body
that never ends (``"endless"``), one that declares a size of 1 GiB
(``"declared"``) or one that trickles a byte at a time (``"trickle"``), until
the client hangs up; everything else goes to the wrapped app. It counts what
it managed to send, so a test can show the client stopped reading.

:class:`Recorder` is a plain http server that records every request reaching
it and refuses it: the stand-in for an endpoint on another host that must
never receive anything.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from tests.client.http_servers import read_body

CHUNK = b" " * 65536
GIB = 1 << 30
MAX_SERVE = 60.0  # a safety net: a hostile answer never outlives the test


@dataclass
class Hostile:
    inner: Any
    method: str
    path: str
    mode: str  # "endless", "declared" or "trickle"
    active: bool = True
    sent: int = 0  # body bytes handed to the server for the hostile answers
    hits: int = 0
    hung_up: list[float] = field(default_factory=list)  # seconds from start to hang-up

    # oauth_peers.running() sets the peer's issuer/url on the app it serves.
    @property
    def issuer(self) -> str:
        return str(self.inner.issuer)

    @issuer.setter
    def issuer(self, value: str) -> None:
        self.inner.issuer = value

    def matches(self, scope: dict[str, Any]) -> bool:
        return (
            self.active
            and scope["type"] == "http"
            and scope["method"] == self.method
            and scope["path"] == self.path
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if not self.matches(scope):
            await self.inner(scope, receive, send)
            return
        await read_body(scope, receive, send)
        self.hits += 1
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.create_task(watch())
        headers = [(b"content-type", b"application/json")]
        if self.mode == "declared":
            headers.append((b"content-length", str(GIB).encode()))
        started = time.monotonic()
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            piece = b" " if self.mode == "trickle" else CHUNK
            while not gone.is_set() and time.monotonic() - started < MAX_SERVE:
                if self.mode == "declared" and self.sent + len(piece) > GIB:
                    break
                await send({"type": "http.response.body", "body": piece, "more_body": True})
                self.sent += len(piece)
                await asyncio.sleep(0.05 if self.mode == "trickle" else 0)
            if gone.is_set():
                self.hung_up.append(time.monotonic() - started)
        finally:
            watcher.cancel()


@dataclass
class Recorder:
    """Records every request that reaches it (method, target, headers, body); answers 400."""

    requests: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        self.requests.append(
            {
                "method": scope["method"],
                "path": scope["path"],
                "headers": {k.decode().lower(): v.decode() for k, v in scope["headers"]},
                "body": body.decode("latin-1"),
            }
        )
        raw = b'{"error": "invalid_request"}'
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(raw)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": raw})
