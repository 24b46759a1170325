"""A client that stops reading stdout does not make a stdio server buffer without bound.

While the server's output is backed up it stops reading stdin, so the client's
writes block in the pipe instead of piling up as answers in the server's
memory; once the client reads again, everything is answered.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import orjson
import pytest

SERVER = """
import asyncio
import sys
from mcpkit import MCPServer
from mcpkit.transports.stdio import run_stdio, serve_stdio

server = MCPServer(name="big-answers", version="1")

@server.tool
async def big(size: int) -> str:
    return "x" * size

if sys.argv[1:] == ["--asyncio"]:
    asyncio.run(serve_stdio(server))
else:
    run_stdio(server)
"""

REQUESTS = 4000
ANSWER = 200_000  # bytes of text per answer: 800 MB if the server kept them all
LIMIT_MB = 100  # growth allowed while the client does not read (measured: under 25)
TIMEOUT = 60.0


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for row in status:
            if row.startswith("VmRSS:"):
                return int(row.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def request(rid: int, method: str, params: dict[str, object]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + b"\n"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("launcher", ["run_stdio", "asyncio"])
async def test_a_client_not_reading_stdout_does_not_grow_the_server(
    tmp_path: Path, launcher: str
) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    argv = [sys.executable, str(script)] + (["--asyncio"] if launcher == "asyncio" else [])
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=-1, stdout=-1, stderr=-1, limit=4 * ANSWER
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stdin, stdout = proc.stdin, proc.stdout
    try:
        async with asyncio.timeout(TIMEOUT):
            init = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            }
            stdin.write(request(0, "initialize", init))
            stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            assert orjson.loads(await stdout.readline())["id"] == 0
            base = rss_mb(proc.pid)

            # Write every request without reading a byte of stdout.
            call = {"name": "big", "arguments": {"size": ANSWER}}
            stdin.write(
                b"".join(request(rid, "tools/call", call) for rid in range(1, REQUESTS + 1))
            )
            writing = asyncio.ensure_future(stdin.drain())
            peak = base
            for _ in range(30):  # 3 s: an unbounded server has grown by hundreds of MB by then
                await asyncio.sleep(0.1)
                peak = max(peak, rss_mb(proc.pid))
            assert peak - base < LIMIT_MB, f"RSS grew from {base:.0f} to {peak:.0f} MB"
            assert not writing.done(), "the server kept reading input while output was backed up"

            # Reading again: every request is answered, in full.
            seen = set()
            for _ in range(REQUESTS):
                answer = orjson.loads(await stdout.readline())
                assert answer["result"]["content"][0]["text"] == "x" * ANSWER
                seen.add(answer["id"])
                peak = max(peak, rss_mb(proc.pid)) if len(seen) % 500 == 0 else peak
            assert seen == set(range(1, REQUESTS + 1))
            await writing
            assert peak - base < LIMIT_MB, f"RSS grew from {base:.0f} to {peak:.0f} MB"
            stdin.close()
            assert await proc.wait() == 0
        assert b"Traceback" not in await proc.stderr.read()
    finally:
        if proc.returncode is None:
            proc.kill()
            # The pipes must reach EOF too before `wait` returns: read what is left.
            await asyncio.wait_for(
                asyncio.gather(stdout.read(), proc.stderr.read(), proc.wait()), TIMEOUT
            )


@pytest.mark.parametrize("option", ["max_buffered_output", "max_message_size"])
async def test_byte_limits_must_be_positive(option: str) -> None:
    from mcpkit import MCPServer
    from mcpkit.errors import ConfigurationError
    from mcpkit.transports.stdio import serve_stdio

    with pytest.raises(ConfigurationError, match=option):
        await serve_stdio(MCPServer(name="t", version="1"), **{option: 0})  # type: ignore[arg-type]
