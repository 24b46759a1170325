"""Reading one JSON-RPC POST: content type, length, body (bounded in size and time), parse.

Streamable HTTP (:mod:`.streamable_http`, both eras) and the legacy HTTP+SSE
transport (:mod:`.sse_legacy`) take client messages the same way, so the
checks and their answers live once, here:

* ``Content-Type`` must be ``application/json`` (parameters such as
  ``charset`` allowed): else 415 (2025-11-25 basic/transports § sending
  messages to the server: the body is a JSON-RPC message).
* A ``Content-Length`` over ``max_body_size`` is refused with 413 before a
  byte is read; one that is not a number gets 400.
* The body is read as a stream and abandoned as soon as it passes
  ``max_body_size`` (413; a chunked body has no length to check first), and
  must arrive in full within ``body_timeout`` seconds (408 with
  ``Connection: close``, since the rest may still be on its way, RFC 9110
  § 15.5.9): a peer trickling or never finishing a body cannot hold a
  request open, nor make the server buffer without bound. The requests of an
  event loop reading a body share one timer (:class:`_BodyClock`): an
  ``asyncio.timeout`` per POST cost ~8 % of a whole ``tools/call``'s CPU.
* The body is parsed once with orjson, integer ids beyond 64 bits kept
  exact (:func:`~mcpkit.protocol.jsonrpc.exact_ids`); invalid JSON gets 400
  with a ``-32700`` parse error.

What the body *means* (a request, a batch, which era) is the caller's business.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any, Final

import orjson

from ..errors import (
    INVALID_REQUEST,
    PARSE_ERROR,
    BodyTimeout,
    BodyTooLarge,
    ClientGone,
    ConfigurationError,
)
from ..protocol.jsonrpc import exact_ids
from .asgi import Receive, Send, send_error

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_MAX_BODY",
    "REFUSED",
    "check_body_timeout",
    "read_body",
    "read_json_post",
]

#: Bytes per POST body unless the app is told otherwise.
DEFAULT_MAX_BODY: Final = 4 * 1024 * 1024
#: Seconds for a POST body to arrive in full unless the app is told otherwise.
DEFAULT_BODY_TIMEOUT: Final = 30.0


class _Refused:
    __slots__ = ()

    def __repr__(self) -> str:
        return "REFUSED"


#: What :func:`read_json_post` returns once it has answered the request with an error.
#: (A sentinel, not None: ``null`` is a body that parses.)
REFUSED: Final = _Refused()


def check_body_timeout(value: float | None) -> float | None:
    """``body_timeout`` as given, once it is a positive number or None."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if value is not None and (not number or value <= 0):
        raise ConfigurationError(f"body_timeout must be a positive number or None, got {value!r}")
    return value


async def read_json_post(
    receive: Receive,
    send: Send,
    headers: dict[bytes, bytes],
    *,
    max_body_size: int,
    body_timeout: float | None,
) -> Any:
    """The decoded JSON body of a POST, or :data:`REFUSED` once an error was answered.

    ``headers`` is the request's header list as a dict (lower-case names, as
    ASGI gives them). The checks and their answers are in the module docstring.
    :class:`~mcpkit.errors.ClientGone` propagates: there is nobody to answer.
    """
    ctype = headers.get(b"content-type")
    if ctype != b"application/json" and (
        ctype is None or ctype.split(b";", 1)[0].strip().lower() != b"application/json"
    ):
        await send_error(send, 415, INVALID_REQUEST, "Unsupported Media Type: use application/json")
        return REFUSED
    length = headers.get(b"content-length")
    if length is not None:
        try:
            too_big = int(length) > max_body_size
        except ValueError:
            await send_error(send, 400, INVALID_REQUEST, "Bad Request: invalid Content-Length")
            return REFUSED
        if too_big:
            await _send_too_large(send, max_body_size)
            return REFUSED
    task = asyncio.current_task()
    clock = None if body_timeout is None or task is None else _clock(body_timeout)
    try:
        # read_body's work, written out: one coroutine level less on every POST.
        if clock is None:
            body = await _read_body(receive, max_body_size)
        else:
            assert task is not None
            clock.start(task)
            try:
                body = await _read_body(receive, max_body_size)
            except asyncio.CancelledError:
                if not clock.timed_out(task):
                    raise
                raise TimeoutError from None
            finally:
                clock.stop(task)
    except BodyTooLarge:
        await _send_too_large(send, max_body_size)
        return REFUSED
    except TimeoutError:
        # Connection: close, since the rest of the body may still be on its way.
        await send_error(
            send,
            408,
            INVALID_REQUEST,
            f"Request Timeout: the request body did not arrive within {body_timeout or 0:g} s",
            [(b"connection", b"close")],
        )
        return REFUSED
    try:
        return exact_ids(orjson.loads(body), body)
    except orjson.JSONDecodeError as exc:
        await send_error(send, 400, PARSE_ERROR, f"Parse error: {exc}")
        return REFUSED


