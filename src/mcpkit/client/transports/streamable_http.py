"""Streamable HTTP client transport (2025-03-26 … 2025-11-25 basic/transports), on httpx.

* Every message is one POST. A request's answer comes back as JSON or as an
  SSE stream that may first carry related notifications and server requests;
  each request's POST runs in its own task so ``send`` returns at once and the
  session keeps correlating by id.
* After ``notifications/initialized`` a GET opens the standalone SSE stream
  (405 means the server has none). It is reopened when the server closes it,
  after the ``retry`` delay the server set.
* A dropped response stream is resumed with ``GET`` + ``Last-Event-ID`` after
  ``retry`` milliseconds (transports § resumability; SEP-1699 polling).
* ``Mcp-Session-Id`` from the ``initialize`` answer and the negotiated
  ``MCP-Protocol-Version`` go on every later request; a 404 for the session (or
  the 400 of TypeScript-SDK servers, see ``_check_session``) raises
  :class:`~mcpkit.client.transports.base.SessionExpired` so the session
  re-initializes (session management, item 4); on the standalone GET stream
  such an answer ends the stream and the next call re-initializes. Closing
  sends DELETE.
* Stateless (2026-07-28) requests carry no session id; their headers come from the
  body (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*`` from
  the tools' ``x-mcp-header`` annotations, see :mod:`mcpkit.protocol.http_headers`), and
  tools whose annotations are malformed are dropped from ``tools/list`` answers
  (transports/streamable-http § custom headers: the client MUST exclude them).

The requests go over :class:`~.http11.LeanHTTP` (keep-alive connections on asyncio,
httptools or h11 parsing it): an httpx request costs several times what serving it
does, and a proxy pays it per call. httpx does them instead when the transport is given
an ``auth`` flow or an ``http_client``, or a proxy is set in the environment
(:func:`~.http11.usable`). httpx is an optional dependency: this module is imported only
when a client connects to a URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Final

import orjson

from ..._extras import require_extra

with require_extra(
    "client",
    feature="the Streamable HTTP client transport (mcpkit.client.transports.streamable_http)",
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
from ...protocol.http_headers import http_headers, param_headers_of_tool
from ...protocol.jsonrpc import exact_ids
from .base import DEFAULT_MAX_MESSAGE_SIZE, Inbound, MessageTooLarge, SessionExpired, Unreachable
from .eventstream import EventStreamDecoder, EventTooLarge
from .http11 import LeanHTTP, usable
from .http_responses import (
    Answer,
    content_type,
    error_body,
    http_error,
    read_body,
    unreachable,
)

__all__ = ["StreamableHTTPTransport"]

log = logging.getLogger("mcpkit.client")

_POST_ACCEPT: Final = "application/json, text/event-stream"
_SSE: Final = "text/event-stream"
_JSON: Final = "application/json"
_MAX_BACKOFF: Final = 30.0  # seconds
_CLOSE_WAIT: Final = 5.0  # seconds: how long aclose waits for its tasks, for the DELETE


class StreamableHTTPTransport:
    """A connection to an MCP endpoint URL.

    ``headers`` go on every request; ``auth`` (an ``httpx.Auth``, such as
    :class:`mcpkit.auth.client.OAuth`) authorizes every request;
    ``http_client`` is used instead of the transport's own HTTP client (it is not
    closed by this transport). Without either, and without a proxy in the
    environment, requests go over :class:`~.http11.LeanHTTP`, else over a new
    ``httpx.AsyncClient``. A dropped stream is resumed up to
    ``max_reconnects`` times in a row without progress; ``reconnect_delay``
    is the wait when the server gave no ``retry``. No answer body or SSE event is
    read past ``max_message_size`` bytes (:class:`~.base.MessageTooLarge`).
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
        http_client: httpx.AsyncClient | None = None,
        name: str | None = None,
        reconnect_delay: float = 1.0,
        max_reconnects: int = 5,
        terminate_on_close: bool = True,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self.url = url
        self.max_message_size = max_message_size
        self.label = f"{name} ({url})" if name and name != url else url
        self.headers = dict(headers or {})
        # Passed per request, so a caller's http_client gets it too; absent, the client's own.
        self._auth: dict[str, Any] = {"auth": auth} if auth is not None else {}
        self.reconnect_delay = reconnect_delay
        self.max_reconnects = max_reconnects
        self.terminate_on_close = terminate_on_close
        self.session_id: str | None = None
        self._forgotten = False  # the server forgot our session; no new one yet
        self.protocol_version: str | None = None
        self._client: httpx.AsyncClient | LeanHTTP | None = http_client
        self._lean = usable(url, auth=auth, http_client=http_client)
        self._owns_client = http_client is None
        self._inbound: Inbound | None = None
        self._init_id: Any = None
        self._requests: dict[Any, asyncio.Task[None]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._closed = False
        # Stateless era: Mcp-Param-* header paths per tool, learned from tools/list answers.
        self.tool_headers: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        self._tool_lists: set[Any] = set()
        self._stateless: set[Any] = set()  # ids of requests sent in the stateless era

    # -- lifecycle ----------------------------------------------------------------------------
    async def start(self, inbound: Inbound) -> None:
        self._inbound = inbound
        if self._client is None:
            # No read timeout: SSE streams idle legitimately; the session times every call.
            if self._lean:
                self._client = LeanHTTP(connect_timeout=30.0, read_timeout=None)
            else:
                self._client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None))

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        tasks = list(self._requests.values())
        if self._listener is not None:
            tasks.append(self._listener)
        # Bounded: a cancellation can be lost on Python 3.11 (loops.cancel_and_wait).
        await cancel_and_wait(*tasks, timeout=_CLOSE_WAIT, what=f"closing {self.label}")
        client = self._client
        if client is None:
            return
        try:
            if self.session_id is not None and self.terminate_on_close:
                # Session management, item 5: say we are done; 405 means "not supported".
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can drop the
                # caller's cancellation (CPython gh-86296).
                with contextlib.suppress(httpx.HTTPError, TimeoutError):
                    async with asyncio.timeout(_CLOSE_WAIT):
                        await self._exchange("DELETE", client=client, headers=self._headers())
        finally:
            self.session_id = None
            if self._owns_client:
                await client.aclose()

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = dict(self.headers)
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version is not None:
            headers["mcp-protocol-version"] = self.protocol_version
        if extra:
            headers.update(extra)
        return headers

    @property
    def http_client(self) -> httpx.AsyncClient | LeanHTTP | None:
        """The HTTP client in use (None before :meth:`start`)."""
        return self._client

    def _http(self) -> httpx.AsyncClient | LeanHTTP:
        if self._closed or self._client is None:
            raise ConnectionClosed(f"the connection to {self.label} is closed")
        return self._client

    # -- sending ------------------------------------------------------------------------------
    async def send(self, message: dict[str, Any]) -> None:
        self._http()
        method = message.get("method")
        if method is not None and "id" in message:
            rid = message["id"]
            extra = http_headers(message, self.tool_headers)  # computed once, used below
            if method == "initialize":
                self._init_id = rid
                self.protocol_version = None  # the header is for requests after initialize
            elif extra:
                self._stateless.add(rid)
                if method == "tools/list":
                    self._tool_lists.add(rid)
            if self._lean:
                # Made in the caller's task: a Task per request cost a tenth of a lean
                # call's CPU. A cancelled caller closes the request's connection (its
                # stream: the 2026-07-28 cancellation); closing the transport closes every
                # connection, which fails the request with ConnectionClosed.
                try:
                    await self._request(rid, message, extra)
                except asyncio.CancelledError:
                    # Its notifications/cancelled comes next; a stateless one is dropped
                    # below, which needs the id still known as stateless.
                    self._tool_lists.discard(rid)
                    raise
                self._forget(rid)
                return
            task = asyncio.get_running_loop().create_task(self._request(rid, message, extra))
            self._requests[rid] = task
            task.add_done_callback(lambda _t: self._forget(rid))
            return
        if method == "notifications/cancelled":
            rid = (message.get("params") or {}).get("requestId")
            if rid in self._stateless:
                # 2026-07-28 streamable-http § cancellation: closing the response stream
                # is the cancellation; no notification is POSTed.
                self._stateless.discard(rid)
                pending = self._requests.pop(rid, None)
                if pending is not None:
                    pending.cancel()
                return
        await self._post_message(message)
        if method == "notifications/initialized":
            self._listen()
            # One turn of the loop: the standalone GET goes out (on the connection just
            # freed) before the caller's first request, which is made in the caller's task.
            # A server sending requests on that stream (the TypeScript SDK's elicitation)
            # finds it open, as when every request had a task of its own.
            await asyncio.sleep(0)
        elif method == "notifications/cancelled":
            # The server was told; stop reading the answer stream nobody awaits.
            params = message.get("params") or {}
            pending = self._requests.pop(params.get("requestId"), None)
            if pending is not None:
                pending.cancel()

    async def _post_message(self, message: dict[str, Any]) -> None:
        """A notification or a response: the server answers 202 Accepted."""
        client = self._http()
        sent_session = self.session_id
        try:
            resp, body = await self._exchange(
                "POST",
                client=client,
                content=jsonrpc.dumps(message),
                headers=self._headers(
                    {
                        "accept": _POST_ACCEPT,
                        "content-type": _JSON,
                        **http_headers(message, self.tool_headers),
                    }
                ),
            )
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        await self._check_session(resp, sent_session, body)
        if resp.status_code >= 400:
            raise http_error(resp, self.label, body)

    async def _exchange(
        self, method: str, *, client: httpx.AsyncClient | LeanHTTP | None = None, **kwargs: Any
    ) -> tuple[Answer, bytes]:
        """A request whose whole answer is read, but never past ``max_message_size``."""
        async with (client or self._http()).stream(
            method, self.url, **kwargs, **self._auth
        ) as resp:
            if resp.status_code >= 400 or method == "DELETE":
                return resp, await error_body(resp, self.max_message_size)
            return resp, await read_body(resp, self.max_message_size, self.label)

    async def _request(self, rid: Any, message: dict[str, Any], extra: dict[str, str]) -> None:
        """POST one request and deliver what comes back; failures go to ``request_failed``."""
        try:
            await self._post_request(rid, message, extra)
        except asyncio.CancelledError:
            raise
        except MCPKitError as exc:
            self._fail(rid, exc)
        except httpx.HTTPError as exc:
            self._fail(rid, self._unreachable(exc))
        except Exception as exc:  # a malformed body, say: still fail the one call clearly
            log.debug("request %r to %s failed", rid, self.label, exc_info=True)
            self._fail(rid, ConnectionClosed(f"{self.label}: {type(exc).__name__}: {exc}"))

    def _forget(self, rid: Any) -> None:
        self._requests.pop(rid, None)
        self._stateless.discard(rid)
        self._tool_lists.discard(rid)

    def _fail(self, rid: Any, exc: BaseException) -> None:
        if self._inbound is not None:
            self._inbound.request_failed(rid, exc)

    async def _post_request(self, rid: Any, message: dict[str, Any], extra: dict[str, str]) -> None:
        """``extra``: the request's metadata headers (``http_headers``)."""
        client = self._http()
        sent_session = self.session_id
        headers = self._headers({"accept": _POST_ACCEPT, "content-type": _JSON, **extra})
        async with client.stream(
            "POST", self.url, content=jsonrpc.dumps(message), headers=headers, **self._auth
        ) as resp:
            status = resp.status_code
            if status >= 400:
                body = await error_body(resp, self.max_message_size)
                await self._check_session(resp, sent_session, body)
                raise http_error(resp, self.label, body)
            if rid == self._init_id:
                self._forgotten = False
                sid = resp.headers.get("mcp-session-id")
                if sid:
                    self.session_id = sid
            ctype = content_type(resp)
            if ctype == _SSE:
                await self._consume(resp, rid)
            elif ctype == _JSON:
                body = await read_body(resp, self.max_message_size, self.label)
                self._deliver(exact_ids(orjson.loads(body), body))
            else:
                raise RemoteError(
                    f"{self.label} answered a request with HTTP {status} and content type "
                    f"{ctype or 'none'!r}; expected JSON or an SSE stream",
                    code=INTERNAL_ERROR,
                    data={"status": status},
                )

    # -- receiving ----------------------------------------------------------------------------
    def _deliver(self, message: Any) -> None:
        if (
            self._init_id is not None
            and type(message) is dict
            and "method" not in message
            and message.get("id") == self._init_id
        ):
            # Remember the negotiated revision for the MCP-Protocol-Version header.
            self._init_id = None
            result = message.get("result")
            version = result.get("protocolVersion") if type(result) is dict else None
            if isinstance(version, str):
                self.protocol_version = version
        elif self._tool_lists and type(message) is dict and message.get("id") in self._tool_lists:
            self._tool_lists.discard(message["id"])
            self._check_tools(message.get("result"))
        if self._inbound is not None:
            self._inbound.message_received(message)

    async def _consume(self, resp: Answer, rid: Any) -> None:
        """Read a POST's SSE stream until the answer to ``rid``, resuming it when it drops."""
        decoder = EventStreamDecoder(max_event_size=self.max_message_size)
        if await self._read_stream(resp, decoder, rid):
            return
        failures = 0
        while True:
            if not decoder.last_event_id:
                raise ConnectionClosed(
                    f"{self.label} ended the response stream of request {rid!r} before "
                    "answering it, without an event id to resume from"
                )
            if failures >= self.max_reconnects:
                raise ConnectionClosed(
                    f"could not resume the response stream of request {rid!r} from "
                    f"{self.label} after {failures} attempts"
                )
            await asyncio.sleep(self._delay(decoder, failures))
            before = decoder.last_event_id
            decoder.resume()
            try:
                if await self._replay_after_last_event(decoder, rid):
                    return
            except httpx.TransportError as exc:
                log.debug("resuming request %r on %s failed: %s", rid, self.label, exc)
            failures = 0 if decoder.last_event_id != before else failures + 1

    async def _replay_after_last_event(self, decoder: EventStreamDecoder, rid: Any) -> bool:
        """One ``GET`` with ``Last-Event-ID``; True once the answer to ``rid`` arrived."""
        client = self._http()
        sent_session = self.session_id
        assert decoder.last_event_id is not None
        headers = self._headers({"accept": _SSE, "last-event-id": decoder.last_event_id})
        async with client.stream("GET", self.url, headers=headers, **self._auth) as resp:
            await self._check_session(resp, sent_session)
            if resp.status_code >= 400 or content_type(resp) != _SSE:
                raise ConnectionClosed(
                    f"{self.label} refused to resume the response stream of request {rid!r} "
                    f"(HTTP {resp.status_code})"
                )
            return await self._read_stream(resp, decoder, rid)

    async def _read_stream(self, resp: Answer, decoder: EventStreamDecoder, rid: Any) -> bool:
        """Deliver a stream's messages; True when the answer to ``rid`` was among them
        (with ``rid`` None: when there was any message)."""
        delivered = False
        try:
            async for chunk in resp.aiter_bytes():
                for event in decoder.feed(chunk):
                    if event.type != "message" or not event.data.strip():
                        continue
                    try:
                        message = exact_ids(orjson.loads(event.data), event.data)
                    except orjson.JSONDecodeError:
                        log.warning(
                            "%s sent an SSE event that is not JSON: %.200r", self.label, event.data
                        )
                        continue
                    self._deliver(message)
                    delivered = True
                    if rid is not None and _answers(message, rid):
                        return True
        except httpx.TransportError as exc:  # the connection dropped mid-stream
            log.debug("stream from %s dropped: %s", self.label, exc)
        except EventTooLarge as exc:
            raise MessageTooLarge(self.label, exc.limit, "as an SSE event") from None
        return rid is None and delivered

    def _delay(self, decoder: EventStreamDecoder, failures: int) -> float:
        """The wait before reconnecting after ``failures`` fruitless attempts in a row.

        The server's ``retry`` is respected ("The client MUST respect the retry field",
        transports § sending messages); after a failure the wait is also at least an
        exponential backoff (capped at 30 s), so that ``retry: 0`` and a stream closed at
        once do not make the client reconnect as fast as the network allows.
        """
        if decoder.retry is None:
            return float(min(self.reconnect_delay * 2**failures, _MAX_BACKOFF))
        retry = decoder.retry / 1000
        if failures == 0:
            return retry
        backoff: float = min(self.reconnect_delay * 2 ** (failures - 1), _MAX_BACKOFF)
        return max(retry, backoff)

    def _check_tools(self, result: Any) -> None:
        """Learn the tools' header annotations; drop the tools whose annotations are invalid."""
        tools = result.get("tools") if type(result) is dict else None
        if type(tools) is not list:
            return
        kept = []
        for tool in tools:
            if type(tool) is not dict:
                continue
            found = param_headers_of_tool(tool)
            name = tool.get("name")
            if isinstance(found, str):
                log.warning("%s: ignoring tool %r: %s", self.label, name, found)
                continue
            if isinstance(name, str):
                self.tool_headers[name] = found
            kept.append(tool)
        result["tools"] = kept

    # -- the standalone GET stream ------------------------------------------------------------
    def _listen(self) -> None:
        if self._listener is not None and not self._listener.done():
            self._listener.cancel()
        self._listener = asyncio.get_running_loop().create_task(self._listen_loop())

    async def _listen_loop(self) -> None:
        """Keep the standalone stream open; a stream that brings nothing counts as a failure.

        Progress is a message or a new event id (a server that polls primes each stream
        with an id, transports § sending messages, item 6). A stream that closes with
        neither, an HTTP error and a dropped connection are failures: the wait grows (see
        :meth:`_delay`), and after ``max_reconnects`` of them in a row the stream is given up.

        An answer saying the server forgot the session (a 404, or the TypeScript SDK's
        400, see :meth:`_check_session`) ends the stream at once, no retry: the session
        is marked expired as for a POST, so the next call re-initializes (and the new
        session opens its own stream). A 405 means the server has no standalone stream.
        """
        decoder = EventStreamDecoder(max_event_size=self.max_message_size)
        failures = 0
        while not self._closed:
            client = self._http()
            sent_session = self.session_id
            headers = self._headers({"accept": _SSE})
            before = decoder.last_event_id
            if before:
                headers["last-event-id"] = before
            progress = False
            try:
                async with client.stream("GET", self.url, headers=headers, **self._auth) as resp:
                    try:
                        await self._check_session(resp, sent_session)
                    except SessionExpired as exc:
                        log.info("GET stream: %s; the next call starts a new session", exc)
                        return
                    if resp.status_code in (404, 405):
                        return
                    if resp.status_code >= 400 or content_type(resp) != _SSE:
                        log.debug("GET stream of %s: HTTP %s", self.label, resp.status_code)
                    else:
                        progress = await self._read_stream(resp, decoder, None)
            except httpx.TransportError as exc:
                log.debug("GET stream of %s failed: %s", self.label, exc)
            except MessageTooLarge as exc:
                log.warning("GET stream: %s", exc)
            except AuthorizationFailed as exc:
                # The POSTs meet the same failure and report it; the stream just stops.
                log.warning("GET stream of %s: %s", self.label, exc)
                return
            if progress or decoder.last_event_id != before:
                failures = 0
            else:
                failures += 1
            if failures > self.max_reconnects:
                log.warning(
                    "giving up the GET stream of %s after %d failures", self.label, failures
                )
                return
            decoder.resume()
            await asyncio.sleep(self._delay(decoder, failures))

    async def _check_session(
        self, resp: Answer, sent_session: str | None, body: bytes | None = None
    ) -> None:
        """Raise :class:`SessionExpired` when the answer says the server forgot ``sent_session``.

        The specification's answer is 404 (transports § session management). Servers on
        the official TypeScript SDK, among the most used, answer a session id they do
        not know (after a restart, say) with 400 "Bad Request: No valid session ID
        provided" instead: a 400 to a request that carried a session id counts too when
        its body speaks of the session. Either way the session re-initializes once per
        request (``ClientSession.request``), so a server that keeps refusing cannot loop.
        A request sent after the session was lost and before a new one was made (the
        re-initialization failed) is answered the same way, so the next call tries again.
        ``body`` is the error body when the caller has read it already (bounded).
        """
        status = resp.status_code
        if status not in (400, 404) or (sent_session is None and not self._forgotten):
            return
        if status == 400:
            if body is None:
                body = await error_body(resp, self.max_message_size)
            if b"session" not in body.lower():
                return
        if sent_session is None:
            raise SessionExpired(f"{self.label} has no session for this client any more")
        self._expire(sent_session)
        raise SessionExpired(f"{self.label} no longer knows session {sent_session}")

    def _expire(self, sent_session: str) -> None:
        """The server forgot ``sent_session``: drop it (unless a new one already replaced it)."""
        if self.session_id == sent_session:
            self.session_id = None
            self._forgotten = True
            self.protocol_version = None
            listener, self._listener = self._listener, None
            if listener is not None and listener is not asyncio.current_task():
                listener.cancel()

    def _unreachable(self, exc: httpx.HTTPError) -> Unreachable:
        return unreachable(exc, self.url)


def _answers(message: Any, rid: Any) -> bool:
    if type(message) is dict:
        return "method" not in message and message.get("id") == rid
    if type(message) is list:
        return any(_answers(m, rid) for m in message)
    return False
