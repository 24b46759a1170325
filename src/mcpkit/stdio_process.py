"""The process side of stdio: which fds carry the protocol, and how to read and write them.

Both the server's stdio transport (:mod:`mcpkit.transports.stdio`) and the
client's (:mod:`mcpkit.client.transports.stdio`) use it, so it is a leaf module
below both: it imports nothing of mcpkit.

* :func:`claim_process_stdio` takes fds 0 and 1 for the protocol (see
  :mod:`mcpkit.transports.stdio`) and puts everything back afterwards.
* Pipes, sockets and terminals are polled by the event loop
  (:class:`PipeOutput` and ``connect_read_pipe``); anything else (a regular
  file, ``/dev/null``, Windows consoles) gets a :class:`ReaderThread` and
  :class:`BlockingOutput`.
* :class:`DaemonExecutor` runs sync tools in threads that do not keep a
  stopping server alive (lifecycle § shutdown: the client expects the process
  to go on SIGTERM, not after its slowest tool returns).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import queue
import signal
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any, Final, Protocol, TypeVar, cast

__all__ = [
    "BlockingOutput",
    "DaemonExecutor",
    "Output",
    "PipeOutput",
    "Reader",
    "ReaderThread",
    "SelectorReader",
    "StreamArg",
    "claim_process_stdio",
    "given_streams",
    "install_signal_handlers",
    "is_pollable",
    "open_input",
    "open_output",
    "unread_probe",
]

log = logging.getLogger("mcpkit.transports.stdio")

_READ_CHUNK: Final = 1 << 18
T = TypeVar("T")

StreamArg = IO[Any] | int | None

# -- output ---------------------------------------------------------------------------------------


class Output(Protocol):
    """Where protocol bytes go: ``write`` never blocks the loop for long; ``drain``
    waits while the client is behind. ``paused`` is set while more than the
    high-water mark is buffered; ``on_resume`` (when set) is called once it
    drops back to the low-water mark. ``all_read()`` says whether the reader has
    taken every byte written so far (None: that cannot be observed here)."""

    paused: bool
    lost: bool
    on_resume: Callable[[], None] | None

    def write(self, data: bytes) -> None: ...
    def all_read(self) -> bool | None: ...
    async def drain(self) -> None: ...
    async def aclose(self, timeout: float) -> None: ...


class PipeOutput(asyncio.BaseProtocol):
    """Write side on a pipe transport: asyncio writes at once and buffers the rest.

    ``paused`` follows the transport's ``pause_writing``/``resume_writing``,
    and is also set as soon as ``high_water`` bytes were written since the
    output last settled: uvloop queues writes until the end of the loop
    iteration and only then pauses its protocol, so one read callback could
    otherwise buffer any number of answers. On the next iteration the output
    settles: still paused if the transport paused it, else resumed at once.
    """

    def __init__(
        self, on_lost: Callable[[], None], high_water: int = 64 * 1024, *, fd: int | None = None
    ) -> None:
        self.paused = False
        self.lost = False
        self.on_resume: Callable[[], None] | None = None
        self._on_lost = on_lost
        self._high_water = high_water
        self._written = 0  # bytes written since the output last settled
        self._transport_paused = False
        self._transport: asyncio.WriteTransport | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self._loop = asyncio.get_running_loop()
        self._closed = self._loop.create_future()
        self._unread = unread_probe(fd) if fd is not None else None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio's ABCs: no isinstance check.
        self._transport = cast(asyncio.WriteTransport, transport)
        self._transport.set_write_buffer_limits(high=self._high_water)

    def pause_writing(self) -> None:
        self._transport_paused = True
        self.paused = True

    def resume_writing(self) -> None:
        self._transport_paused = False
        self._resume()

    def _settle(self) -> None:
        self._written = 0
        if self.paused and not self._transport_paused:
            self._resume()

    def _resume(self) -> None:
        if not self.paused:
            return
        self.paused = False
        self._wake()
        if self.on_resume is not None and not self.lost:
            self.on_resume()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.paused = False
        self._wake()
        if not self._closed.done():
            self._closed.set_result(None)
        self._on_lost()

    def _wake(self) -> None:
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)
        self._waiters.clear()

    def write(self, data: bytes) -> None:
        if not self.lost and self._transport is not None:
            self._transport.write(data)
            self._written += len(data)
            if self._written >= self._high_water and not self.paused:
                self.paused = True
                self._loop.call_soon(self._settle)

    def all_read(self) -> bool | None:
        if self.lost:
            return True  # nothing written is waiting any more
        unread = self._unread
        if unread is None or self._transport is None:
            return None
        try:
            return not self._transport.get_write_buffer_size() and unread() == 0
        except OSError:
            return None

    async def drain(self) -> None:
        while self.paused and not self.lost:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            await fut

    async def aclose(self, timeout: float) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()  # flushes what is buffered, then closes
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for can drop the caller's
        # cancellation as the wait completes (CPython gh-86296).
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await asyncio.shield(self._closed)
        if self._transport is not None and not self.lost:
            self._transport.abort()


class BlockingOutput:
    """For stdout that is not a pipe (a file, ``/dev/null``, a terminal; Windows): plain writes."""

    def __init__(self, file: IO[bytes], on_lost: Callable[[], None]) -> None:
        self.paused = False  # writes block instead: never paused
        self.lost = False
        self.on_resume: Callable[[], None] | None = None
        self._file = file
        self._fd = file.fileno()
        self._on_lost = on_lost

    def write(self, data: bytes) -> None:
        if self.lost:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            log.debug("stdout write failed: %s", exc)
            self.lost = True
            self._on_lost()

    def all_read(self) -> bool | None:
        # Writes block until the kernel took them; a file or a terminal has no reader to
        # race, but a Windows pipe does, and there its reading is not observed.
        return None if sys.platform == "win32" else True

    async def drain(self) -> None:
        return None

    async def aclose(self, timeout: float) -> None:
        self.lost = True
        self._file.close()


if sys.platform == "linux":
    import array
    import fcntl
    import termios

    def unread_probe(fd: int) -> Callable[[], int] | None:
        """A function returning how much of what was written to ``fd`` its reader has not
        read yet, zero once it read everything; None for other kinds of fd.

        A pipe's ``FIONREAD`` counts the bytes in it, from either end. A socket's
        ``SIOCOUTQ`` (``TIOCOUTQ``, unix(7)) counts the memory its unread data holds
        (bytes plus overhead: only zero is exact). A host on Node.js gives its child a
        socketpair for stdout (libuv), one on Python's subprocess a pipe.
        """
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode):
            request = termios.FIONREAD
        elif stat.S_ISSOCK(mode):
            request = termios.TIOCOUTQ
        else:
            return None
        buf = array.array("i", [0])

        def unread() -> int:
            fcntl.ioctl(fd, request, buf, True)
            return buf[0]

        return unread

else:

    def unread_probe(fd: int) -> Callable[[], int] | None:
        """Unread bytes are only observed on Linux (see its twin above)."""
        return None


def is_pollable(fd: int) -> bool:
    """Can the event loop poll this fd? (pipes, sockets, terminals; not files or /dev/null)."""
    if sys.platform == "win32":
        return False
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


async def open_output(
    loop: asyncio.AbstractEventLoop,
    file: IO[bytes],
    on_lost: Callable[[], None],
    *,
    high_water: int | None = None,
) -> Output:
    """An :class:`Output` for ``file``; ``on_lost`` is called when the client goes away.

    ``high_water``: bytes buffered before the output counts as backed up
    (``paused``); None: 64 KiB, the event loop's default.
    """
    fd = file.fileno()
    # Not for terminals: uvloop's write transport takes "readable" for "closed", and
    # a terminal is readable whenever someone types. Blocking writes suit a person.
    if is_pollable(fd) and not os.isatty(fd):
        size = high_water if high_water is not None else 64 * 1024
        _, protocol = await loop.connect_write_pipe(lambda: PipeOutput(on_lost, size, fd=fd), file)
        return protocol
    return BlockingOutput(file, on_lost)


# -- input ----------------------------------------------------------------------------------------


class Reader(Protocol):
    """The read side as the connection sees it (an asyncio read transport fits)."""

    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...
    def close(self) -> None: ...


async def open_input(
    loop: asyncio.AbstractEventLoop, file: IO[bytes], protocol: asyncio.Protocol
) -> Reader:
    """Start feeding ``protocol`` from ``file``; it gets ``connection_made(reader)`` first."""
    reader: Reader
    if not is_pollable(file.fileno()):
        reader = ReaderThread(loop, file, protocol)
    elif isinstance(loop, asyncio.selector_events.BaseSelectorEventLoop):
        reader = SelectorReader(loop, file, protocol)
    else:  # uvloop: its pipe transport reads into one preallocated buffer already
        transport, _ = await loop.connect_read_pipe(lambda: protocol, file)
        return cast(Reader, transport)
    protocol.connection_made(cast(asyncio.BaseTransport, reader))
    return reader


class SelectorReader:
    """Reads a pipe on asyncio's own event loop into one reused buffer.

    asyncio's pipe transport allocates a fresh 256 KiB ``bytes`` for every
    read and shrinks it to the bytes read. glibc's malloc then hands the freed
    top of the heap back to the kernel and takes it again on the next read:
    page faults on every message, measured as costing as much as the rest of
    a request. Reading into a buffer kept for the connection's lifetime
    avoids it; only the bytes actually read are copied out.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, file: IO[bytes], protocol: asyncio.Protocol
    ) -> None:
        self._loop = loop
        self._file = file
        self._fd = file.fileno()
        self._protocol = protocol
        self._buffer = bytearray(_READ_CHUNK)
        self._view = memoryview(self._buffer)
        self._reading = True
        self._closed = False
        os.set_blocking(self._fd, False)
        loop.add_reader(self._fd, self._ready)

    def _ready(self) -> None:
        try:
            n = os.readv(self._fd, [self._buffer])
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.close()
            self._protocol.connection_lost(exc)
            return
        if n:
            self._protocol.data_received(bytes(self._view[:n]))
        else:
            self.close()
            self._protocol.eof_received()
            self._protocol.connection_lost(None)

    def pause_reading(self) -> None:
        if self._reading and not self._closed:
            self._reading = False
            self._loop.remove_reader(self._fd)

    def resume_reading(self) -> None:
        if not self._reading and not self._closed:
            self._reading = True
            self._loop.add_reader(self._fd, self._ready)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._reading:
            self._loop.remove_reader(self._fd)
        self._view.release()
        self._file.close()


