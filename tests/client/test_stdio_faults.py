"""Fault handling of the stdio client transport, against misbehaving subprocess servers."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

import pytest

from mcpkit.client import Client
from mcpkit.client.transports.stdio import ServerExited, StdioTransport
from mcpkit.errors import ConnectionClosed, MCPError, PeerTimeout
from tests.client.conftest import DEMO, PYTHON, RAW, alive


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


# -- misbehaving servers ---------------------------------------------------------------------------


async def test_exit_during_a_call_reports_status_and_stderr() -> None:
    async with raw("exit", timeout=30) as client:
        start = time.monotonic()
        with pytest.raises(ServerExited, match="exited with status 7") as info:
            await client.call_tool("anything")
        assert time.monotonic() - start < 5.0  # the call's timeout is 30 s
    assert "the database is on fire" in str(info.value)


async def test_garbage_on_stdout_is_a_clear_error() -> None:
    async with raw("garbage", timeout=30) as client:
        start = time.monotonic()
        with pytest.raises(ConnectionClosed) as info:
            await client.call_tool("anything")
        assert time.monotonic() - start < 5.0  # the call's timeout is 30 s
    message = str(info.value)
    assert "wrote a line to stdout that is not JSON" in message
    assert "Server started! (oops, this went to stdout)" in message
    assert "stderr" in message  # tells the author where logs belong


async def test_a_server_that_never_answers_times_out() -> None:
    client = raw("silent", timeout=0.3)
    start = time.monotonic()
    with pytest.raises(PeerTimeout, match=r"did not answer initialize within 0\.3 s"):
        async with client:
            pass
    assert time.monotonic() - start < 3.0


async def test_a_call_the_server_never_answers_times_out_and_is_cancelled() -> None:
    """A live session whose server stops answering: each call ends at its own timeout."""
    sent: list[dict[str, Any]] = []
    async with raw(
        "mute", timeout=30, trace=lambda d, m: sent.append(m) if d == "sent" else None
    ) as client:
        start = time.monotonic()
        with pytest.raises(PeerTimeout, match=r"did not answer tools/call within 0\.3 s"):
            await client.call_tool("anything", timeout=0.3)
        assert time.monotonic() - start < 3.0  # the call's timeout, not the client's 30 s
        call_id = next(m["id"] for m in sent if m.get("method") == "tools/call")
        cancels = [m for m in sent if m.get("method") == "notifications/cancelled"]
        assert [m["params"]["requestId"] for m in cancels] == [call_id]
        with pytest.raises(PeerTimeout, match="ping"):
            await client.ping(timeout=0.2)  # the session is still usable, the server still mute


async def test_an_unsupported_server_version_is_rejected() -> None:
    with pytest.raises(MCPError) as info:
        async with raw("old_version", timeout=10):
            pass
    message = str(info.value)
    assert "'1999-01-01'" in message and "does not support" in message
    assert "2025-11-25" in message


async def test_a_missing_command_is_reported() -> None:
    with pytest.raises(ServerExited, match="cannot start MCP server"):
        async with Client(command="/nonexistent/mcp-server", timeout=5):
            pass


async def test_a_server_ignoring_eof_and_sigterm_is_killed_with_its_children() -> None:
    transport = StdioTransport(PYTHON, [RAW, "stubborn"], close_timeout=0.2, kill_timeout=0.2)
    async with Client(transport=transport, timeout=10) as client:
        grandchild = int(text_of(await client.call_tool("spawn")))
        pid = transport.pid
        assert pid is not None and alive(grandchild)
        start = time.monotonic()
    assert time.monotonic() - start < 2.0
    assert transport.returncode == -signal.SIGKILL
    assert not alive(pid)
    assert await wait_until(lambda: not alive(grandchild))


async def test_exit_is_noticed_without_pidfd(monkeypatch: pytest.MonkeyPatch) -> None:
    # Platforms without pidfd_open (macOS, old kernels) watch the exit from a thread.
    monkeypatch.delattr(os, "pidfd_open")
    async with raw("exit", timeout=30) as client:
        start = time.monotonic()
        with pytest.raises(ServerExited, match="exited with status 7"):
            await client.call_tool("anything")
        assert time.monotonic() - start < 5.0  # the call's timeout is 30 s