async def _send_too_large(send: Send, limit: int) -> None:
    await send_error(send, 413, INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes")


async def read_body(receive: Receive, limit: int, timeout: float | None = None) -> bytes:
    """The request body, read as a stream and abandoned as soon as it passes ``limit``
    (:class:`~mcpkit.errors.BodyTooLarge`); ``timeout`` bounds the whole read
    (:class:`~mcpkit.errors.BodyTimeout`)."""
    task = asyncio.current_task()
    if timeout is None or task is None:
        return await _read_body(receive, limit)
    clock = _clock(timeout)
    clock.start(task)
    try:
        return await _read_body(receive, limit)
    except asyncio.CancelledError:
        if not clock.timed_out(task):
            raise
        raise BodyTimeout from None
    finally:
        clock.stop(task)


async def _read_body(receive: Receive, limit: int) -> bytes:
    message = await receive()
    if message["type"] != "http.request":
        raise ClientGone
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):  # the common case: one chunk
        if len(body) > limit:
            raise BodyTooLarge
        return body
    chunks = [body]
    size = len(body)
    while True:
        if size > limit:
            raise BodyTooLarge
        message = await receive()
        if message["type"] != "http.request":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    if size > limit:
        raise BodyTooLarge
    return b"".join(chunks)


class _BodyClock:
    """The tasks of one event loop reading a body within the same ``timeout``, and one
    timer for all of them.

    A task is added with its deadline and removed when its read ends. The timer is set
    for the earliest deadline: the first task in the dict, since one timeout makes the
    deadlines follow the order of insertion. When it fires, every task past its deadline
    is cancelled and marked (the reader turns that cancellation into a timeout,
    as ``asyncio.timeout`` does, unless the task was cancelled by someone else as well),
    and the timer is set again for the next one. A read that ends leaves the timer as it
    is: it fires at most once per ``timeout`` for nothing.
    """

    __slots__ = ("_expired", "loop", "reading", "timeout", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float) -> None:
        self.loop = loop
        self.timeout = timeout
        self.reading: dict[asyncio.Task[Any], float] = {}
        self._expired: set[asyncio.Task[Any]] = set()
        self.timer: asyncio.TimerHandle | None = None

    def start(self, task: asyncio.Task[Any]) -> None:
        deadline = self.loop.time() + self.timeout
        self.reading[task] = deadline
        if self.timer is None:
            self.timer = self.loop.call_at(deadline, self._sweep)

    def stop(self, task: asyncio.Task[Any]) -> None:
        self.reading.pop(task, None)
        if self._expired:
            self._expired.discard(task)

    def timed_out(self, task: asyncio.Task[Any]) -> bool:
        """Was ``task`` cancelled for its deadline, and by nobody else? The clock's
        cancellation is taken back (``Task.uncancel``) when it was."""
        return task in self._expired and task.uncancel() == 0

    def _sweep(self) -> None:
        self.timer = None
        now = self.loop.time()
        reading = self.reading
        while reading:
            task = next(iter(reading))
            deadline = reading[task]
            if deadline > now:
                self.timer = self.loop.call_at(deadline, self._sweep)
                return
            del reading[task]
            self._expired.add(task)
            task.cancel()


_CLOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[float, _BodyClock]] = (
    weakref.WeakKeyDictionary()
)


def _clock(timeout: float) -> _BodyClock:
    """The running loop's clock for ``timeout``."""
    loop = asyncio.get_running_loop()
    clocks = _CLOCKS.get(loop)
    if clocks is None:
        clocks = _CLOCKS[loop] = {}
    clock = clocks.get(timeout)
    if clock is None:
        clock = clocks[timeout] = _BodyClock(loop, timeout)
    return clock