class ReaderThread:
    """Reads a non-pollable stdin (a regular file, ``/dev/null``; Windows) in a thread."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, file: IO[bytes], protocol: asyncio.Protocol
    ) -> None:
        self._loop = loop
        self._fd = os.dup(file.fileno())  # the thread's own: nobody closes it under a blocked read
        self._protocol = protocol
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="mcpkit-stdin", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        fd = self._fd
        buffer = bytearray(_READ_CHUNK)  # reused, as in SelectorReader
        try:
            while not self._stopping:
                n = os.readv(fd, [buffer])
                if not n:
                    break
                self._loop.call_soon_threadsafe(self._protocol.data_received, bytes(buffer[:n]))
        except (OSError, RuntimeError) as exc:  # RuntimeError: the loop is closed
            log.debug("stdin reader stopped: %s", exc)
        finally:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._protocol.eof_received)
            os.close(fd)

    def pause_reading(self) -> None:
        pass  # a file or /dev/null: bounded input, nothing to hold back

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        self._stopping = True


def install_signal_handlers(
    loop: asyncio.AbstractEventLoop, stop: Callable[[str], None]
) -> Callable[[], None] | None:
    """SIGTERM and SIGINT end serving cleanly (lifecycle § shutdown, stdio)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    installed: list[tuple[signal.Signals, Any]] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(sig)
        try:
            loop.add_signal_handler(sig, stop, sig.name)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, or no signal support
            continue
        installed.append((sig, previous))

    def restore() -> None:
        for sig, previous in installed:
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)
                signal.signal(sig, previous)

    return restore


