"""The stdio transport, through real server subprocesses and pipes (transports § stdio)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpkit import MCPServer
from mcpkit.transports.stdio import MAX_IN_FLIGHT, LineSplitter, Oversized, serve_stdio
from tests.transports.stdio_peer import LAUNCHERS, REPO, SERVER, TIMEOUT, StdioPeer, process_gone

PeerFactory = Callable[..., Coroutine[Any, Any, StdioPeer]]


@pytest.fixture
async def spawn() -> AsyncIterator[PeerFactory]:
    peers: list[StdioPeer] = []

    async def start(launcher: str = "run_stdio", *extra: str) -> StdioPeer:
        peer = await StdioPeer.spawn([*LAUNCHERS[launcher], *extra])
        peers.append(peer)
        return peer

    yield start
    for peer in peers:
        await peer.kill()


async def _finish(peer: StdioPeer) -> int:
    """Close stdin, check nothing more comes, and return the exit status."""
    await peer.close_stdin()
    assert await peer.read_rest() == []
    return await peer.wait()


# -- the handshake and ordinary requests, on every way of starting a server --------------------


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
async def test_handshake_list_and_call(spawn: PeerFactory, launcher: str) -> None:
    peer = await spawn(launcher)
    result = await peer.initialize()
    assert result["serverInfo"] == {"name": "stdio-fixture", "version": "1.2.3"}
    assert result["protocolVersion"] == "2025-11-25"
    assert result["instructions"] == "A test server."

    tools = (await peer.request("tools/list"))["result"]["tools"]
    assert {"echo", "add", "noisy", "slow", "ask"} <= {t["name"] for t in tools}

    added = (await peer.call_tool("add", {"a": 2, "b": 40}))["result"]
    assert added["structuredContent"] == {"total": 42, "terms": 2}
    assert not added.get("isError")

    echoed = (await peer.call_tool("echo", {"text": "héllo ✓"}))["result"]
    assert echoed["content"] == [{"type": "text", "text": "héllo ✓"}]

    assert await _finish(peer) == 0
    assert "Traceback" not in peer.stderr


async def test_pipelined_messages_in_one_write_are_answered_in_order(spawn: PeerFactory) -> None:
    peer = await spawn()
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {**_init()}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    for line in lines:
        if "id" in line:
            peer.pending[line["id"]] = line["method"]
    await peer.send_bytes(b"".join(orjson.dumps(m) + b"\n" for m in lines))
    ids = [(await peer.recv())["id"] for _ in range(3)]
    assert ids == [1, 2, 3]
    assert await _finish(peer) == 0


def _init(**overrides: Any) -> dict[str, Any]:
    return {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
        **overrides,
    }


# -- stdout stays clean -------------------------------------------------------------------------


@pytest.mark.parametrize("launcher", ["run_stdio", "cli"])
async def test_prints_go_to_stderr_and_stdout_carries_only_messages(
    spawn: PeerFactory, launcher: str
) -> None:
    peer = await spawn(launcher)
    await peer.initialize()
    assert (await peer.call_tool("noisy", {"text": "from a thread"}))["result"]["content"][0][
        "text"
    ] == "quiet"
    assert (await peer.call_tool("noisy_async", {"text": "from the loop"}))["result"]["content"][0][
        "text"
    ] == "quiet"
    assert await _finish(peer) == 0  # read_rest parsed every remaining stdout line as JSON
    assert "NOISE: from a thread" in peer.stderr
    assert "more noise" in peer.stderr
    assert "ASYNC NOISE: from the loop" in peer.stderr
    if launcher == "cli":
        assert "printed at import time" in peer.stderr


async def test_child_process_output_goes_to_stderr(spawn: PeerFactory) -> None:
    peer = await spawn()
    await peer.initialize()
    result = (await peer.call_tool("spawn_child", {"text": "child was here"}))["result"]
    assert result["content"][0]["text"] == "spawned"
    assert await _finish(peer) == 0
    assert "child was here" in peer.stderr


# -- big messages --------------------------------------------------------------------------------


@pytest.mark.parametrize("launcher", ["run_stdio", "asyncio"])
async def test_ten_megabyte_message_both_ways(spawn: PeerFactory, launcher: str) -> None:
    peer = await spawn(launcher)
    await peer.initialize()
    text = "0123456789abcdef" * (10 * 1024 * 1024 // 16)  # 10 MiB
    result = (await peer.call_tool("echo", {"text": text}))["result"]
    assert result["content"][0]["text"] == text
    # And the server is still fine after it.
    counted = (await peer.call_tool("length", {"text": text}))["result"]
    assert counted["content"][0]["text"] == str(len(text))
    assert await _finish(peer) == 0


async def test_a_line_over_the_limit_is_refused_and_the_server_survives(
    spawn: PeerFactory,
) -> None:
    peer = await spawn("asyncio", "--max-message-size=100000")
    await peer.initialize()
    huge = {"jsonrpc": "2.0", "id": 99, "method": "tools/call"}
    huge["params"] = {"name": "echo", "arguments": {"text": "x" * 300_000}}
    await peer.send_bytes(orjson.dumps(huge) + b"\n")
    error = await peer.recv()
    assert error["id"] is None
    assert error["error"]["code"] == -32600
    assert "exceeds the 100000-byte limit" in error["error"]["message"]
    assert (await peer.call_tool("echo", {"text": "still here"}))["result"]["content"][0][
        "text"
    ] == "still here"
    assert await _finish(peer) == 0
    assert "dropped a" in peer.stderr


# -- bad input ---------------------------------------------------------------------------------


async def test_malformed_json_is_a_parse_error_and_the_server_survives(spawn: PeerFactory) -> None:
    peer = await spawn()
    await peer.initialize()
    await peer.send_bytes(b'{"jsonrpc": "2.0", "id": 7, "method": \n')
    error = await peer.recv()
    assert error == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": error["error"]["message"]},
    }
    assert error["error"]["message"].startswith("Parse error")
    await peer.send_bytes(b"\xff\xfe not utf-8\n")
    assert (await peer.recv())["error"]["code"] == -32700
    await peer.send_bytes(b"\n   \n\r\n")  # blank lines are not messages: no answer
    assert (await peer.request("ping"))["result"] == {}  # the very next line is this answer
    assert await _finish(peer) == 0


INVALID_LINES: list[tuple[bytes, Any]] = [
    (b"42", None),
    (b'"a string"', None),
    (b'{"id": 3, "method": "ping"}', 3),  # no "jsonrpc": "2.0"
    (b'{"jsonrpc": "2.0", "id": 4}', 4),  # neither method, result nor error
    (b'{"jsonrpc": "2.0", "id": 5, "method": 12}', 5),
    (b'{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": [1]}', 6),
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', None),
    (b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}', None),
]


async def test_invalid_messages_are_invalid_requests(spawn: PeerFactory) -> None:
    peer = await spawn()
    await peer.initialize()
    for line, expected_id in INVALID_LINES:
        await peer.send_bytes(line + b"\n")
        error = await peer.recv()
        assert error["error"]["code"] == -32600, line
        assert error["id"] == expected_id, line
        assert (await peer.request("ping"))["result"] == {}
    assert await _finish(peer) == 0


async def test_batches_follow_the_negotiated_revision(spawn: PeerFactory) -> None:
    peer = await spawn()
    await peer.initialize(protocolVersion="2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "ping"},
        {
            "jsonrpc": "2.0",
            "id": "b",
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "in a batch"}},
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": 1},
        },
    ]
    peer.pending.update({"a": "ping", "b": "tools/call"})
    await peer.send(batch)
    answers = await peer.recv()
    assert isinstance(answers, list)
    assert {a["id"] for a in answers} == {"a", "b"}
    await peer.send([])
    assert (await peer.recv())["error"]["code"] == -32600
    assert await _finish(peer) == 0


async def test_batches_are_refused_in_2025_11_25(spawn: PeerFactory) -> None:
    peer = await spawn()
    await peer.initialize()
    await peer.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    error = await peer.recv()
    assert error["error"]["code"] == -32600
    assert await _finish(peer) == 0


# -- notifications, cancellation and server→client requests while a tool runs --------------------


async def test_progress_notifications_arrive_before_the_result(spawn: PeerFactory) -> None:
    peer = await spawn()
    await peer.initialize()
    result = await peer.call_tool("progress", {"steps": 3}, progressToken="tok-1")
    assert result["result"]["content"][0]["text"] == "done"
    progress = [n["params"] for n in peer.notifications if n["method"] == "notifications/progress"]
    assert progress == [
        {"progressToken": "tok-1", "progress": i, "total": 3, "message": f"step {i}"}
        for i in (1, 2, 3)
    ]
    assert await _finish(peer) == 0


async def test_log_notifications_respect_the_level(spawn: PeerFactory) -> None:
    peer = await spawn()
    await peer.initialize()
    assert (await peer.request("logging/setLevel", {"level": "info"}))["result"] == {}
    await peer.call_tool("chatty", {})
    logs = [n["params"] for n in peer.notifications if n["method"] == "notifications/message"]
    assert [entry["level"] for entry in logs] == ["info", "warning"]
    assert logs[1] == {"level": "warning", "data": {"detail": "a warning"}, "logger": "fixture"}
    assert await _finish(peer) == 0


@pytest.mark.parametrize("launcher", ["run_stdio", "asyncio"])
async def test_cancelled_request_gets_no_response_and_the_server_goes_on(
    spawn: PeerFactory, launcher: str
) -> None:
    peer = await spawn(launcher)
    await peer.initialize()
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": "slow-1",
            "method": "tools/call",
            "params": {
                "name": "slow",
                "arguments": {"seconds": 30},
                "_meta": {"progressToken": "p"},
            },
        }
    )
    started = await peer.recv()  # the tool's first progress: it is running
    assert started["method"] == "notifications/progress"
    await peer.notify("notifications/cancelled", {"requestId": "slow-1", "reason": "test"})
    assert (await peer.call_tool("echo", {"text": "after"}))["result"]["content"][0][
        "text"
    ] == "after"
    await peer.close_stdin()
    rest = await peer.read_rest()
    assert all(m.get("id") != "slow-1" for m in rest), rest
    assert await peer.wait() == 0


async def test_elicitation_round_trip(spawn: PeerFactory) -> None:
    peer = await spawn()
    await peer.initialize(capabilities={"elicitation": {"form": {}}})
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": 10,
            "method": "tools/call",
            "params": {"name": "ask", "arguments": {}},
        }
    )
    ask = await peer.recv()
    assert ask["method"] == "elicitation/create"
    assert ask["params"]["message"] == "What is your name?"
    assert ask["params"]["requestedSchema"]["properties"]["name"]["type"] == "string"
    # While the tool waits for the answer, other requests are served.
    assert (await peer.request("ping"))["result"] == {}
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": ask["id"],
            "result": {"action": "accept", "content": {"name": "Ada"}},
        }
    )
    answer = await peer.recv_response(10)
    assert answer["result"]["content"][0]["text"] == "hello Ada"
    assert await _finish(peer) == 0


async def test_elicitation_declined(spawn: PeerFactory) -> None:
    peer = await spawn()
    await peer.initialize(capabilities={"elicitation": {}})
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": 11,
            "method": "tools/call",
            "params": {"name": "ask", "arguments": {}},
        }
    )
    ask = await peer.recv()
    await peer.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}})
    assert (await peer.recv_response(11))["result"]["content"][0]["text"] == "no name (decline)"
    assert await _finish(peer) == 0


# -- shutdown (lifecycle § shutdown, stdio) ---------------------------------------------------------


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
async def test_exits_zero_on_stdin_eof(spawn: PeerFactory, launcher: str) -> None:
    peer = await spawn(launcher)
    await peer.initialize()
    assert await _finish(peer) == 0
    assert "Traceback" not in peer.stderr
    assert process_gone(peer.proc.pid)


@pytest.mark.parametrize("tool", ["slow", "slow_sync"])
async def test_eof_lets_in_flight_requests_answer(spawn: PeerFactory, tool: str) -> None:
    peer = await spawn()
    await peer.initialize()
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": tool, "arguments": {"seconds": 0.3}},
        }
    )
    await peer.close_stdin()
    rest = await peer.read_rest()
    assert [m["result"]["content"][0]["text"] for m in rest if m.get("id") == 5] == ["finished"]
    assert await peer.wait() == 0


@pytest.mark.parametrize("launcher", ["run_stdio", "cli"])
async def test_sigterm_does_not_wait_for_a_sync_tool_in_a_thread(
    spawn: PeerFactory, launcher: str
) -> None:
    peer = await spawn(launcher)
    await peer.initialize()
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "slow_sync", "arguments": {"seconds": 30}},
        }
    )
    await asyncio.sleep(0.3)  # let the worker thread start sleeping
    loop = asyncio.get_running_loop()
    started = loop.time()
    peer.signal(signal.SIGTERM)
    assert await peer.wait(timeout=5) == 0
    assert loop.time() - started < 3
    assert "Traceback" not in peer.stderr


@pytest.mark.parametrize("launcher", ["run_stdio", "asyncio", "cli"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_exits_zero_on_signal_while_a_tool_runs(
    spawn: PeerFactory, launcher: str, sig: signal.Signals
) -> None:
    peer = await spawn(launcher)
    await peer.initialize()
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"seconds": 60}, "_meta": {"progressToken": 1}},
        }
    )
    assert (await peer.recv())["method"] == "notifications/progress"
    loop = asyncio.get_running_loop()
    started = loop.time()
    peer.signal(sig)
    assert await peer.wait(timeout=5) == 0
    assert loop.time() - started < 3
    assert "Traceback" not in peer.stderr
    assert "KeyboardInterrupt" not in peer.stderr
    assert process_gone(peer.proc.pid)


# -- streams that are not pipes -----------------------------------------------------------------------


def test_stdin_from_a_file_and_stdout_to_a_file(tmp_path: Path) -> None:
    requests = tmp_path / "in.jsonl"
    requests.write_bytes(
        b"".join(
            orjson.dumps(m) + b"\n"
            for m in [
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": _init()},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "from a file"}},
                },
            ]
        )
        # The last line has no newline: it is still a message at end of input.
        + b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}'
    )
    out = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        proc = subprocess.run(
            [sys.executable, str(SERVER)],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT,
            cwd=REPO,
        )
    assert proc.returncode == 0, proc.stderr.decode()
    answers = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[1]["result"]["content"][0]["text"] == "from a file"


def test_stdin_from_dev_null_exits_at_once() -> None:
    proc = subprocess.run(
        [sys.executable, str(SERVER)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
        cwd=REPO,
    )
    assert proc.returncode == 0
    assert proc.stdout == b""
    assert b"Traceback" not in proc.stderr


# -- serve_stdio on given streams, in process ---------------------------------------------------------


async def test_serve_stdio_on_given_pipes() -> None:
    server = MCPServer(name="in-process", version="0")

    @server.tool
    async def double(n: int) -> int:
        return 2 * n

    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    task = asyncio.ensure_future(
        serve_stdio(server, stdin=in_read, stdout=out_write, handle_signals=False)
    )
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(out_read, "rb", buffering=0)
    )
    try:
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": _init()},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "double", "arguments": {"n": 21}},
            },
        ]
        os.write(in_write, b"".join(orjson.dumps(m) + b"\n" for m in messages))
        first = orjson.loads(await asyncio.wait_for(reader.readline(), TIMEOUT))
        second = orjson.loads(await asyncio.wait_for(reader.readline(), TIMEOUT))
        assert first["id"] == 1
        assert second["result"]["content"] == [{"type": "text", "text": "42"}]
        os.close(in_write)
        await asyncio.wait_for(task, TIMEOUT)
        # serve_stdio worked on copies: the caller's fds are still open...
        os.fstat(in_read)
        os.fstat(out_write)
        os.close(out_write)
        # ...and its own copy of stdout is closed, or this would not see EOF.
        assert await asyncio.wait_for(reader.read(), TIMEOUT) == b""
    finally:
        transport.close()
        for fd in (in_read, in_write, out_write):
            with contextlib.suppress(OSError):
                os.close(fd)
    assert server.sessions() == []


# -- framing ----------------------------------------------------------------------------------------


def test_splitter_handles_lines_across_and_within_chunks() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b'{"a": 1}\n') == [b'{"a": 1}\n']
    assert splitter.feed(b'{"b"') == []
    assert splitter.feed(b': 2}\n{"c": 3}\n{"d') == [bytearray(b'{"b": 2}'), b'{"c": 3}']
    assert splitter.feed(b'": 4}\r\n') == [bytearray(b'{"d": 4}\r')]
    assert splitter.feed(b"tail") == []
    assert splitter.close() == [bytearray(b"tail")]
    assert splitter.close() == []


def test_splitter_drops_oversized_lines_without_buffering_them() -> None:
    splitter = LineSplitter(max_size=10)
    assert splitter.feed(b"0123456789") == []
    out = splitter.feed(b"abcdef")  # now 16 bytes: dropped, not kept
    assert out == []
    assert len(splitter._buf) == 0
    out = splitter.feed(b"gh\nok\n")
    assert isinstance(out[0], Oversized) and out[0].size == 18
    assert out[1:] == [b"ok"]
    out = splitter.feed(b"x" * 11 + b"\n")
    assert isinstance(out[0], Oversized) and out[0].size == 11
    assert splitter.feed(b"y" * 20) == []
    closing = splitter.close()
    assert isinstance(closing[0], Oversized) and closing[0].size == 20


def test_whole_line_agrees_with_feed() -> None:
    # The reader skips feed() when whole_line() says so: the two must agree.
    cases = [b'{"a": 1}\n', b"x" * 10 + b"\n", b"x" * 11 + b"\n", b"\n", b"", b"a\nb\n", b"abc"]
    for data in cases:
        splitter = LineSplitter(max_size=10)
        if splitter.whole_line(data):
            assert splitter.feed(data) == [data], data
        else:
            assert splitter.feed(data) != [data], data
    # Something buffered, or a line being dropped: never a whole line on its own.
    splitter = LineSplitter(max_size=10)
    splitter.feed(b"part")
    assert not splitter.whole_line(b"rest\n")
    assert splitter.feed(b"rest\n") == [bytearray(b"partrest")]
    splitter.feed(b"y" * 20)
    assert not splitter.whole_line(b"z\n")
    assert isinstance(splitter.feed(b"z\n")[0], Oversized)


# -- flow control and a vanished client ------------------------------------------------------------


@pytest.mark.parametrize("launcher", ["run_stdio", "asyncio"])
async def test_more_concurrent_requests_than_the_in_flight_cap(
    spawn: PeerFactory, launcher: str
) -> None:
    # Past MAX_IN_FLIGHT the reader pauses until half have finished; nothing is lost.
    peer = await spawn(launcher)
    await peer.initialize()
    count = MAX_IN_FLIGHT + 500
    call = {"name": "slow", "arguments": {"seconds": 0.2}}
    for rid in range(count):
        peer.pending[rid] = "tools/call"
    await peer.send_bytes(
        b"".join(
            orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": call})
            + b"\n"
            for rid in range(count)
        )
    )
    seen = set()
    assert peer.proc.stdout is not None
    for _ in range(count):  # read raw: schema-checking thousands of answers is slow
        answer = orjson.loads(await asyncio.wait_for(peer.proc.stdout.readline(), TIMEOUT))
        assert answer["result"]["content"][0]["text"] == "finished"
        seen.add(answer["id"])
    assert seen == set(range(count))
    peer.pending.clear()
    assert await _finish(peer) == 0


def test_exits_zero_when_the_client_stops_reading_stdout() -> None:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdout.close()  # the read end is gone: the server's next write fails (EPIPE)
        proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + b"\n")
        proc.stdin.flush()
        assert proc.wait(TIMEOUT) == 0
        assert proc.stderr is not None
        assert b"Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(TIMEOUT)
        for stream in (proc.stdin, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize("launcher", ["run_stdio", "asyncio"])
def test_works_on_a_terminal(launcher: str) -> None:
    # A person running a server by hand: stdin and stdout are one terminal.
    import pty
    import select
    import time
    import tty

    controller, terminal = pty.openpty()
    tty.setraw(terminal)  # no echo: the screen shows only what the server writes
    proc = subprocess.Popen(
        LAUNCHERS[launcher], stdin=terminal, stdout=terminal, stderr=subprocess.PIPE, cwd=REPO
    )
    os.close(terminal)
    try:
        os.write(controller, b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
        screen = b""
        deadline = time.monotonic() + TIMEOUT
        while b"\n" not in screen and time.monotonic() < deadline:
            if select.select([controller], [], [], 0.5)[0]:
                screen += os.read(controller, 4096)
        assert orjson.loads(screen) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        assert proc.wait(TIMEOUT) == 0
        assert proc.stderr is not None
        assert b"Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(TIMEOUT)
        os.close(controller)
        if proc.stderr is not None:
            proc.stderr.close()
