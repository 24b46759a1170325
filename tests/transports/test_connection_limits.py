"""Limits of the embedded server, over real sockets: slow heads and bodies, too many connections.

Each test starts ``mcpkit run -t http --port 0`` in a subprocess (the banner
names the port), on both uvicorn stacks: uvloop + httptools (what ``auto``
picks with ``mcpkit[fast]``) and asyncio + h11 (the plain ``mcpkit[http]``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import AsyncIterator

import pytest

from tests.transports.stdio_peer import FIXTURES, REPO

TARGET = f"{FIXTURES / 'cli_targets.py'}:other"
WAIT = 20.0  # the longest any single wait may take; the limits under test are 1-2 s
STACKS = [
    pytest.param(("uvloop", "httptools"), id="uvloop-httptools", marks=pytest.mark.uvloop),
    pytest.param(("asyncio", "h11"), id="asyncio-h11"),
]
INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"limits-test","version":"0"}}}'
)


def _request(body: bytes = INIT, **extra: str) -> bytes:
    head = (
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"accept: application/json\r\ncontent-length: {len(body)}\r\n"
    )
    head += "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in extra.items())
    return (head + "\r\n").encode() + body


@contextlib.asynccontextmanager
async def mcpkit_http(stack: tuple[str, str], *flags: str) -> AsyncIterator[int]:
    """``mcpkit run`` on a free port with ``flags``; yields the port once it listens."""
    loop, http = stack
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mcpkit",
        "run",
        TARGET,
        "-t",
        "http",
        "--port",
        "0",
        "--loop",
        loop,
        "--http",
        http,
        *flags,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(REPO),
    )
    try:
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), WAIT)).decode()
        assert "serving 'other' on http://127.0.0.1:" in line, line
        yield int(line.split("127.0.0.1:")[1].split("/")[0])
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), WAIT)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def _read_until_closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection (bounded by WAIT)."""
    data = b""
    async with asyncio.timeout(WAIT):
        while chunk := await reader.read(65536):
            data += chunk
    return data


async def _status(port: int, request: bytes) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        async with asyncio.timeout(WAIT):
            line = await reader.readline()
        return int(line.split()[1])
    finally:
        writer.close()


@pytest.mark.parametrize("stack", STACKS)
async def test_a_slowloris_head_and_an_idle_connection_are_cut_after_the_header_timeout(
    stack: tuple[str, str],
) -> None:
    async with mcpkit_http(stack, "--header-timeout", "1") as port:
        idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", port)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        started = time.monotonic()

        async def trickle() -> None:  # a header byte every 0.1 s, forever
            writer.write(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
            with contextlib.suppress(ConnectionError):
                while True:
                    writer.write(b"x")
                    await writer.drain()
                    await asyncio.sleep(0.1)

        dripping = asyncio.create_task(trickle())
        try:
            answer = await _read_until_closed(reader)
            slow_for = time.monotonic() - started
            assert await _read_until_closed(idle_reader) == b""  # idle: closed without a word
        finally:
            dripping.cancel()
            writer.close()
            idle_writer.close()
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert slow_for < WAIT
        # The server is still fine.
        assert await _status(port, _request()) == 200


@pytest.mark.parametrize("stack", STACKS)
async def test_a_body_that_never_finishes_gets_408(stack: tuple[str, str]) -> None:
    async with mcpkit_http(stack, "--body-timeout", "1") as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            full = _request()
            writer.write(full[: len(full) - 20])  # the head and most of the body, never the rest
            answer = await _read_until_closed(reader)
        finally:
            writer.close()
        assert answer.startswith(b"HTTP/1.1 408 "), answer
        assert b"did not arrive within 1 s" in answer
        assert await _status(port, _request()) == 200


@pytest.mark.parametrize("stack", STACKS)
async def test_connections_beyond_the_cap_get_503_and_the_server_recovers(
    stack: tuple[str, str],
) -> None:
    cap = 8
    async with mcpkit_http(stack, "--max-connections", str(cap), "--header-timeout", "60") as port:
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(cap)]
        try:
            await asyncio.sleep(0.3)  # let the server accept them all
            for _ in range(3):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(_request())
                answer = await _read_until_closed(reader)  # answered and closed
                writer.close()
                assert answer.startswith(b"HTTP/1.1 503 "), answer
                assert b"connection: close" in answer.lower()
        finally:
            for _, writer in held:
                writer.close()
        async with asyncio.timeout(WAIT):
            while True:  # the server notices the closed connections
                with contextlib.suppress(ValueError, IndexError):
                    if await _status(port, _request()) == 200:
                        break
                await asyncio.sleep(0.1)


