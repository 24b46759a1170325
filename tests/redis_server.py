"""A real ``redis-server`` for tests: a child process on a free port, in a temp directory.

No persistence by default (``--save ""``, no AOF), so a stop loses everything, as a
crash of a cache-only Redis would; ``RedisServer(..., appendonly=True)`` keeps an
append-only file in its directory (``--appendonly yes --appendfsync always``), so a stop
and a start on the same port bring every key back, as a persistent Redis would. :meth:`RedisServer.stop` and :meth:`start` may be
called again on the same port (the Redis-restart tests). When ``redis-server``
is not installed the tests fail, saying how to install it: they never skip.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

START_TIMEOUT = 10.0


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found is None:
        raise RuntimeError(
            "redis-server is not installed: the Redis store tests need a real Redis "
            "(Debian/Ubuntu: apt-get install redis-server; .ci/run installs it)"
        )
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _auth(password: str | None) -> bytes:
    """The AUTH command to send first on a server started with ``--requirepass``."""
    if password is None:
        return b""
    return b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n" % (len(password), password.encode())


def _skip_auth_reply(sock: socket.socket, password: str | None) -> None:
    """Read the ``+OK`` of :func:`_auth`'s command (5 bytes), so the next reply is next."""
    if password is None:
        return
    reply = b""
    while len(reply) < 5:
        chunk = sock.recv(5 - len(reply))
        if not chunk:
            break
        reply += chunk
    if reply != b"+OK\r\n":
        raise RuntimeError(f"redis-server refused AUTH: {reply!r}")


def _ping(port: int, password: str | None = None) -> bool:
    """One RESP PING over a plain socket (no client library: this checks the server only)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(_auth(password) + b"PING\r\n")
            _skip_auth_reply(sock, password)
            return sock.recv(64).startswith(b"+PONG")
    except (OSError, RuntimeError):
        return False


class RedisServer:
    """``redis-server`` on 127.0.0.1:``port``; ``url`` is its ``redis://`` URL.

    ``password``: started with ``--requirepass`` (the default user's password); the
    URL then carries it, and the helpers here send ``AUTH`` first. ``appendonly``:
    with AOF persistence, so a restart keeps the data.
    """

    def __init__(
        self,
        directory: Path,
        port: int | None = None,
        *,
        appendonly: bool = False,
        password: str | None = None,
    ) -> None:
        self.binary = redis_server_binary()
        self.directory = directory
        self.port = port if port is not None else free_port()
        self.appendonly = appendonly
        self.password = password
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        if self.password is not None:
            return f"redis://:{self.password}@127.0.0.1:{self.port}/0"
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert self.process is None, "already running"
        log = open(self.directory / "redis.log", "ab")  # the child writes to it
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes" if self.appendonly else "no",
                # Every write on disk before its answer: a SIGTERM loses nothing either way,
                # this only makes the restart tests independent of the fsync timer.
                "--appendfsync",
                "always",
                "--daemonize",
                "no",
                "--dir",
                str(self.directory),
                *(["--requirepass", self.password] if self.password is not None else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.directory,
            env={**os.environ},
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while not _ping(self.port, self.password):
            if self.process.poll() is not None:
                text = (self.directory / "redis.log").read_text(errors="replace")
                self.process = None
                raise RuntimeError(f"redis-server exited at start:\n{text}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not answer PING within {START_TIMEOUT} s")
            time.sleep(0.02)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def command_counts(self) -> dict[str, int]:
        """Calls per command since the last ``CONFIG RESETSTAT``, from ``INFO commandstats``
        (read with redis-cli-free RESP over a socket; the commands used here excluded)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
            sock.sendall(_auth(self.password) + b"INFO commandstats\r\n")
            _skip_auth_reply(sock, self.password)
            data = b""
            while True:
                chunk = sock.recv(65536)
                data += chunk
                header, _, rest = data.partition(b"\r\n")
                if header.startswith(b"$") and len(rest) >= int(header[1:]):
                    break
                if not chunk:
                    break
        counts: dict[str, int] = {}
        for line in rest.decode().splitlines():
            if line.startswith("cmdstat_"):
                name, _, stats = line[len("cmdstat_") :].partition(":")
                calls = int(stats.split(",")[0].partition("=")[2])
                if name not in ("info", "config|resetstat"):
                    counts[name] = calls
        if self.password is not None:  # this call's own AUTH
            counts["auth"] = counts.get("auth", 0) - 1
            if not counts["auth"]:
                del counts["auth"]
        return counts

    def reset_stats(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as sock:
            sock.sendall(_auth(self.password) + b"CONFIG RESETSTAT\r\n")
            _skip_auth_reply(sock, self.password)
            assert sock.recv(64).startswith(b"+OK")
