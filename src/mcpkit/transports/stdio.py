"""The stdio transport: newline-delimited JSON-RPC on stdin/stdout.

2025-11-25 basic/transports § stdio: the client launches the server as a
subprocess; each message is one line of UTF-8 JSON without embedded newlines;
the server MUST NOT write anything to stdout that is not an MCP message, and
MAY log to stderr. Lifecycle § shutdown (stdio): the client closes the
server's stdin, then escalates to SIGTERM and SIGKILL. So the server exits
with status 0 on stdin EOF and on SIGTERM (and on SIGINT, for people at a
terminal); a request still running then (after ``shutdown_grace`` on EOF, at
once on a signal) is first answered with the JSON-RPC error ``SHUTTING_DOWN``.

One process is one session. The hot path is deliberately flat: bytes from the
pipe → split at ``\\n`` → ``orjson.loads`` → one task per request (so a tool
awaiting an elicitation answer or being cancelled never blocks the reader) →
``orjson.dumps`` → one ``write`` on the pipe transport. There is no queue, no
lock and no ``drain`` per message: a single event-loop thread owns the pipe,
and only notifications sent while the transport's buffer is over its
high-water mark wait for the client to catch up. One ordering wait: a
response whose request sent notifications is written once the client has
read them (:meth:`StdioConnection._let_client_read`), which the official
TypeScript SDK's client needs to see the last progress of a call.

Backpressure: a client that stops reading stdout must not make the server
buffer answers without bound. Once more than ``max_buffered_output`` bytes
wait in the pipe transport, the server stops reading stdin and leaves the
lines it already read undispatched until the client has read the buffer down
to a quarter of that mark; the client's own writes then block in the pipe.
What can still be buffered is the answers of requests already running when
the output backed up (at most ``MAX_IN_FLIGHT``), each written whole.

To keep stdout clean, serving on the process's own stdio moves the protocol to
private copies of fds 0 and 1, points fd 1 at stderr (stray ``print`` calls,
C extensions and child processes then land on stderr) and fd 0 at
``/dev/null`` (a child process can no longer swallow protocol bytes), and sets
``sys.stdout`` to ``sys.stderr``. Everything is put back when serving ends.
That plumbing lives in :mod:`mcpkit.stdio_process`.

No keep-alive is written, for either era (a 2026-07-28 ``subscriptions/listen``
included): the pipe has no proxy or load balancer to time out an idle
connection, and a message that is not JSON-RPC would break the one-message-per-line
rule. HTTP's SSE streams get ``: ping`` comments instead (:mod:`.streamable_http_stateless`).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import weakref
from collections import deque
from collections.abc import Coroutine
from typing import IO, TYPE_CHECKING, Any, Final, cast

import orjson

from ..errors import INTERNAL_ERROR, INVALID_REQUEST, ConfigurationError, ConnectionClosed
from ..framing import MAX_LINE_SIZE, LineSplitter, Oversized
from ..loops import cancel_and_wait, new_event_loop
from ..protocol import jsonrpc
from ..protocol.jsonrpc import Kind
from ..server.request import stop_for_shutdown
from ..stdio_process import (
    DaemonExecutor,
    Output,
    Reader,
    StreamArg,
    claim_process_stdio,
    given_streams,
    install_signal_handlers,
    open_input,
    open_output,
)

if TYPE_CHECKING:
    from ..server.server import MCPServer
    from ..server.session import ServerSession

__all__ = [
    "MAX_BUFFERED_OUTPUT",
    "MAX_MESSAGE_SIZE",
    "LineSplitter",
    "Oversized",
    "StdioConnection",
    "run_stdio",
    "serve_stdio",
]

log = logging.getLogger("mcpkit.transports.stdio")

#: Longest line accepted (bytes). Longer lines are discarded and answered with an error
#: (the bounded splitting is :mod:`mcpkit.framing`, shared with the client).
MAX_MESSAGE_SIZE: Final = MAX_LINE_SIZE
#: Requests served at once before the reader pauses (memory bound for a flooding client).
MAX_IN_FLIGHT: Final = 4096
#: Bytes of output buffered for a slow client before the server stops reading input.
MAX_BUFFERED_OUTPUT: Final = 4 * 1024 * 1024
#: Lines of one read dispatched per event-loop iteration (see StdioConnection._catch_up).
_BATCH: Final = 64
#: Longest a response waits for the client to read its request's notifications (see
#: StdioConnection._let_client_read), and the pause where that cannot be observed.
_READ_WAIT: Final = 1.0
_BLIND_WAIT: Final = 0.002
_MAX_PAUSE: Final = 0.005
_DUMP_OPTIONS: Final = orjson.OPT_APPEND_NEWLINE
_LEFTOVER_WAIT: Final = 2.0  # seconds run_stdio waits for tasks left when serving ended


# -- the connection -------------------------------------------------------------------------------


class StdioConnection(asyncio.Protocol):
    """Drives one :class:`ServerSession` from a byte stream in and a byte stream out.

    What ``server.stdio_transport`` is while :func:`serve_stdio` serves: ``session``
    is the process's one session, ``send(message)`` writes a message to the client.
    """

    def __init__(
        self, server: MCPServer, *, max_message_size: int, max_buffered_output: int
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._splitter = LineSplitter(max_message_size)
        self._max_size = max_message_size
        self._max_output = max_buffered_output
        self._out: Output | None = None
        self._in: Reader | None = None
        self._reading_paused = False
        self._too_many_tasks = False  # reading paused for MAX_IN_FLIGHT
        # Lines read but not dispatched yet (from one read at most): stdout is backed up.
        self._holding = False  # reading paused until the backlog is served
        self._backlog: deque[bytes | bytearray | Oversized] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self._streams: weakref.WeakSet[asyncio.Task[None]] = weakref.WeakSet()
        self._stopped: asyncio.Future[str] = self._loop.create_future()
        self._signalled: asyncio.Future[None] = self._loop.create_future()
        self._eof = False
        # Messages `send` wrote, and how many of them the client was last seen to have read.
        self._sent = 0
        self._seen = 0
        self.session: ServerSession = server.create_session(standalone=self.send, transport="stdio")
        # Bound once: read per message, and a bound method is made anew at each lookup.
        self._receive = self.session.receive
        self._defer = self._loop.call_soon

    # -- inbound (asyncio.Protocol) -----------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._in = cast(Reader, transport)

    def data_received(self, data: bytes) -> None:
        splitter = self._splitter
        if self._holding:  # a reader that cannot pause (a file) keeps delivering
            self._backlog.extend(splitter.feed(data))
        elif splitter.whole_line(data):  # the common case: one read, one message
            self._dispatch(data)
            out = self._out
            if out is not None and out.paused:
                self._hold_input(True)
        else:
            self._backlog.extend(splitter.feed(data))
            self._catch_up()

    def _catch_up(self) -> None:
        """Dispatch the lines read but not served yet, while stdout keeps up.

        At most ``_BATCH`` per loop iteration: without eager tasks (Python
        3.11) a request writes its answer only on the next iteration, so a
        whole read's worth of requests (thousands) would be answered before
        the output could be seen backing up.
        """
        out = self._out
        if out is None or out.lost:
            return
        backlog = self._backlog
        budget = _BATCH
        while backlog and budget and not out.paused:
            self._dispatch(backlog.popleft())
            budget -= 1
        if backlog or out.paused:
            self._hold_input(True)  # until the client has read (Output.on_resume)
            if not out.paused:
                self._loop.call_soon(self._catch_up)  # after the batch's first steps
        else:
            self._hold_input(False)

    def _output_resumed(self) -> None:
        """The client read stdout down to the low-water mark (``Output.on_resume``)."""
        if self._holding:
            # Not from inside the transport's write callback: on the next iteration.
            self._loop.call_soon(self._catch_up)

    def _hold_input(self, hold: bool) -> None:
        if hold is not self._holding:
            self._holding = hold
            self._update_reading()

    def _update_reading(self) -> None:
        paused = self._too_many_tasks or self._holding
        if paused is self._reading_paused or self._in is None:
            return
        self._reading_paused = paused
        if paused:
            self._in.pause_reading()
        else:
            self._in.resume_reading()

    def eof_received(self) -> bool | None:
        self._end_of_input()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            log.debug("stdin failed: %s", exc)
        self._end_of_input()

    def _end_of_input(self) -> None:
        if self._eof:
            return
        self._eof = True
        # Lines held back for a backed-up stdout are served now: the client has sent
        # everything, so what is left to buffer is bounded by what was read.
        backlog = self._backlog
        backlog.extend(self._splitter.close())
        while backlog:
            self._dispatch(backlog.popleft())
        self._stop("eof")

    def _dispatch(self, line: bytes | bytearray | Oversized) -> None:
        if isinstance(line, Oversized):
            log.error("dropped a %d-byte message: the limit is %d bytes", line.size, self._max_size)
            self._write(
                jsonrpc.error_response(
                    None,
                    INVALID_REQUEST,
                    f"Invalid request: message of {line.size} bytes exceeds the "
                    f"{self._max_size}-byte limit",
                )
            )
            return
        try:
            msg = jsonrpc.exact_ids(orjson.loads(line), line)
        except orjson.JSONDecodeError as exc:
            if line.strip():  # blank lines between messages are tolerated
                self._write(jsonrpc.parse_error(str(exc)))
            return
        # Notifications and answers to our requests run (deferred by receive) after the
        # tasks of the requests read before them took their first step, so
        # `notifications/cancelled` finds a request that was just read, as if sequential.
        kind = self._receive(msg, self._defer)
        if kind is Kind.REQUEST:
            task = self._spawn(self._serve_request(msg))
            if task is not None and msg.get("method") == "subscriptions/listen":
                self._streams.add(task)  # long-lived: not waited for at EOF
        elif kind is Kind.BATCH:
            self._spawn(self._serve_batch(msg))
        elif kind is Kind.INVALID:
            self._write(jsonrpc.invalid_request(msg))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        task = _start_task(self._loop, coro)
        if task.done():  # ran to completion eagerly: answered already
            return None
        self._tasks.add(task)
        if len(self._tasks) >= MAX_IN_FLIGHT and not self._too_many_tasks:
            self._too_many_tasks = True
            self._update_reading()
        return task

    def _finished(self) -> None:
        # Called from the task itself rather than as a done callback: that would cost
        # one more event-loop iteration per request.
        task = asyncio.current_task()
        if task is not None:
            self._tasks.discard(task)
        if self._too_many_tasks and len(self._tasks) <= MAX_IN_FLIGHT // 2:
            self._too_many_tasks = False
            self._update_reading()

    async def _serve_request(self, msg: dict[str, Any]) -> None:
        sent = self._sent
        try:
            response = await self.session.serve(msg, self.send)
            if self._sent != sent and self._seen != self._sent and response is not None:
                await self._let_client_read()
        except Exception:  # the session maps handler errors itself; this guards the transport
            log.exception("serving %s failed", msg.get("method"))
            response = jsonrpc.error_response(msg["id"], INTERNAL_ERROR, "Internal error")
        finally:
            self._finished()
        if response is not None:
            self._write(response)

    async def _serve_batch(self, batch: list[Any]) -> None:
        sent = self._sent
        try:
            responses = await self.session.serve_batch(batch, self.send)
            if self._sent != sent and self._seen != self._sent and responses:
                await self._let_client_read()
        except Exception:
            log.exception("serving a batch failed")
            responses = jsonrpc.error_response(None, INTERNAL_ERROR, "Internal error")
        finally:
            self._finished()
        if responses:  # an empty list: the batch held only notifications and responses
            self._write(responses)

    # -- outbound -----------------------------------------------------------------------------
    def _write(self, message: Any) -> None:
        """Write a response (never raises: an unserialisable result becomes an error)."""
        out = self._out
        if out is None or out.lost:
            return
        try:
            data = jsonrpc.dumps(message, _DUMP_OPTIONS)
        except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
            log.error("could not serialise a response: %s", exc)
            rid = message.get("id") if type(message) is dict else None
            data = orjson.dumps(
                jsonrpc.error_response(rid, INTERNAL_ERROR, "Internal error: result is not JSON"),
                option=_DUMP_OPTIONS,
            )
        out.write(data)

    async def send(self, message: dict[str, Any]) -> None:
        """The session's ``send``: notifications and server→client requests."""
        out = self._out
        if out is None or out.lost:
            raise ConnectionClosed("stdout is closed")
        out.write(jsonrpc.dumps(message, _DUMP_OPTIONS))
        self._sent += 1
        if out.paused:
            await out.drain()

    async def _let_client_read(self) -> None:
        """Wait until the client has read what was sent while this request was served.

        The official TypeScript SDK's client hands a notification to its handler in a
        microtask but settles a response at once, forgetting the request's progress
        callback; within one read of stdout every line is dispatched before any
        microtask runs, so a request's last ``notifications/progress`` read together
        with its response finds no callback and is lost. Node.js runs the microtasks
        after each read's callback, so a response that reaches stdout only once the
        client has taken everything before it out of the pipe is read on its own, after
        the progress handler ran. Only a response whose request saw ``send`` write
        something the client was not yet seen to read waits; others are written at once.

        Bounded by ``_READ_WAIT`` (1 s: room for a client that a loaded machine keeps
        from running): a client that does not read stdout meanwhile gets the response
        queued behind the rest, as before. Output that stays backed up costs little
        here: a response written into it would be read after all of it anyway. Where
        reading cannot be observed (outside Linux) a short pause stands in.
        """
        out = self._out
        if out is None:
            return
        loop = self._loop
        deadline = loop.time() + _READ_WAIT
        pause = 0.0  # the first check after one loop iteration; then backing off
        while True:
            sent = self._sent
            read = out.all_read()
            if read is None:
                await asyncio.sleep(_BLIND_WAIT)
                return
            if read:
                self._seen = max(self._seen, sent)
                return
            if loop.time() >= deadline:
                return
            await asyncio.sleep(pause)
            pause = min(pause * 2 or _MAX_PAUSE / 8, _MAX_PAUSE)

    # -- lifecycle ----------------------------------------------------------------------------
    def _stop(self, reason: str) -> None:
        if not self._stopped.done():
            self._stopped.set_result(reason)

    def _on_signal(self, name: str) -> None:
        if not self._signalled.done():
            self._signalled.set_result(None)
        self._stop(name)

    def _output_lost(self) -> None:
        self._stop("stdout closed")

    async def run(
        self,
        in_file: IO[bytes],
        out_file: IO[bytes],
        *,
        shutdown_grace: float,
        handle_signals: bool,
    ) -> None:
        loop = self._loop
        restore = None
        try:
            self._out = await open_output(
                loop, out_file, self._output_lost, high_water=self._max_output
            )
            self._out.on_resume = self._output_resumed
            await open_input(loop, in_file, self)
            if handle_signals:
                restore = install_signal_handlers(loop, self._on_signal)
            reason = await self._stopped
            log.debug("stdio: stopping (%s)", reason)
            if reason == "eof":
                # A subscriptions/listen stream has no end of its own: the client that
                # closed stdin is done listening (2026-07-28 transports/stdio § shutdown).
                for task in self._streams:
                    task.cancel()
            if reason == "eof" and any(t not in self._streams for t in self._tasks):
                # The client closed stdin but may still read stdout: let in-flight
                # requests finish, within a bound; a signal cuts the wait short.
                all_done = loop.create_task(asyncio.wait(set(self._tasks)))
                either: set[asyncio.Future[Any]] = {all_done, self._signalled}
                await asyncio.wait(
                    either, timeout=shutdown_grace, return_when=asyncio.FIRST_COMPLETED
                )
                all_done.cancel()
        finally:
            if restore is not None:
                restore()
            # Still running after the grace (EOF) or at a signal: each request answers that
            # the server is shutting down, so a client still reading can retry elsewhere.
            running = [t for t in self._tasks if t not in self._streams and not t.done()]
            for task in running:
                stop_for_shutdown(task)
            if running:
                await asyncio.wait(running, timeout=1.0)
            self.session.close()  # cancels what is left; it answers nothing
            if self._tasks:
                await asyncio.wait(set(self._tasks), timeout=1.0)
                for task in self._tasks:
                    task.cancel()
            if self._in is not None:
                self._in.close()
            if self._out is not None:
                await self._out.aclose(timeout=2.0)


