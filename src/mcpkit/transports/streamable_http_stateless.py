"""Streamable HTTP for the stateless era (2026-07-28): one POST, one request, no session.

:class:`~.streamable_http.StreamableHTTPApp` hands a POST here when the
request speaks 2026-07-28 (its ``MCP-Protocol-Version`` header, or, without
one, its ``_meta`` envelope); everything else about the endpoint is shared,
so clients of both eras use the same URL at the same time.

What this revision asks of the transport (2026-07-28
basic/transports/streamable-http):

* Refusals before anything runs, with their HTTP status: an envelope or
  header problem is 400 (``-32602``, ``-32020`` HeaderMismatch, ``-32022``
  UnsupportedProtocolVersion), a method this server does not implement (or
  the revision removed) is 404 + ``-32601``. A handler's
  ``MissingRequiredClientCapability`` (-32021) and ``HeaderMismatch`` are 400
  too; a rate limit's ``-31429`` is 429 with ``Retry-After``
  (:mod:`mcpkit.protocol.http_errors`); other JSON-RPC errors ride a 200.
* No ``Mcp-Session-Id`` is read or minted; nothing outlives the request.
* The response is JSON unless something related to the request (progress,
  the log messages it asked for, the ``subscriptions/listen`` stream) must be
  sent before the result: the SSE stream is opened only then, so an error
  answered at once still gets its HTTP status.
* Closing the response stream cancels the request (basic/patterns/cancellation):
  a watcher on ``receive`` cancels the handler when the client disconnects. The
  watcher is a task of its own, which costs more than a fast request (an echo
  tool) itself, so it starts only once the request has run for
  ``WATCH_AFTER_S``: a disconnect before then is still seen when it starts (the
  ASGI server keeps answering ``receive`` with ``http.disconnect``), so the
  handler is cancelled at most that much later, and quick requests pay nothing.
* Keep-alive: once a response is an SSE stream, an SSE comment (``: ping``)
  is written after ``keepalive_interval`` seconds without traffic, so that
  proxies and load balancers do not cut a quiet stream. This matters most for
  ``subscriptions/listen``, whose stream stays open and silent until something
  changes; the handshake era's streams do the same (:mod:`.http_request_streams`,
  :mod:`.http_streams`).
  Comments are not events: clients ignore them (WHATWG HTML § server-sent events).
"""

from __future__ import annotations

import asyncio
import logging
import types
from collections.abc import Coroutine, Generator
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ..errors import HEADER_MISMATCH, METHOD_NOT_FOUND
from ..loops import cancel_and_wait
from ..protocol import jsonrpc
from ..protocol.envelope import REMOVED_METHODS, Refusal, read_envelope
from ..protocol.http_errors import error_answer
from ..protocol.http_headers import check_request_headers
from ..protocol.jsonrpc import Kind, classify, error_response, invalid_request, wire_id
from .asgi import (
    PING,
    SSE_HEADERS,
    ClientGone,
    Receive,
    Send,
    send_body,
    send_rejected,
    sse_event,
)

if TYPE_CHECKING:
    from ..server.server import MCPServer
    from ..server.session import ServerSession

__all__ = [
    "WATCH_AFTER_S",
    "DisconnectWatch",
    "send_response",
    "serve_stateless_post",
    "status_for",
]

log = logging.getLogger("mcpkit.transports")

# How long a request runs before a task watches for its client going away (see above).
WATCH_AFTER_S: Final = 0.005
# How long the end of a request waits for its watcher to stop (DisconnectWatch.stop).
STOP_WATCH_S: Final = 1.0

# JSON-RPC codes a 2026-07-28 server answers with a non-200 status.
_STATUS: Final = {-32020: 400, -32021: 400, -32022: 400, METHOD_NOT_FOUND: 404}


def status_for(response: dict[str, Any]) -> int:
    error = response.get("error")
    if not isinstance(error, dict):
        return 200
    code = error.get("code")
    return _STATUS.get(code, 200) if isinstance(code, int) else 200


