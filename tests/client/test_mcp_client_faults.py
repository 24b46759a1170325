"""``MCPClient`` with real servers: stdio subprocesses and HTTP on uvicorn, including broken ones.

One server failing to start, dying, or being slow must never take the others down.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import time
from typing import Any

import pytest

from mcpkit.client import MCPClient
from mcpkit.client.transports.stdio import ServerExited
from mcpkit.errors import ConnectionClosed, PeerTimeout
from tests.client.conftest import DEMO, PYTHON, RAW, Traffic, alive
from tests.client.fixtures.demo_server import build_server
from tests.client.http_servers import serve, unused_port

TIMEOUT = 10.0


def demo(**options: Any) -> dict[str, Any]:
    return {"command": PYTHON, "args": [DEMO], **options}


def text(result: Any) -> str:
    # An int result is structured ({"result": n}); text results are content blocks.
    return str(result["result"]) if isinstance(result, dict) else str(result[0]["text"])


async def wait_until(predicate: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return bool(predicate())


async def test_servers_that_fail_to_start_do_not_break_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    crash = "import sys; sys.stderr.write('missing API key\\n'); sys.exit(3)"
    servers = {
        "good": demo(),
        "missing": {"command": "/nonexistent/mcp-server"},
        "crash": {"command": PYTHON, "args": ["-c", crash]},
        "silent": {"command": PYTHON, "args": [RAW, "silent"], "timeout": 0.5},
        "nowhere": {"url": f"http://127.0.0.1:{unused_port()}/mcp"},
    }
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, "mcpkit.client"):
        async with MCPClient(servers=servers, timeout=TIMEOUT) as mcp:
            # Connected concurrently: the slowest failure (0.5 s) bounds the start.
            assert time.monotonic() - start < 3.0
            errors = mcp.errors
            assert set(errors) == {"missing", "crash", "silent", "nowhere"}
            assert "No such file or directory" in str(errors["missing"])
            assert "exited with status 3" in str(errors["crash"])
            assert "missing API key" in str(errors["crash"])
            assert isinstance(errors["silent"], PeerTimeout)
            assert "ConnectError" in str(errors["nowhere"])
            # The good server works through every API.
            tools = await mcp.get_tools()
            assert {t.server_name for t in tools.values()} == {"good"}
            assert text(await tools["good_add"](a=1, b=2)) == "3"
            assert set(await mcp.resources.list()) == {"good"}
            assert set(await mcp.prompts.list()) == {"good"}
            # Calls to a broken server fail at once, naming it and what went wrong.
            for name, detail in [("crash", "exited with status 3"), ("missing", "No such file")]:
                with pytest.raises(ConnectionClosed, match=f"'{name}' failed to start") as info:
                    await mcp.call_tool(name, "add", {"a": 1, "b": 2})
                assert detail in str(info.value)
            with pytest.raises(ConnectionClosed, match="'silent' failed to start"):
                await mcp.resources.read("silent", "memo://greeting")
            with pytest.raises(ConnectionClosed, match="'nowhere' failed to start"):
                await mcp.prompts.get(server_name="nowhere", name="review")
    for name in ("missing", "crash", "silent", "nowhere"):
        assert f"MCP server '{name}' failed to start" in caplog.text


async def test_a_killed_stdio_server_fails_its_calls_and_spares_the_others() -> None:
    async with MCPClient(servers={"a": demo(), "b": demo()}, timeout=TIMEOUT) as mcp:
        tools = await mcp.get_tools()
        pid = int(text(await tools["a_pid"]()))
        hanging = asyncio.create_task(tools["a_hang"]())
        await asyncio.sleep(0.2)
        os.kill(pid, signal.SIGKILL)
        start = time.monotonic()
        # The call in flight fails promptly, naming the server and how it died.
        with pytest.raises(ServerExited, match=r"'a'.*killed by signal SIGKILL"):
            await asyncio.wait_for(hanging, TIMEOUT)
        assert time.monotonic() - start < 5.0  # well below TIMEOUT
        # So do later calls, through the tools already handed out and new ones.
        with pytest.raises(ServerExited, match="SIGKILL"):
            await tools["a_add"](a=1, b=1)
        with pytest.raises(ServerExited, match="SIGKILL"):
            await mcp.resources.read("a", "memo://greeting")
        assert set(mcp.errors) == {"a"}
        # The other server carries on, and listings skip the dead one.
        assert text(await tools["b_add"](a=1, b=1)) == "2"
        assert {t.server_name for t in (await mcp.get_tools()).values()} == {"b"}
        assert set(await mcp.resources.list()) == {"b"}
        assert not alive(pid)
        # It can be brought back.
        await mcp.reconnect("a")
        assert mcp.errors == {}
        assert text(await tools["a_add"](a=2, b=2)) == "4"
        assert int(text(await tools["a_pid"]())) != pid


async def test_timeouts_are_per_server_over_stdio() -> None:
    # Starting a Python server may take longer than 0.3 s on a busy machine.
    servers = {"slow": demo(timeout=0.3, connect_timeout=TIMEOUT), "fine": demo()}
    async with MCPClient(servers=servers, timeout=5) as mcp:
        tools = await mcp.get_tools()
        start = time.monotonic()
        with pytest.raises(PeerTimeout, match=r"'slow' did not answer tools/call within 0\.3 s"):
            await tools["slow_hang"]()
        assert time.monotonic() - start < 4.0  # below the shared 5 s timeout
        # The fine server has the global 5 s: a call that takes longer than 0.3 s succeeds.
        done = await tools["fine_slow"].call({"steps": 40})
        assert text(done) == "done"
        # The timed-out server is still usable.
        assert text(await tools["slow_add"](a=1, b=2)) == "3"


async def test_servers_start_concurrently(tmp_path: Any) -> None:
    # Each server notes when it started, then takes 1 s before it serves. One after the
    # other, each would start after the previous one had answered initialize.
    late = (
        "import pathlib, runpy, sys, time; "
        "pathlib.Path(sys.argv[2]).write_text(repr(time.time())); time.sleep(1.0); "
        "sys.argv = [sys.argv[1]]; runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    marks = [tmp_path / f"s{i}" for i in range(3)]
    servers = {
        f"s{i}": {"command": PYTHON, "args": ["-c", late, DEMO, str(mark)]}
        for i, mark in enumerate(marks)
    }
    async with MCPClient(servers=servers, timeout=TIMEOUT) as mcp:
        assert mcp.errors == {}
        assert len(await mcp.get_toolsets()) == 3
    started = [float(mark.read_text()) for mark in marks]
    assert max(started) - min(started) < 1.0


async def test_disconnect_stops_every_stdio_server() -> None:
    async with MCPClient(servers={"a": demo(), "b": demo()}, timeout=TIMEOUT) as mcp:
        tools = await mcp.get_tools()
        pids = [int(text(await tools[f"{s}_pid"]())) for s in ("a", "b")]
        assert all(alive(p) for p in pids)
    assert await wait_until(lambda: not any(alive(p) for p in pids))


async def test_one_client_for_stdio_streamable_http_and_sse(traffic: Traffic) -> None:
    async with (
        serve(build_server().http_app()) as http_url,
        serve(build_server().sse_app()) as base,
    ):
        sse_url = base.removesuffix("/mcp") + "/sse"
        servers = {
            "local": demo(),
            "remote": {"url": http_url, "headers": {"X-Team": "blue"}, "trace": traffic},
            "legacy": {"url": sse_url},
        }
        async with MCPClient(servers=servers, timeout=TIMEOUT) as mcp:
            assert mcp.errors == {}
            tools = await mcp.get_tools()
            for server in ("local", "remote", "legacy"):
                assert text(await tools[f"{server}_add"](a=1, b=2)) == "3"
            got = await mcp.resources.read("legacy", "memo://greeting")
            assert got["contents"][0]["text"] == "hello"
            prompts = await mcp.prompts.list()
            assert {name: [p["name"] for p in items] for name, items in prompts.items()} == {
                "local": ["review"],
                "remote": ["review"],
                "legacy": ["review"],
            }


async def test_from_config_file_with_a_real_server(tmp_path: Any) -> None:
    path = tmp_path / "claude_desktop_config.json"
    config = {
        "mcpServers": {"demo": {"command": PYTHON, "args": [DEMO], "env": {"GREETING": "hej"}}}
    }
    path.write_text(json.dumps(config))
    async with MCPClient.from_config(path, timeout=TIMEOUT) as mcp:
        tools = await mcp.get_tools()
        assert text(await tools["demo_environ"](name="GREETING")) == "hej"
