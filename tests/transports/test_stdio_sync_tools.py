"""Sync (``def``) tools over real stdio subprocesses: where they run, and what blocks what.

A plain ``def`` tool runs in a worker thread, so one that blocks does not hold
up the other requests; ``run_in_thread=False`` calls it on the event loop
thread. Errors and cancellation look the same to the client either way.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest

from tests.transports.stdio_peer import FIXTURES, StdioPeer

SERVER = FIXTURES / "stdio_sync_server.py"
LAUNCHERS: dict[str, list[str]] = {
    "run_stdio": [sys.executable, str(SERVER)],
    "asyncio": [sys.executable, str(SERVER), "--asyncio"],
}

PeerFactory = Callable[[str], Coroutine[Any, Any, StdioPeer]]


@pytest.fixture
async def spawn() -> AsyncIterator[PeerFactory]:
    peers: list[StdioPeer] = []

    async def start(launcher: str) -> StdioPeer:
        peer = await StdioPeer.spawn(LAUNCHERS[launcher])
        peers.append(peer)
        await peer.initialize()
        return peer

    yield start
    for peer in peers:
        await peer.kill()


def text(response: dict[str, Any]) -> str:
    return str(response["result"]["content"][0]["text"])


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
async def test_a_def_tool_runs_in_a_worker_and_an_inline_one_on_the_loop_thread(
    spawn: PeerFactory, launcher: str
) -> None:
    peer = await spawn(launcher)
    # The event loop runs in the server's main thread.
    assert text(await peer.call_tool("where_inline", {})) == "MainThread"
    assert text(await peer.call_tool("where_thread", {})) != "MainThread"


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
async def test_a_blocking_def_tool_does_not_stall_other_requests(
    spawn: PeerFactory, launcher: str
) -> None:
    peer = await spawn(launcher)
    # Quick calls first: a worker is idle and the tool has never been slow, so the loop
    # will try waiting in place for the sleeper; it must give up after a moment.
    for _ in range(3):
        assert text(await peer.call_tool("sleep_thread", {"seconds": 0})) == "slept"
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": "sleeper",
            "method": "tools/call",
            "params": {"name": "sleep_thread", "arguments": {"seconds": 5}},
        }
    )
    # Answered while the first call still sleeps (recv_response fails on any other answer,
    # so the sleeper answering first would fail the test), each well within 5 s.
    for _ in range(3):
        assert text(await peer.call_tool("where_inline", {})) == "MainThread"
        assert text(await peer.call_tool("where_thread", {})) != "MainThread"
    assert text(await peer.recv_response("sleeper", timeout=15)) == "slept"


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
@pytest.mark.parametrize("kind", ["tool", "other"])
async def test_errors_read_the_same_from_a_worker_and_from_the_loop(
    spawn: PeerFactory, launcher: str, kind: str
) -> None:
    peer = await spawn(launcher)
    threaded = (await peer.call_tool("fail_thread", {"kind": kind}))["result"]
    inline = (await peer.call_tool("fail_inline", {"kind": kind}))["result"]
    assert threaded["isError"] is inline["isError"] is True
    assert (
        threaded["content"][0]["text"].replace("fail_thread", "fail_inline")
        == (inline["content"][0]["text"])
    )
    if kind == "tool":
        assert inline["content"][0]["text"] == "refused on purpose"
    assert "secret detail" not in inline["content"][0]["text"]
    assert "Traceback" not in threaded["content"][0]["text"]


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
async def test_a_cancelled_def_tool_gets_no_answer_and_the_server_goes_on(
    spawn: PeerFactory, launcher: str
) -> None:
    peer = await spawn(launcher)
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": "doomed",
            "method": "tools/call",
            "params": {
                "name": "announce_then_sleep_thread",
                "arguments": {"seconds": 1},
                "_meta": {"progressToken": "p"},
            },
        }
    )
    started = await peer.recv()  # its progress: the thread is running the function
    assert started["method"] == "notifications/progress"
    await peer.notify("notifications/cancelled", {"requestId": "doomed", "reason": "test"})
    assert text(await peer.call_tool("where_inline", {})) == "MainThread"
    assert text(await peer.call_tool("where_thread", {})) != "MainThread"
    # The function runs to its end in its thread; its result is dropped, not sent.
    await peer.call_tool("sleep_thread", {"seconds": 1.5})
    await peer.close_stdin()
    rest = await peer.read_rest()
    assert all(m.get("id") != "doomed" for m in rest), rest
    assert await peer.wait() == 0
    assert "Traceback" not in peer.stderr