async def send_response(send: Send, response: dict[str, Any]) -> None:
    """``response`` as a JSON body, with its status (and a rate limit's ``Retry-After``)."""
    status, headers = error_answer(response, status_for(response))
    await send_body(send, status, jsonrpc.dumps(response), headers)


async def _answer(send: Send, status: int, response: dict[str, Any]) -> None:
    await send_body(send, status, jsonrpc.dumps(response))


class _LazyStream:
    """The request's response: JSON, unless a related message comes first (then SSE).

    Once it is SSE, a keep-alive task writes ``: ping`` after ``keepalive``
    seconds of silence (None: never) until :meth:`finish` or :meth:`stop`.
    """

    __slots__ = ("_keepalive", "_last", "_pinger", "_send", "started")
    close_stream = None  # no early close here: SEP-1699 is a handshake-era stream feature

    def __init__(self, send: Send, keepalive: float | None = None) -> None:
        self._send = send
        self._keepalive = keepalive
        self._last = 0.0
        self._pinger: asyncio.Task[None] | None = None
        self.started = False

    async def __call__(self, message: dict[str, Any]) -> None:
        if not self.started:
            self.started = True
            await self._send(
                {"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)}
            )
            if self._keepalive is not None:
                self._pinger = asyncio.ensure_future(self._ping_while_idle(self._keepalive))
        self._last = asyncio.get_running_loop().time()
        await self._send(
            {
                "type": "http.response.body",
                "body": sse_event(jsonrpc.dumps(message)),
                "more_body": True,
            }
        )

    async def _ping_while_idle(self, interval: float) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                idle = loop.time() - self._last
                if idle < interval:
                    await asyncio.sleep(interval - idle)
                    continue
                self._last = loop.time()
                await self._send({"type": "http.response.body", "body": PING, "more_body": True})
        except Exception as exc:  # the client went away: the disconnect watcher ends the request
            log.debug("keep-alive ping failed, stopping: %r", exc)

    def stop(self) -> None:
        """No more pings (before the last write, or when the request ends without one).

        Not awaited: a cancelled pinger is stopped at the await it is parked on, so
        it cannot write after this returns, and the caller's own cancellation is
        never swallowed while waiting for it.
        """
        pinger, self._pinger = self._pinger, None
        if pinger is not None:
            pinger.cancel()

    async def finish(self, response: dict[str, Any] | None) -> None:
        self.stop()
        if not self.started:
            if response is None:
                await send_body(self._send, 202)
                return
            if "error" in response:
                await send_response(self._send, response)
            else:
                await send_body(self._send, 200, jsonrpc.dumps(response))
            return
        body = sse_event(jsonrpc.dumps(response)) if response is not None else b""
        await self._send({"type": "http.response.body", "body": body, "more_body": False})


async def serve_stateless_post(
    server: MCPServer,
    msg: Any,
    headers: dict[bytes, bytes],
    receive: Receive,
    send: Send,
    auth_info: Any,
    *,
    keepalive_interval: float | None = None,
) -> None:
    """Serve one 2026-07-28 POST body (already parsed) and write its answer.

    ``keepalive_interval``: seconds of silence on an SSE response before a
    ``: ping`` comment (None: no pings); :class:`.StreamableHTTPApp` passes its own.
    """
    if type(msg) is not dict:
        await send_rejected(send, invalid_request(None, "batches are not allowed in 2026-07-28"))
        return
    kind = classify(msg)
    if kind is Kind.NOTIFICATION:
        # No client notification is defined over HTTP in this revision; accept and ignore.
        await send_body(send, 202)
        return
    if kind is not Kind.REQUEST:
        await send_rejected(send, invalid_request(msg, "the client may only POST requests"))
        return
    rid = msg["id"]
    method = msg["method"]
    raw_version = headers.get(b"mcp-protocol-version")
    envelope = read_envelope(
        msg.get("params"), raw_version.decode("latin-1") if raw_version is not None else None
    )
    if isinstance(envelope, Refusal):
        refused = error_response(rid, envelope.code, envelope.message, envelope.data)
        await _answer(send, envelope.status, refused)
        return
    if method in REMOVED_METHODS or method not in server.wrapped_methods:
        await _answer(
            send, 404, error_response(rid, METHOD_NOT_FOUND, f"Method not found: {method}")
        )
        return
    params_for_tool: dict[tuple[str, ...], str] = {}
    if method == "tools/call":
        params = msg.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        tool = server.tools.get(name) if isinstance(name, str) else None
        if tool is not None:
            params_for_tool = tool.param_headers()
    problem = check_request_headers(msg, headers, params_for_tool)
    if problem is not None:
        await _answer(
            send, 400, error_response(rid, HEADER_MISMATCH, f"Header mismatch: {problem}")
        )
        return
    session = server.create_session(
        stateless=True, revision=envelope.revision.name, transport="streamable_http"
    )
    stream = _LazyStream(send, keepalive_interval)
    serving = session.serve_stateless(msg, stream, auth_info, envelope)
    try:
        # The first step, in this task: most requests end in it, and need no
        # disconnect watcher (nor its timer).
        pending = serving.send(None)
    except StopIteration as done:
        response = done.value
        stream.stop()
    except BaseException:
        stream.stop()
        raise
    else:
        watch = DisconnectWatch(receive, session, rid)
        timer = asyncio.get_running_loop().call_later(WATCH_AFTER_S, watch.start)
        try:
            response = await _continue_in_task(serving, pending)
        finally:
            timer.cancel()
            stream.stop()
            fired = await watch.stop()
        if fired:
            return  # the client closed the stream: nobody to answer
    if response is not None and type(rid) is int:
        response["id"] = wire_id(rid)  # exact digits beyond 64 bits
    try:
        await stream.finish(response)
    except ClientGone:
        return


_T = TypeVar("_T")


@types.coroutine
def _continue_in_task(coro: Coroutine[Any, Any, _T], pending: Any) -> Generator[Any, Any, _T]:
    """Await the rest of ``coro``, whose first step already ran in this task and yielded
    ``pending``: what ``await coro`` would have done from there (same task, so context
    variables and anyio cancel scopes stay where they were)."""
    while True:
        try:
            sent = yield pending
        except BaseException as exc:  # cancellation reaches the coroutine, as with await
            try:
                pending = coro.throw(exc)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
        else:
            try:
                pending = coro.send(sent)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]