@pytest.mark.parametrize("stack", STACKS)
async def test_an_endless_head_is_refused_before_memory_grows(stack: tuple[str, str]) -> None:
    async with mcpkit_http(stack, "--header-timeout", "30") as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        sent = 0
        with contextlib.suppress(ConnectionError):
            writer.write(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
            line = b"x-filler: " + b"a" * 1000 + b"\r\n"
            async with asyncio.timeout(WAIT):
                while sent < 10 * 1024 * 1024 and not reader.at_eof():
                    writer.write(line * 64)
                    await writer.drain()
                    sent += len(line) * 64
        try:
            answer = await _read_until_closed(reader)
        except ConnectionError:  # closed with our filler unread: the answer may be lost
            answer = None
        writer.close()
        assert sent < 10 * 1024 * 1024  # cut long before 10 MiB
        if answer:  # 431 from mcpkit (64 KiB) on both stacks
            assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("header_timeout", 0),
        ("max_connections", -1),
        ("max_header_size", "big"),
        ("header_timeout", True),
    ],
)
def test_limits_are_validated_before_anything_starts(option: str, value: object) -> None:
    from mcpkit.errors import ConfigurationError
    from mcpkit.transports.serve import serve
    from mcpkit.transports.streamable_http import StreamableHTTPApp
    from tests.transports.conftest import demo_server

    with pytest.raises(ConfigurationError, match=f"{option} must be a positive number or None"):
        serve(StreamableHTTPApp(demo_server()), port=0, **{option: value})


@pytest.mark.parametrize("value", [0, -5.0, "30"])
def test_body_timeout_is_validated(value: object) -> None:
    from mcpkit.errors import ConfigurationError
    from mcpkit.transports.sse_legacy import SSEApp
    from mcpkit.transports.streamable_http import StreamableHTTPApp
    from tests.transports.conftest import demo_server

    for make in (StreamableHTTPApp, SSEApp):
        with pytest.raises(ConfigurationError, match="body_timeout must be a positive number"):
            make(demo_server(), body_timeout=value)


async def test_the_limits_are_on_by_default() -> None:
    # `mcpkit run` with no limit flags, its descriptor limit lowered so that the default
    # connection cap (1000) is fitted to it: 256 - 64 spare = 192 connections. Without
    # default limits the 193rd connection would be served and idle ones held forever.
    import resource

    def low_nofile() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    proc = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "mcpkit", "run", TARGET, "-t", "http", "--port", "0"],
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(REPO),
        preexec_fn=low_nofile,
    )
    held: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    try:
        assert proc.stderr is not None
        stderr = b""
        async with asyncio.timeout(WAIT):
            while b"serving 'other' on http://127.0.0.1:" not in stderr:
                line = await proc.stderr.readline()
                assert line, stderr
                stderr += line
        assert b"max_connections=1000 does not fit the file-descriptor limit" in stderr
        port = int(stderr.split(b"127.0.0.1:")[1].split(b"/")[0])
        started = time.monotonic()
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(192)]
        await asyncio.sleep(0.3)  # let the server accept them all
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(_request())
        answer = await _read_until_closed(reader)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 503 "), answer
        # The default header timeout (10 s) closes an idle connection without a word.
        assert await _read_until_closed(held[0][0]) == b""
        assert 9 < time.monotonic() - started < WAIT
        # A body gets 30 s (test_a_body_that_never_finishes_gets_408 shows it enforced).
        from mcpkit.transports.sse_legacy import SSEApp
        from mcpkit.transports.streamable_http import StreamableHTTPApp
        from tests.transports.conftest import demo_server

        for make in (StreamableHTTPApp, SSEApp):
            assert make(demo_server()).body_timeout == 30
    finally:
        for _, held_writer in held:
            held_writer.close()
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), WAIT)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def test_uvicorns_own_options_pass_through_mcpkit_run() -> None:
    # --timeout-keep-alive 1: an idle connection is closed a second after its answer,
    # where uvicorn's default would keep it for 5 s.
    async with mcpkit_http(("asyncio", "h11"), "--timeout-keep-alive", "1") as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(_request())
            started = time.monotonic()
            answer = await _read_until_closed(reader)
            held_for = time.monotonic() - started
        finally:
            writer.close()
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:80]
        assert held_for < 3.5, held_for


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("pieces", [1, 18], ids=["one-write", "in-pieces"])
async def test_a_head_over_64_kib_gets_431_however_it_arrives(
    stack: tuple[str, str], pieces: int
) -> None:
    # 70 KB of headers: in one write the parser used to see the whole head at once and
    # accept it; in 4 KB pieces h11 used to stop at its own 16 KiB with a 400.
    request = _request(**{f"x_filler_{i}": "a" * 1000 for i in range(70)})
    assert len(request) > 70_000
    async with mcpkit_http(stack) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        step = -(-len(request) // pieces)
        with contextlib.suppress(ConnectionError):
            for start in range(0, len(request), step):
                writer.write(request[start : start + step])
                await writer.drain()
                await asyncio.sleep(0.01)
        try:
            answer = await _read_until_closed(reader)
        finally:
            writer.close()
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]
        # A head just under the limit, and one with leading blank lines, still pass.
        fits = _request(**{f"x_filler_{i}": "a" * 1000 for i in range(60)})
        assert await _status(port, fits) == 200
        assert await _status(port, b"\r\n" * 3 + fits) in (200, 400)  # h11 refuses blank lines
