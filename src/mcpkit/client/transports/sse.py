"""Legacy HTTP+SSE client transport (2024-11-05 basic/transports § "HTTP with SSE"), on httpx.

* ``GET`` on the server's SSE URL opens one long-lived stream. Its first event,
  ``endpoint``, names the URI to ``POST`` every client message to; every
  server message, answers included, arrives on the stream as a ``message``
  event. A POST is only acknowledged (``202 Accepted``).
* The endpoint must be on the SSE URL's origin: the client's headers
  (credentials, typically) go with every POST, and a server must not be able
  to send them elsewhere.
* The server's session lives exactly as long as the stream. When the stream
  drops, calls waiting for an answer fail at once; the next call raises
  :class:`~mcpkit.client.transports.base.SessionExpired`, so the session opens
  a new stream and runs ``initialize`` again (as for a Streamable HTTP server
  that restarted), then retries the call once.

httpx is an optional dependency: this module is imported only when a client
connects to a URL.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

import orjson

from ..._extras import require_extra

with require_extra(
    "client", feature="the legacy HTTP+SSE client transport (mcpkit.client.transports.sse)"
):
    import httpx

from ...errors import (
    INTERNAL_ERROR,
    AuthorizationFailed,
    ConnectionClosed,
    MCPKitError,
    RemoteError,
)
from ...loops import cancel_and_wait
from ...protocol import jsonrpc
from ...protocol.jsonrpc import exact_ids
from .base import DEFAULT_MAX_MESSAGE_SIZE, Inbound, MessageTooLarge, SessionExpired
from .eventstream import EventStreamDecoder, EventTooLarge
from .http_responses import content_type, error_body, http_error, unreachable

__all__ = ["SSETransport"]

log = logging.getLogger("mcpkit.client")

_SSE: Final = "text/event-stream"
_JSON: Final = "application/json"
_CLOSE_WAIT: Final = 5.0  # seconds: how long aclose waits for the stream to end


class SSETransport:
    """A connection to a legacy HTTP+SSE server whose stream is at ``url``.

    ``headers`` go on the ``GET`` and on every ``POST``, and ``auth`` (an
    ``httpx.Auth`` such as :class:`mcpkit.auth.client.OAuth`) authorizes them; ``http_client`` is
    used instead of a new ``httpx.AsyncClient`` (and is not closed here). An SSE
    event larger than ``max_message_size`` bytes ends the session with
    :class:`~.base.MessageTooLarge` instead of being buffered (of a POST's answer,
    an acknowledgement, at most 64 KiB is read).
    """

    # HTTP+SSE is the 2024-11-05 transport: the stateless era is defined only on stdio and
    # Streamable HTTP (2026-07-28 basic/transports), so the session skips the probe.
    handshake_only = True

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
        http_client: httpx.AsyncClient | None = None,
        name: str | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self.url = url
        self.max_message_size = max_message_size
        self.label = f"{name} ({url})" if name and name != url else url
        self.headers = dict(headers or {})
        # The POSTs go to the endpoint the stream names, but they are requests to the same
        # protected resource: the extension tells OAuth which server's tokens to use.
        self._auth: dict[str, Any] = (
            {"auth": auth, "extensions": {"mcpkit.server_url": url}} if auth is not None else {}
        )
        self.endpoint: str | None = None
        self._client = http_client
        self._owns_client = http_client is None
        self._inbound: Inbound | None = None
        self._ready: asyncio.Future[str] | None = None
        self._stream: asyncio.Task[None] | None = None
        self._lost: ConnectionClosed | None = None
        self._waiting: set[Any] = set()  # ids of requests sent and not answered yet
        self._closed = False

    # -- lifecycle ----------------------------------------------------------------------------
    async def start(self, inbound: Inbound) -> None:
        self._inbound = inbound
        if self._client is None:
            # No read timeout: the stream idles legitimately; the session times every call.
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))
        self._open()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        stream, self._stream = self._stream, None
        if stream is not None:
            # Closing the stream ends the server's session. Bounded (a cancellation can be
            # lost on Python 3.11), and the caller's own cancellation goes through
            # (loops.cancel_and_wait); how the stream ended does not matter here.
            await cancel_and_wait(stream, timeout=_CLOSE_WAIT, what=f"closing {self.label}")
        if self._ready is not None and not self._ready.done():
            self._ready.cancel()
        if self._client is not None and self._owns_client:
            await self._client.aclose()

    def _http(self) -> httpx.AsyncClient:
        if self._closed or self._client is None:
            raise ConnectionClosed(f"the connection to {self.label} is closed")
        return self._client

    def _open(self) -> None:
        """Open a new stream; ``self._ready`` resolves to the endpoint it announces."""
        loop = asyncio.get_running_loop()
        self.endpoint = None
        self._lost = None
        self._ready = ready = loop.create_future()
        self._stream = loop.create_task(self._read(ready))

    # -- the stream ---------------------------------------------------------------------------
    async def _read(self, ready: asyncio.Future[str]) -> None:
        error: ConnectionClosed | RemoteError
        try:
            error = await self._read_stream(ready)
        except asyncio.CancelledError:
            raise
        except httpx.HTTPError as exc:
            error = unreachable(exc, self.url)
        except RemoteError as exc:
            error = exc
        except AuthorizationFailed as exc:
            if not ready.done():
                ready.set_exception(exc)
                ready.exception()
            self._stream_lost(ConnectionClosed(str(exc)))
            return
        if not ready.done():
            ready.set_exception(error)
            # Nobody may await it (a close racing the failure): do not warn about that.
            ready.exception()
        # Either way there is no session any more: the next call starts a new one.
        self._stream_lost(error if isinstance(error, ConnectionClosed) else _closed(error))

    async def _read_stream(self, ready: asyncio.Future[str]) -> ConnectionClosed | RemoteError:
        """Read the stream until it ends; returns what to report for its end."""
        client = self._http()
        headers = {**self.headers, "accept": _SSE}
        async with client.stream("GET", self.url, headers=headers, **self._auth) as resp:
            if resp.status_code >= 400:
                return http_error(resp, self.label, await error_body(resp, self.max_message_size))
            ctype = content_type(resp)
            if ctype != _SSE:
                return RemoteError(
                    f"{self.label} answered GET with HTTP {resp.status_code} and content type "
                    f"{ctype or 'none'!r}, not an SSE stream: is this the URL of a legacy "
                    "HTTP+SSE MCP server?",
                    code=INTERNAL_ERROR,
                    data={"status": resp.status_code},
                )
            decoder = EventStreamDecoder(max_event_size=self.max_message_size)
            try:
                async for chunk in resp.aiter_bytes():
                    for event in decoder.feed(chunk):
                        if event.type == "endpoint":
                            self._endpoint_event(event.data, ready)
                        elif event.type == "message":
                            self._message_event(event.data)
            except httpx.TransportError as exc:  # the connection dropped mid-stream
                return unreachable(exc, self.url)
            except EventTooLarge as exc:
                return MessageTooLarge(self.label, exc.limit, "as an SSE event")
        if not ready.done():
            return ConnectionClosed(
                f"{self.label} ended its SSE stream without announcing the message endpoint"
            )
        return ConnectionClosed(
            f"{self.label} closed the SSE stream (the server ended the session)"
        )

    def _endpoint_event(self, data: str, ready: asyncio.Future[str]) -> None:
        endpoint = urljoin(self.url, data.strip())
        ours, theirs = urlsplit(self.url), urlsplit(endpoint)
        if (ours.scheme, ours.netloc) != (theirs.scheme, theirs.netloc):
            raise RemoteError(
                f"{self.label} announced a message endpoint on another origin ({endpoint}); "
                "refusing to send messages there",
                code=INTERNAL_ERROR,
            )
        self.endpoint = endpoint
        if not ready.done():
            ready.set_result(endpoint)

    def _message_event(self, data: str) -> None:
        if not data.strip():
            return
        try:
            message = exact_ids(orjson.loads(data), data)
        except orjson.JSONDecodeError:
            log.warning("%s sent an SSE event that is not JSON: %.200r", self.label, data)
            return
        if type(message) is dict and "method" not in message:
            self._waiting.discard(message.get("id"))
        if self._inbound is not None:
            self._inbound.message_received(message)

    def _stream_lost(self, exc: ConnectionClosed) -> None:
        """The session died with its stream: fail what waits for an answer on it."""
        if self._closed:
            return
        log.debug("SSE stream of %s ended: %s", self.label, exc)
        self._lost = exc
        self.endpoint = None
        waiting, self._waiting = self._waiting, set()
        if self._inbound is not None:
            for rid in waiting:
                # Not SessionExpired (the session would retry the call); an oversized
                # message keeps its type, so callers can tell it apart.
                failure = copy.copy(exc) if isinstance(exc, MessageTooLarge) else None
                self._inbound.request_failed(rid, failure or ConnectionClosed(str(exc)))

    # -- sending ------------------------------------------------------------------------------
    async def send(self, message: dict[str, Any]) -> None:
        client = self._http()
        if message.get("method") == "initialize" and self._lost is not None:
            self._open()  # a new session needs a new stream
        elif self._lost is not None:
            raise SessionExpired(f"the SSE stream of {self.label} ended: {self._lost}")
        assert self._ready is not None
        # Shielded: one caller timing out must not cancel the stream's readiness for all.
        endpoint = await asyncio.shield(self._ready)
        is_request = "method" in message and "id" in message
        if is_request:
            self._waiting.add(message["id"])
        try:
            async with client.stream(
                "POST",
                endpoint,
                content=jsonrpc.dumps(message),
                headers={**self.headers, "content-type": _JSON},
                **self._auth,
            ) as resp:
                # The answer comes on the stream; the POST's own body is an acknowledgement.
                body = await error_body(resp, self.max_message_size)
        except httpx.HTTPError as exc:
            self._waiting.discard(message.get("id"))
            raise unreachable(exc, endpoint) from exc
        except BaseException:
            self._waiting.discard(message.get("id"))
            raise
        if resp.status_code == 404:
            # The server forgot the session (it restarted): start over with a new stream.
            self._waiting.discard(message.get("id"))
            self._drop_stream(SessionExpired(f"{self.label} no longer knows our SSE session"))
            raise SessionExpired(f"{self.label} no longer knows our SSE session")
        if resp.status_code >= 400:
            self._waiting.discard(message.get("id"))
            raise http_error(resp, self.label, body)

    def _drop_stream(self, exc: ConnectionClosed) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.cancel()
        self._stream_lost(exc)


def _closed(exc: MCPKitError) -> ConnectionClosed:
    return ConnectionClosed(str(exc))