# -- claiming the process's stdio -----------------------------------------------------------------


def _private_copy(fd: int, flags: int) -> int:
    """A copy of ``fd`` whose blocking mode we may change without touching fd 0/1/2.

    A terminal shares one open file description between stdin, stdout and
    stderr; reopening it gives us our own. Pipes are private to this process
    already, so a ``dup`` suffices.
    """
    if sys.platform != "win32" and os.isatty(fd):
        with contextlib.suppress(OSError):
            return os.open(os.ttyname(fd), flags | os.O_NOCTTY)
    return os.dup(fd)


@contextlib.contextmanager
def claim_process_stdio() -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    saved_in, saved_out = os.dup(0), os.dup(1)
    blocking_in, blocking_out = os.get_blocking(0), os.get_blocking(1)
    in_file = open(_private_copy(0, os.O_RDONLY), "rb", buffering=0)
    out_file = open(_private_copy(1, os.O_WRONLY), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDWR)
    python_stdout = sys.stdout
    try:
        os.dup2(devnull, 0)
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr at all
            os.dup2(devnull, 1)
        sys.stdout = sys.stderr
        if python_stdout is not None:
            with contextlib.suppress(Exception):
                python_stdout.flush()  # text printed before serving goes to stderr now
        yield in_file, out_file
    finally:
        sys.stdout = python_stdout
        in_file.close()
        out_file.close()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd, blocking in ((0, blocking_in), (1, blocking_out)):
            with contextlib.suppress(OSError):
                os.set_blocking(fd, blocking)
        for fd in (saved_in, saved_out, devnull):
            os.close(fd)