class DisconnectWatch:
    """The watcher of one request, started late (``WATCH_AFTER_S``) or never.

    ``rid`` None watches a whole sessionless POST (a batch): a disconnect closes the
    session, which cancels everything in it.
    """

    __slots__ = ("_receive", "_rid", "_session", "_task")

    def __init__(self, receive: Receive, session: ServerSession, rid: Any) -> None:
        self._receive = receive
        self._session = session
        self._rid = rid
        self._task: asyncio.Future[bool] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(
            _watch_disconnect(self._receive, self._session, self._rid)
        )

    async def stop(self) -> bool:
        """Stop watching; True if the client had gone (and the request was cancelled)."""
        task = self._task
        if task is None:
            return False
        # Bounded, cancelling again (a cancellation can be lost on Python 3.11), and never
        # swallowing this request's own cancellation (loops.cancel_and_wait).
        await cancel_and_wait(task, timeout=STOP_WATCH_S, what="the disconnect watcher")
        return task.done() and not task.cancelled() and task.result() is True


async def _watch_disconnect(receive: Receive, session: ServerSession, rid: Any) -> bool:
    """Cancel request ``rid`` when the client disconnects (closing the stream cancels)."""
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            if rid is None:
                session.close()
            else:
                session.cancel(rid, "the client closed the response stream")
            return True
