"""stdio client transport: spawn the server, speak newline-delimited JSON on its pipes.

2025-11-25 basic/transports § stdio: messages are JSON-RPC, one per line, on
the server's stdin/stdout; the server may log to stderr; to shut down the
client closes stdin, waits for the process to exit, then SIGTERM, then SIGKILL.

Beyond the spec, for production use:

* The server runs in a new process group and shutdown signals the whole group,
  so helpers it started (``npx`` → ``node``, shells) go too: no orphans. When the
  server dies on its own, what is left of its group is stopped at once. The
  event loop's child watcher reaps it: no zombies. An ``atexit`` hook kills the
  groups of transports the application forgot to close.
* The pipes are connected to the event loop directly, so each stdout chunk is
  split and decoded in the callback that read it and pushed straight to the
  session: no reader task, no queue, and not the extra ``call_soon`` hop per
  chunk that ``loop.subprocess_exec`` adds. On asyncio's own loop the pipe is
  read into one buffer kept for the connection (the server's
  :class:`~mcpkit.stdio_process.SelectorReader`): asyncio's pipe
  transport allocates a fresh 256 KiB ``bytes`` per read, which glibc maps and
  unmaps every time (three system calls and a page fault, measured at ~17 us
  per read: a third of a whole round trip's client CPU). uvloop's pipe
  transport already reads into a preallocated buffer and is used as is. The
  exit is watched with a pidfd (Linux), else by a thread blocked in ``wait()``.
* A stdout line longer than ``max_message_size`` bytes (newline or not) fails
  the connection with :class:`~.base.MessageTooLarge` and stdout is no longer
  read: a server writing an endless line cannot fill the client's memory. The
  bounded splitting is the server's own (:mod:`mcpkit.framing`).
* When the process dies, pending calls fail at once with an error naming the
  server, its exit status and the last lines it wrote to stderr. A line on
  stdout that is not JSON fails the connection with an error that says so
  (instead of the call hanging until its timeout).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import copy
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import orjson

from ...errors import ConnectionClosed, ServerExited
from ...framing import LineSplitter, Oversized
from ...protocol import jsonrpc
from ...protocol.jsonrpc import exact_ids
from ...stdio_process import Reader, open_input
from .base import DEFAULT_MAX_MESSAGE_SIZE, Inbound, MessageTooLarge

__all__ = ["ServerExited", "StdioTransport"]

stderr_log = logging.getLogger("mcpkit.client.stderr")
log = logging.getLogger("mcpkit.client")

_NEWLINE: Final = orjson.OPT_APPEND_NEWLINE
# How long after the process exits we still wait for its last stdout bytes.
_EXIT_GRACE: Final = 0.25
_STDERR_TAIL: Final = 10


class StdioTransport:
    """Runs ``command args…`` and talks MCP over its stdin/stdout.

    ``env`` is added to this process's environment (``inherit_env=False``
    passes ``env`` alone). Closing waits ``close_timeout`` seconds for the
    server to exit after stdin closes, then ``kill_timeout`` after SIGTERM. A
    stdout line (one message) may be at most ``max_message_size`` bytes.
    """

    # A legacy stdio server may ignore server/discover: the session races the handshake.
    races_probe = True

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        name: str | None = None,
        inherit_env: bool = True,
        close_timeout: float = 2.0,
        kill_timeout: float = 2.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self.command = command
        self.args = list(args)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.inherit_env = inherit_env
        self.close_timeout = close_timeout
        self.kill_timeout = kill_timeout
        self.max_message_size = max_message_size
        self.label = name or _label(command, self.args)
        self.pid: int | None = None
        self.returncode: int | None = None
        self._inbound: Inbound | None = None
        self._popen: subprocess.Popen[bytes] | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._readers: list[Reader | asyncio.BaseTransport] = []
        self._splitter = LineSplitter(max_message_size)
        self._err_partial = bytearray()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL)
        self._stdout_eof = False
        self._exited: asyncio.Event | None = None
        self._lost: ConnectionClosed | None = None
        self._lost_waiter: asyncio.Future[None] | None = None
        self._lost_timer: asyncio.TimerHandle | None = None
        self._closing = False
        self._paused = False
        self._drain_waiter: asyncio.Future[None] | None = None
        self._reaper: asyncio.Task[None] | None = None

    def respawn(self) -> StdioTransport:
        """A new transport, not started, for a new process of the same server.

        The era probe needs it: a dual-era server may fix the era of its process with the
        first message it reads (see :func:`mcpkit.client.stateless.discover.try_handshake`).
        """
        return StdioTransport(
            self.command,
            self.args,
            env=self.env,
            cwd=self.cwd,
            name=self.label,
            inherit_env=self.inherit_env,
            close_timeout=self.close_timeout,
            kill_timeout=self.kill_timeout,
            max_message_size=self.max_message_size,
        )

    # -- lifecycle ----------------------------------------------------------------------------
    async def start(self, inbound: Inbound) -> None:
        self._inbound = inbound
        self._splitter = LineSplitter(self.max_message_size)
        loop = asyncio.get_running_loop()
        self._exited = asyncio.Event()
        env = None
        if self.env is not None or not self.inherit_env:
            env = {**os.environ, **(self.env or {})} if self.inherit_env else dict(self.env or {})
        try:
            popen = subprocess.Popen(
                [self.command, *self.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                env=env,
                cwd=self.cwd,
                process_group=0,  # its own group: shutdown signals reach its children too
            )
        except OSError as exc:
            raise ServerExited(f"cannot start MCP server {self.label!r}: {exc}") from exc
        self._popen = popen
        self.pid = popen.pid
        _live_groups.add(popen.pid)
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        try:
            stdin, _ = await loop.connect_write_pipe(lambda: _Stdin(self), popen.stdin)
            # On asyncio's own loop, open_input reads into one reused buffer: its pipe
            # transport would allocate (and page-fault in) 256 KiB per read.
            out = await open_input(loop, popen.stdout, _Reader(self._stdout, self._stdout_closed))
            # stderr is rare traffic: asyncio's transport, without a buffer of its own.
            err, _ = await loop.connect_read_pipe(lambda: _Reader(self._stderr, None), popen.stderr)
        except BaseException:
            popen.kill()
            raise
        # uvloop's pipe transports do not subclass asyncio.WriteTransport: no isinstance.
        self._stdin = stdin
        self._readers = [out, err]
        self._watch_exit(loop, popen)

    def _watch_exit(self, loop: asyncio.AbstractEventLoop, popen: subprocess.Popen[bytes]) -> None:
        try:
            pidfd = os.pidfd_open(popen.pid)
        except (AttributeError, OSError):  # not Linux >= 5.3: a thread waits instead

            def wait() -> None:
                popen.wait()
                with contextlib.suppress(RuntimeError):  # the loop is closed
                    loop.call_soon_threadsafe(self._process_exited)

            threading.Thread(target=wait, name=f"mcpkit-wait-{popen.pid}", daemon=True).start()
            return

        def ready() -> None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
            popen.wait()  # already exited: this only reaps it
            self._process_exited()

        loop.add_reader(pidfd, ready)

    async def send(self, message: dict[str, Any]) -> None:
        if self._lost is not None:
            raise copy.copy(self._lost)
        stdin = self._stdin
        if stdin is None or stdin.is_closing():
            raise await self._why_stdin_closed()
        stdin.write(jsonrpc.dumps(message, _NEWLINE))
        if self._paused:
            await self._drain()

    async def _why_stdin_closed(self) -> ConnectionClosed:
        """The error for a write to a closed stdin: usually the server died, so say how.

        The broken pipe is often noticed before the exit: wait (briefly) for the
        exit report, which has the status and the last stderr lines.
        """
        if not self._closing and self._lost is None and self._lost_waiter is None:
            self._lost_waiter = asyncio.get_running_loop().create_future()
        if self._lost_waiter is not None and not self._closing:
            with contextlib.suppress(TimeoutError):  # not wait_for: see _wait_exit
                async with asyncio.timeout(_EXIT_GRACE + 1.0):
                    await asyncio.shield(self._lost_waiter)
        if self._lost is not None:
            return copy.copy(self._lost)
        return ServerExited(f"MCP server {self.label!r}: its stdin is closed", self.returncode)

    async def _drain(self) -> None:
        if self._drain_waiter is None or self._drain_waiter.done():
            self._drain_waiter = asyncio.get_running_loop().create_future()
        await self._drain_waiter

    async def aclose(self) -> None:
        """Close stdin, wait, SIGTERM, wait, SIGKILL: the whole process group."""
        if self._closing:
            return
        self._closing = True
        if self._lost_timer is not None:
            self._lost_timer.cancel()
        if self._popen is None:
            return
        pgid = self.pid
        try:
            if self._stdin is not None:
                self._stdin.close()  # EOF on stdin asks the server to exit (transports § stdio)
            if not await self._wait_exit(self.close_timeout):
                self._signal(signal.SIGTERM)
                if not await self._wait_exit(self.kill_timeout):
                    self._signal(signal.SIGKILL)
                    await self._wait_exit(5.0)
            await self._reap_group()
            if self._reaper is not None:
                await self._reaper
        finally:
            for reader in self._readers:
                reader.close()
            if pgid is not None:
                _live_groups.discard(pgid)
            self._wake_drain(ConnectionClosed("closed"))

    async def _wait_exit(self, timeout: float) -> bool:
        assert self._exited is not None
        if self._exited.is_set():
            return True
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can drop the caller's
            # cancellation as the wait completes (CPython gh-86296).
            async with asyncio.timeout(timeout):
                await self._exited.wait()
        except TimeoutError:
            return False
        return True

    async def _reap_group(self) -> None:
        """Stop processes the server left behind in its group (they would be orphans)."""
        if self.pid is None or not _group_alive(self.pid):
            return
        self._signal(signal.SIGTERM)
        for _ in range(25):
            await asyncio.sleep(0.02)
            if not _group_alive(self.pid):
                return
        self._signal(signal.SIGKILL)

    def _signal(self, sig: signal.Signals) -> None:
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    # -- pipe events (from _Pipes) ------------------------------------------------------------
    def _stdout(self, data: bytes) -> None:
        if self._lost is not None:
            return  # the connection was dropped: nothing more is delivered
        splitter = self._splitter
        if splitter.whole_line(data):
            # The common case, one whole message per read: no split, no list.
            self._line(data)
            return
        for line in splitter.feed(data):
            if self._lost is not None:
                return
            if isinstance(line, Oversized):
                self._too_large()
                return
            self._line(line)
        if splitter.overflowing and self._lost is None:
            # No newline yet, but already too long: stop now rather than read it all.
            self._too_large()

    def _too_large(self) -> None:
        """An over-long stdout line: drop the connection and stop reading stdout, so the
        server's next write fails instead of being read and thrown away."""
        self._splitter.close()  # forget what was buffered
        self._report(
            MessageTooLarge(repr(self.label), self.max_message_size, "as a line on its stdout")
        )
        if self._readers:
            self._readers[0].close()

    def _line(self, line: bytes | bytearray) -> None:
        try:
            # JSON allows the trailing newline as whitespace; ids beyond 64 bits stay exact.
            message = exact_ids(orjson.loads(line), line)
        except orjson.JSONDecodeError:
            if line.strip():
                self._garbage(line)
            return
        inbound = self._inbound
        assert inbound is not None
        try:
            inbound.message_received(message)
        except Exception:  # never let a bug here kill the pipe (asyncio would close it)
            log.exception("MCP server %r: failed to handle a message", self.label)

    def _garbage(self, line: bytes | bytearray) -> None:
        snippet = line.rstrip(b"\r\n")[:200].decode("utf-8", "replace")
        self._report(
            ConnectionClosed(
                f"MCP server {self.label!r} wrote a line to stdout that is not JSON: {snippet!r}. "
                "An MCP server must write only JSON-RPC messages to stdout (logs go to stderr); "
                "the connection is unusable and was dropped"
            )
        )

    def _stderr(self, data: bytes) -> None:
        self._err_partial += data
        if b"\n" not in data:
            if len(self._err_partial) < 65536:
                return
            data = bytes(self._err_partial) + b"\n"  # an endless line: flush it anyway
        else:
            data = bytes(self._err_partial)
        self._err_partial.clear()
        lines = data.split(b"\n")
        tail = lines.pop()
        if tail:
            self._err_partial += tail
        for raw in lines:
            text = raw.decode("utf-8", "replace").rstrip()
            if text:
                self._stderr_tail.append(text)
                stderr_log.info("[%s] %s", self.label, text)

    def _stdout_closed(self) -> None:
        self._stdout_eof = True
        if self._lost is None:
            for line in self._splitter.close():  # a last line without its newline
                if isinstance(line, Oversized):
                    self._too_large()
                else:
                    self._line(line)
        self._check_lost()

    def _process_exited(self) -> None:
        assert self._popen is not None and self._exited is not None
        self.returncode = self._popen.returncode
        self._exited.set()
        self._check_lost()

    def _check_lost(self) -> None:
        if self._closing or self._lost is not None:
            return
        if self._stdout_eof and self.returncode is not None:
            self._report_exit()
        elif self._lost_timer is None:
            # Let the last stdout bytes (or the exit status) arrive, then report.
            loop = asyncio.get_running_loop()
            self._lost_timer = loop.call_later(_EXIT_GRACE, self._report_exit)

    def _report_exit(self) -> None:
        if self._closing or self._lost is not None:
            return
        if self.returncode is not None:
            # Whatever the server started (npx's node, a shell's children) is of no use
            # without it: stop the rest of its group now rather than at close.
            self._reaper = asyncio.get_running_loop().create_task(self._reap_group())
            what = f"MCP server {self.label!r} (pid {self.pid}) {_status(self.returncode)}"
        else:
            what = f"MCP server {self.label!r} (pid {self.pid}) closed its stdout"
        if self._stderr_tail:
            what += "; its last stderr lines:\n  " + "\n  ".join(self._stderr_tail)
        self._report(ServerExited(what, self.returncode))

    def _report(self, exc: ConnectionClosed) -> None:
        if self._lost is not None:
            return
        self._lost = exc
        if self._lost_timer is not None:
            self._lost_timer.cancel()
        if self._lost_waiter is not None and not self._lost_waiter.done():
            self._lost_waiter.set_result(None)
        self._wake_drain(exc)
        if self._inbound is not None:
            self._inbound.connection_lost(exc)

    def _pause(self) -> None:
        self._paused = True

    def _resume(self) -> None:
        self._paused = False
        self._wake_drain(None)

    def _wake_drain(self, exc: BaseException | None) -> None:
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            if exc is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(exc)


