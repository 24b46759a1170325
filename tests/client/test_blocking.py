"""The blocking facade: the async client driven from plain functions (scripts, notebooks)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from mcpkit.client import Blocking, Client, MCPClient
from mcpkit.client.blocking import LoopThread
from mcpkit.errors import ConnectionClosed, ToolCallError
from tests.client.conftest import DEMO, PYTHON, alive
from tests.client.fixtures.demo_server import build_server


def loop_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "mcpkit-blocking"]


def test_an_mcp_client_used_without_async() -> None:
    before = len(loop_threads())
    mcp = MCPClient(
        servers={"demo": {"server": build_server()}, "stdio": {"command": PYTHON, "args": [DEMO]}}
    )
    with mcp.blocking() as client:
        assert isinstance(client, Blocking)
        assert len(loop_threads()) == before + 1
        tools = client.get_tools()
        add = tools["demo_add"]
        assert add.name == "demo_add"  # attributes pass through
        assert add.input_schema["required"] == ["a", "b"]
        assert add(a=2, b=3) == {"result": 5}
        assert add.call({"a": 1, "b": 1}) == {"result": 2}
        assert tools["stdio_add"](a=4, b=4) == {"result": 8}
        pid = int(tools["stdio_pid"]()["result"])
        # The namespaces block too.
        assert client.resources.read("demo", "memo://greeting")["contents"][0]["text"] == "hello"
        assert set(client.prompts.list()) == {"demo", "stdio"}
        assert client.get_toolsets()["demo"]["echo"](text="x") == [{"type": "text", "text": "x"}]
        # Errors come through as they are.
        with pytest.raises(ToolCallError, match="Invalid arguments"):
            add(a="x", b=1)
        assert client.errors == {}
    assert len(loop_threads()) == before  # the private loop is gone
    assert not alive(pid)  # and the stdio server with it
    with pytest.raises(ConnectionClosed, match="blocking client was closed"):
        add(a=1, b=1)


def test_connect_and_disconnect_without_with() -> None:
    before = len(loop_threads())
    client = MCPClient(servers={"demo": {"server": build_server()}}, id="notebook").blocking()
    client.connect()
    assert client.call_tool("demo", "add", {"a": 1, "b": 2})["content"][0]["text"] == "3"
    client.disconnect()  # also stops the private loop
    assert len(loop_threads()) == before


def test_handlers_run_on_the_private_loop() -> None:
    threads: list[str] = []

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return {"action": "accept", "content": {"name": "Ada"}}

    mcp = MCPClient(servers={"demo": {"server": build_server()}})
    mcp.elicitation.on_request("demo", elicit)
    with mcp.blocking() as client:
        answer = client.call_tool("demo", "ask_user")
    assert answer["structuredContent"]["content"]["name"] == "Ada"
    assert threads == ["mcpkit-blocking"]


def test_a_single_server_client_works_too() -> None:
    with Blocking(Client(server=build_server())) as client:
        assert client.server_info["name"] == "demo"
        assert client.call_tool("add", {"a": 1, "b": 2})["content"][0]["text"] == "3"


async def test_usable_while_another_event_loop_runs_in_this_thread() -> None:
    # Jupyter runs its own loop in the main thread; asyncio.run() would refuse there.
    with MCPClient(servers={"demo": {"server": build_server()}}, id="jupyter").blocking() as mcp:
        assert mcp.get_tools()["demo_add"](a=1, b=1) == {"result": 2}


def test_a_failed_start_stops_the_loop() -> None:
    before = len(loop_threads())
    mcp = Blocking(Client(command="/nonexistent/server"))
    with pytest.raises(ConnectionClosed, match="cannot start"):
        with mcp:
            pass
    assert len(loop_threads()) == before


def test_stopping_ends_a_task_that_lost_its_cancellation() -> None:
    # Python 3.11's asyncio.wait_for can drop a cancellation (CPython gh-86296): the loop's
    # stop cancels again, and never waits forever.
    thread = LoopThread()
    lost: list[int] = []

    async def stubborn() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            lost.append(1)  # dropped: it runs on
        await asyncio.sleep(3600)

    async def spawn() -> None:
        task = asyncio.ensure_future(stubborn())
        await asyncio.sleep(0)
        assert not task.done()

    thread.run(spawn)
    stopping = threading.Thread(target=thread.stop, daemon=True)
    stopping.start()
    stopping.join(timeout=4.0)
    assert not stopping.is_alive(), "LoopThread.stop() waits forever on a lost cancellation"
    assert lost == [1]
    assert thread.loop.is_closed()