@contextlib.contextmanager
def given_streams(stdin: StreamArg, stdout: StreamArg) -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """Private copies of caller-given streams (the transports close what they get)."""
    in_fd = stdin if isinstance(stdin, int) else (stdin.fileno() if stdin is not None else 0)
    out_fd = stdout if isinstance(stdout, int) else (stdout.fileno() if stdout is not None else 1)
    in_file = open(os.dup(in_fd), "rb", buffering=0)
    out_file = open(os.dup(out_fd), "wb", buffering=0)
    try:
        yield in_file, out_file
    finally:
        in_file.close()
        out_file.close()


# -- worker threads that let the process go -----------------------------------------------------


class DaemonExecutor(concurrent.futures.ThreadPoolExecutor):
    """A thread pool of daemon threads, for ``run_in_executor(None, ...)`` under :func:`run_stdio`.

    ``concurrent.futures.ThreadPoolExecutor`` joins its threads at interpreter
    exit, so one sync tool still sleeping would keep a server that was told to
    stop (EOF, SIGTERM) alive until the tool returns. Here threads are daemons,
    and :meth:`shutdown` without ``wait`` abandons running calls: their results
    are dropped, since nobody is left to read them.

    It subclasses ``ThreadPoolExecutor`` only because asyncio's
    ``loop.set_default_executor`` refuses anything else (a ``TypeError`` since
    Python 3.11; uvloop does not check). Every method the base class uses to make
    or join threads is replaced here; its constructor starts no thread.
    """

    def __init__(self, max_workers: int | None = None) -> None:
        super().__init__(max_workers=max_workers or min(32, (os.cpu_count() or 1) + 4))
        self._work: queue.SimpleQueue[
            tuple[concurrent.futures.Future[Any], Callable[[], Any]] | None
        ]
        self._work = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._closed = False

    def submit(
        self, fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[T]:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            future: concurrent.futures.Future[T] = concurrent.futures.Future()
            self._work.put((future, lambda: fn(*args, **kwargs)))
            if not self._idle.acquire(blocking=False) and len(self._workers) < self._max_workers:
                thread = threading.Thread(
                    target=self._worker, name=f"mcpkit-worker-{len(self._workers)}", daemon=True
                )
                thread.start()
                self._workers.append(thread)
            return future

    def _worker(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            future, call = item
            if future.set_running_or_notify_cancel():
                try:
                    result = call()
                except BaseException as exc:
                    if not self._closed:
                        future.set_exception(exc)
                else:
                    if not self._closed:
                        future.set_result(result)
            if self._closed:
                return
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            if cancel_futures:
                while True:
                    try:
                        item = self._work.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            for _ in self._workers:
                self._work.put(None)
        if wait:
            for thread in self._workers:
                thread.join()