class _Reader(asyncio.Protocol):
    """Hands a pipe's bytes to the transport as they are read."""

    def __init__(
        self, on_data: Callable[[bytes], None], on_close: Callable[[], None] | None
    ) -> None:
        self.on_data = on_data
        self.on_close = on_close

    def data_received(self, data: bytes) -> None:
        self.on_data(data)

    def eof_received(self) -> bool:
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        if self.on_close is not None:
            self.on_close()


class _Stdin(asyncio.BaseProtocol):
    """Flow control for the server's stdin."""

    def __init__(self, owner: StdioTransport) -> None:
        self.owner = owner

    def pause_writing(self) -> None:
        self.owner._pause()

    def resume_writing(self) -> None:
        self.owner._resume()

    def connection_lost(self, exc: Exception | None) -> None:
        self.owner._resume()


def _label(command: str, args: Sequence[str]) -> str:
    text = " ".join([os.path.basename(command), *args])
    return text if len(text) <= 80 else text[:77] + "..."


def _status(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _group_alive(pgid: int) -> bool:
    """Does process group ``pgid`` still have a running (not zombie) member?"""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc/self"):
        return True
    # killpg also succeeds for zombies, which init reaps in its own time; on Linux
    # look at the members' states so that close does not wait for init.
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


# Process groups of servers still running; killed at interpreter exit if never closed.
_live_groups: set[int] = set()


@atexit.register
def _kill_forgotten() -> None:
    for pgid in list(_live_groups):
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    _live_groups.clear()