if sys.version_info >= (3, 12):

    def _start_task(
        loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None]
    ) -> asyncio.Task[None]:
        # Eager start: the request runs at once, inside the read callback, up to its
        # first real suspension; a request that never suspends (tools/list, a quick
        # tool) is answered without another trip through the event loop.
        return asyncio.Task(coro, loop=loop, eager_start=True)

else:

    def _start_task(
        loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None]
    ) -> asyncio.Task[None]:
        return loop.create_task(coro)


# -- entry points ---------------------------------------------------------------------------------


async def serve_stdio(
    server: MCPServer,
    *,
    stdin: StreamArg = None,
    stdout: StreamArg = None,
    shutdown_grace: float = 2.0,
    handle_signals: bool = True,
    max_message_size: int = MAX_MESSAGE_SIZE,
    max_buffered_output: int = MAX_BUFFERED_OUTPUT,
) -> None:
    """Serve one session over stdio until stdin closes, stdout breaks, or SIGTERM/SIGINT.

    ``stdin``/``stdout`` default to the process's own (claimed as described in
    the module docstring); pass binary files or fds to serve other streams.
    On stdin EOF, requests still running get ``shutdown_grace`` seconds to
    answer before the session is closed; those still running then (or at a
    signal) are answered with the JSON-RPC error ``SHUTTING_DOWN``. ``max_message_size`` bounds an
    incoming line; ``max_buffered_output`` is how many bytes of output may wait
    for a client that does not read before input is no longer read (see the
    module docstring).
    """
    if max_message_size < 1 or max_buffered_output < 1:
        raise ConfigurationError(
            f"max_message_size ({max_message_size}) and max_buffered_output "
            f"({max_buffered_output}) must be positive byte counts"
        )
    claim = (
        claim_process_stdio() if stdin is None and stdout is None else given_streams(stdin, stdout)
    )
    with claim as (in_file, out_file):
        # The application lifespan (MCPServer(lifespan=...)) is open before the first
        # message is read and closed after the session ends; a failure to start stops here.
        async with server.lifespan_context():
            conn = StdioConnection(
                server, max_message_size=max_message_size, max_buffered_output=max_buffered_output
            )
            # server.stdio_transport, until the session has ended (see server/running.py).
            server.register_transport("stdio", conn)
            try:
                await conn.run(
                    in_file, out_file, shutdown_grace=shutdown_grace, handle_signals=handle_signals
                )
            finally:
                server.unregister_transport("stdio", conn)


def run_stdio(server: MCPServer, **options: Any) -> None:
    """Run :func:`serve_stdio` on a new event loop (uvloop when installed); blocks.

    Sync tools run on a :class:`~mcpkit.stdio_process.DaemonExecutor`,
    so a tool still running in a thread does not hold the process once serving
    has ended.
    """
    loop = new_event_loop()
    executor = DaemonExecutor()
    loop.set_default_executor(executor)
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(serve_stdio(server, **options))
    finally:
        executor.shutdown(wait=False, cancel_futures=True)
        try:
            leftovers = asyncio.all_tasks(loop)
            if leftovers:
                # Bounded: a cancellation can be lost on Python 3.11 (loops.cancel_and_wait),
                # and the process must still exit.
                stopping = cancel_and_wait(*leftovers, timeout=_LEFTOVER_WAIT, what="stdio")
                loop.run_until_complete(stopping)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
