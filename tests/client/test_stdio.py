"""The stdio client transport against real subprocesses: mcpkit servers and misbehaving ones."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from mcpkit.client import Client
from mcpkit.client.transports.stdio import ServerExited, StdioTransport
from mcpkit.errors import ConnectionClosed
from tests.client.conftest import DEMO, PYTHON, RAW, Traffic, alive, group_members


def text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def wait_until(predicate: Any, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return bool(predicate())


def demo(**options: Any) -> Client:
    return Client(command=PYTHON, args=[DEMO], **options)


def raw(mode: str, **options: Any) -> Client:
    return Client(command=PYTHON, args=[RAW, mode], **options)


def transport_of(client: Client) -> StdioTransport:
    transport = client.session.transport
    assert isinstance(transport, StdioTransport)
    return transport


@pytest.mark.no_schema_check  # the server's odd answers are invalid on purpose
async def test_answers_with_array_or_object_ids_are_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # No request of ours has such an id: they match nothing, quietly (they once raised
    # TypeError in the reader, logged as a failure), and the real answer that follows
    # still reaches its caller.
    async with raw("odd_ids", timeout=5) as client:
        assert (await client.session.request("tools/list"))["tools"] == []
        assert not client.session.closed
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


# -- an mcpkit server over stdio -----------------------------------------------------------------


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_round_trips_with_an_mcpkit_server(traffic: Traffic, era: str) -> None:
    # Roots: a roots/list request on the pipe (2025-11-25), an input round (2026-07-28).
    async with demo(trace=traffic, roots=["file:///w"], timeout=10, protocol_version=era) as client:
        assert client.server_info["name"] == "demo"
        assert client.protocol_version == era
        assert text_of(await client.call_tool("add", {"a": 20, "b": 22})) == "42"
        results = await asyncio.gather(
            *(client.call_tool("echo", {"text": str(i)}) for i in range(20))
        )
        assert [text_of(r) for r in results] == [str(i) for i in range(20)]
        assert text_of(await client.call_tool("roots")) == "file:///w"
        seen: list[Any] = []
        await client.call_tool("slow", {"steps": 2}, progress=lambda *a: seen.append(a))
        assert seen == [(1, 2, "step 1"), (2, 2, "step 2")]
        read = await client.read_resource("memo://greeting")
        assert read["contents"][0]["text"] == "hello"
    rounds = [m for m in traffic.received() if m.get("result", {}).get("inputRequests")]
    assert (len(traffic.received("roots/list")), len(rounds)) == (
        (1, 0) if era == "2025-11-25" else (0, 1)
    )


async def test_progress_read_together_with_the_result_still_reaches_the_callback() -> None:
    # The client matches a progress notification to its call as it reads it, before the
    # response that follows in the same read settles the call (unlike the TypeScript
    # SDK's client: see tests/interop/test_ts_sdk_client.py).
    async with raw("one_write", timeout=5) as client:
        seen: list[list[Any]] = []
        for _ in range(3):
            seen.append([])
            result = await client.call_tool("work", progress=lambda *a: seen[-1].append(a[0]))
            assert text_of(result) == "done"
        assert seen == [[0, 50, 100]] * 3


async def test_env_and_cwd_reach_the_server(tmp_path: Path) -> None:
    async with demo(env={"MCPKIT_TEST_VALUE": "xyz"}, cwd=tmp_path, timeout=10) as client:
        assert text_of(await client.call_tool("environ", {"name": "MCPKIT_TEST_VALUE"})) == "xyz"
        # The parent's environment is inherited too (PATH and friends).
        assert text_of(await client.call_tool("environ", {"name": "PATH"})) == os.environ["PATH"]
        assert text_of(await client.call_tool("cwd")) == str(tmp_path)


async def test_stderr_goes_to_a_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcpkit.client.stderr")
    async with demo(name="files", timeout=10) as client:
        await client.call_tool("to_stderr", {"text": "warming up the cache"})
        assert await wait_until(
            lambda: "[files] warming up the cache" in caplog.messages, timeout=2
        )


async def test_closing_leaves_no_process_behind() -> None:
    async with demo(timeout=10) as client:
        pid = int(text_of(await client.call_tool("pid")))
        grandchild = int(text_of(await client.call_tool("spawn_child")))
        assert transport_of(client).pid == pid
        assert alive(pid) and alive(grandchild)
    assert not alive(pid)
    assert await wait_until(lambda: not alive(grandchild))
    assert group_members(pid) == []


async def test_server_killed_mid_call_fails_the_call_promptly(traffic: Traffic) -> None:
    async with demo(trace=traffic, timeout=30) as client:
        pid = transport_of(client).pid
        assert pid is not None
        call = asyncio.create_task(client.call_tool("hang"))
        await asyncio.sleep(0.1)
        start = time.monotonic()
        os.killpg(pid, signal.SIGKILL)
        with pytest.raises(ServerExited) as info:
            await asyncio.wait_for(call, 5)
        assert time.monotonic() - start < 5.0  # the call's timeout is 30 s
        assert f"(pid {pid}) was killed by signal SIGKILL" in str(info.value)
        assert info.value.returncode == -signal.SIGKILL
        # Later calls fail at once with the same story.
        with pytest.raises(ConnectionClosed, match="SIGKILL"):
            await client.ping()
    assert not alive(pid)
    assert group_members(pid) == []


async def test_what_a_dead_server_started_is_stopped_at_once() -> None:
    """Only the server is killed: its child (npx's node, say) is stopped without waiting
    for the client to close."""
    async with demo(timeout=30) as client:
        pid = transport_of(client).pid
        assert pid is not None
        child = int(text_of(await client.call_tool("spawn_child")))
        assert alive(child)
        call = asyncio.create_task(client.call_tool("hang"))
        await asyncio.sleep(0.1)
        os.kill(pid, signal.SIGKILL)  # the server alone, not its group
        with pytest.raises(ServerExited):
            await asyncio.wait_for(call, 5)
        for _ in range(300):
            if not alive(child):
                break
            await asyncio.sleep(0.01)
        assert not alive(child)  # the client is still open
    assert group_members(pid) == []


async def test_server_exit_names_the_status_and_last_stderr_lines() -> None:
    async with demo(name="db", timeout=30) as client:
        with pytest.raises(ServerExited) as info:
            await asyncio.wait_for(client.call_tool("die", {"status": 3}), 5)
    message = str(info.value)
    assert "MCP server 'db'" in message
    assert "exited with status 3" in message
    assert "about to die" in message
    assert info.value.returncode == 3


@pytest.mark.uvloop
def test_the_stdio_client_works_on_uvloop() -> None:
    import uvloop  # installed with the dev extra (uvicorn[standard])

    async def main() -> str:
        async with Client(command=PYTHON, args=[DEMO], timeout=30) as client:
            result = await client.call_tool("add", {"a": 2, "b": 3})
        return str(result["content"][0]["text"])

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert runner.run(main()) == "5"
