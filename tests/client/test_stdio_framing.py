"""How the stdio client transport frames the server's stdout, whatever the read boundaries.

Each test runs a real subprocess that writes scripted bytes (with pauses, so that
separate writes arrive as separate reads) and records what the transport delivers:
on asyncio's own loop the pipe is read into one reused buffer (``SelectorReader``),
and on uvloop by uvloop's pipe transport; both must split lines the same way.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from typing import Any

import pytest

from mcpkit.client.transports.stdio import ServerExited, StdioTransport
from mcpkit.errors import ConnectionClosed

PYTHON = sys.executable
WAIT = 10.0  # every wait in these tests is bounded


class Recorder:
    """An ``Inbound`` that keeps what arrives and signals when the connection ends."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.lost: BaseException | None = None
        self.changed = asyncio.Event()

    def message_received(self, message: Any) -> None:
        self.messages.append(message)
        self.changed.set()

    def request_failed(self, request_id: Any, exc: BaseException) -> None:
        raise AssertionError("stdio never fails single requests")

    def connection_lost(self, exc: BaseException) -> None:
        self.lost = exc
        self.changed.set()

    async def until(self, predicate: Any) -> None:
        async with asyncio.timeout(WAIT):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


def writer(body: str) -> StdioTransport:
    """A server that runs ``body`` with ``out(bytes)`` writing and flushing stdout at once."""
    script = "import os, sys, time\ndef out(b): os.write(1, b)\n" + textwrap.dedent(body)
    return StdioTransport(PYTHON, ["-c", script], close_timeout=0.5, kill_timeout=0.5)


async def run_writer(body: str, done: Any) -> tuple[Recorder, StdioTransport]:
    transport = writer(body)
    recorder = Recorder()
    await transport.start(recorder)
    try:
        await recorder.until(lambda: done(recorder))
    finally:
        await transport.aclose()
    return recorder, transport


async def test_a_line_split_across_many_reads_is_one_message() -> None:
    recorder, _ = await run_writer(
        """
        for piece in (b'{"jsonrpc": "2.0", ', b'"id": 1, "res', b'ult": {"a": [1, 2', b']}}\\n'):
            out(piece)
            time.sleep(0.05)
        time.sleep(5)
        """,
        lambda r: r.messages,
    )
    assert recorder.messages == [{"jsonrpc": "2.0", "id": 1, "result": {"a": [1, 2]}}]


async def test_many_lines_in_one_read_and_a_partial_tail() -> None:
    recorder, _ = await run_writer(
        """
        out(b'{"id": 1}\\n{"id": 2}\\n\\n{"id": 3}\\n{"id"')
        time.sleep(0.1)
        out(b': 4}\\n')
        time.sleep(5)
        """,
        lambda r: len(r.messages) == 4,
    )
    # The blank line between messages is tolerated, not an error.
    assert recorder.messages == [{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}]
    assert recorder.lost is None


async def test_a_line_bigger_than_the_read_buffer_arrives_whole() -> None:
    size = 3 * 1024 * 1024  # several reads of the 256 KiB buffer, and of the pipe's capacity
    recorder, _ = await run_writer(
        f"""
        line = b'{{"id": 1, "result": {{"text": "' + b'x' * {size} + b'"}}}}\\n'
        out(line[:1000])
        time.sleep(0.05)
        sys.stdout.buffer.write(line[1000:] + b'{{"id": 2, "result": {{}}}}\\n')
        sys.stdout.buffer.flush()
        time.sleep(5)
        """,
        lambda r: len(r.messages) == 2,
    )
    first, second = recorder.messages
    assert first["result"]["text"] == "x" * size
    assert second == {"id": 2, "result": {}}


async def test_a_last_line_without_newline_is_delivered_at_eof() -> None:
    recorder, transport = await run_writer(
        """
        out(b'{"id": 1, "result": {}}\\n{"id": 2, ')
        time.sleep(0.05)
        out(b'"result": {}}')
        sys.exit(3)
        """,
        lambda r: r.lost is not None,
    )
    assert recorder.messages == [{"id": 1, "result": {}}, {"id": 2, "result": {}}]
    assert isinstance(recorder.lost, ServerExited)
    assert transport.returncode == 3
    assert "exited with status 3" in str(recorder.lost)


async def test_eof_in_the_middle_of_a_line_is_reported_as_garbage() -> None:
    recorder, _ = await run_writer(
        """
        out(b'{"id": 1, "result": {}}\\n{"id": 2, "resu')
        sys.exit(0)
        """,
        lambda r: r.lost is not None,
    )
    assert recorder.messages == [{"id": 1, "result": {}}]
    assert isinstance(recorder.lost, ConnectionClosed)
    assert "not JSON" in str(recorder.lost)
    assert '{"id": 2, "resu' in str(recorder.lost)


async def test_a_garbage_line_fails_the_connection_and_nothing_after_it_is_delivered() -> None:
    recorder, _ = await run_writer(
        """
        out(b'{"id": 1}\\nServer ready on port 8080\\n{"id": 2}\\n')
        time.sleep(5)
        """,
        lambda r: r.lost is not None,
    )
    assert recorder.messages == [{"id": 1}]
    assert isinstance(recorder.lost, ConnectionClosed)
    assert "'Server ready on port 8080'" in str(recorder.lost)


async def test_a_garbage_line_alone_in_its_read_is_reported_without_its_newline() -> None:
    recorder, _ = await run_writer(
        """
        out(b'{"id": 1}\\n')
        time.sleep(0.1)
        out(b'Listening...\\n')
        time.sleep(5)
        """,
        lambda r: r.lost is not None,
    )
    assert recorder.messages == [{"id": 1}]
    assert "'Listening...'" in str(recorder.lost)


async def test_a_server_killed_after_half_a_line_is_reported_with_its_signal() -> None:
    recorder, _ = await run_writer(
        """
        import signal
        out(b'{"id": 1, "result": {}}\\n{"id": 2, "re')
        sys.stderr.write('about to die\\n'); sys.stderr.flush()
        time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGKILL)
        """,
        lambda r: r.lost is not None,
    )
    assert recorder.messages == [{"id": 1, "result": {}}]
    # The half line is garbage; either report names the server, and it is final.
    assert isinstance(recorder.lost, ConnectionClosed)
    assert "MCP server" in str(recorder.lost)


async def test_sending_after_the_server_died_raises_its_exit() -> None:
    recorder, transport = await run_writer("sys.exit(5)\n", lambda r: r.lost is not None)
    with pytest.raises(ServerExited, match="exited with status 5"):
        await transport.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert recorder.messages == []


@pytest.mark.uvloop
def test_the_same_framing_on_uvloop() -> None:
    import uvloop

    async def body() -> list[Any]:
        recorder, _ = await run_writer(
            """
            out(b'{"id": 1}\\n{"id"')
            time.sleep(0.05)
            out(b': 2}\\n{"id": 3}')
            sys.exit(0)
            """,
            lambda r: r.lost is not None,
        )
        assert isinstance(recorder.lost, ServerExited)
        return recorder.messages

    assert uvloop.run(body()) == [{"id": 1}, {"id": 2}, {"id": 3}]
