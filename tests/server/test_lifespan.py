"""The application lifespan: entered once, reachable from tools, clear failures."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, Context, LifespanError, MCPServer
from mcpkit.testing import connect


def counted_server(**options: Any) -> tuple[MCPServer, list[str]]:
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[dict[str, Any]]:
        events.append("enter")
        yield {"pool": f"pool of {server.name}"}
        events.append("exit")

    server = MCPServer(name="life", version="1.0.0", lifespan=lifespan, **options)

    @server.tool
    async def which_pool(ctx: Context) -> str:
        return str(ctx.lifespan_state["pool"])

    return server, events


async def test_one_entry_shared_by_concurrent_connections() -> None:
    server, events = counted_server()
    async with connect(server) as a, Client(server=server) as b:
        assert events == ["enter"]
        first = await a.call_tool("which_pool", {})
        second = await b.call_tool("which_pool", {})
        assert first["content"][0]["text"] == second["content"][0]["text"] == "pool of life"
    assert events == ["enter", "exit"]


async def test_state_outside_the_lifespan_is_a_clear_error() -> None:
    server, _ = counted_server()
    with pytest.raises(LifespanError, match=r"is not running.*lifespan_context"):
        server.lifespan_state  # noqa: B018
    # execute_tool runs without a transport: enter the lifespan by hand.
    async with server.lifespan_context() as state:
        assert state == {"pool": "pool of life"}
        result = await server.execute_tool("which_pool")
    assert result["content"][0]["text"] == "pool of life"
    assert MCPServer(name="plain", version="1").lifespan_state is None


async def test_a_lifespan_that_fails_to_start_stops_the_connection() -> None:
    @contextlib.asynccontextmanager
    async def broken(server: MCPServer) -> AsyncIterator[None]:
        raise ConnectionRefusedError("database at db:5432 refused")
        yield

    server = MCPServer(name="broken", version="1", lifespan=broken)
    with pytest.raises(LifespanError) as caught:
        async with connect(server):
            pass
    assert str(caught.value) == (
        "the lifespan of server 'broken' failed to start: "
        "ConnectionRefusedError: database at db:5432 refused"
    )
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)
    # Not half-entered: a later start tries again.
    with pytest.raises(LifespanError):
        async with server.lifespan_context():
            pass


async def test_a_lifespan_that_is_not_a_context_manager_is_named() -> None:
    server = MCPServer(name="wrong", version="1", lifespan=lambda server: {"pool": 1})  # type: ignore[arg-type,return-value]
    with pytest.raises(LifespanError, match="not an async context manager"):
        async with server.lifespan_context():
            pass


async def test_asgi_lifespan_events_enter_and_exit_it() -> None:
    server, events = counted_server()
    app = server.http_app()
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    task = asyncio.ensure_future(app({"type": "lifespan"}, inbox.get, send))
    await inbox.put({"type": "lifespan.startup"})
    async with asyncio.timeout(5):
        while not sent:
            await asyncio.sleep(0.01)
    assert sent == [{"type": "lifespan.startup.complete"}] and events == ["enter"]
    assert server.lifespan_state == {"pool": "pool of life"}
    await inbox.put({"type": "lifespan.shutdown"})
    async with asyncio.timeout(5):
        await task
    assert sent[-1] == {"type": "lifespan.shutdown.complete"} and events == ["enter", "exit"]


async def test_asgi_startup_failure_is_reported_to_the_server() -> None:
    @contextlib.asynccontextmanager
    async def broken(server: MCPServer) -> AsyncIterator[None]:
        raise RuntimeError("no database")
        yield

    app = MCPServer(name="broken", version="1", lifespan=broken).sse_app()
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await inbox.put({"type": "lifespan.startup"})
    async with asyncio.timeout(5):
        await app({"type": "lifespan"}, inbox.get, send)
    # The exception itself rides along for mcpkit's serve(), which raises it.
    error = sent[0].pop("mcpkit.error")
    text = "the lifespan of server 'broken' failed to start: RuntimeError: no database"
    assert isinstance(error, LifespanError) and str(error) == text
    assert sent == [{"type": "lifespan.startup.failed", "message": text}]


def test_stdio_startup_failure_exits_with_the_message(tmp_path: Path) -> None:
    script = tmp_path / "broken_server.py"
    script.write_text(
        textwrap.dedent(
            """
            import contextlib
            from mcpkit import MCPServer

            @contextlib.asynccontextmanager
            async def lifespan(server):
                raise RuntimeError("no database")
                yield

            server = MCPServer(name="broken", version="1", lifespan=lifespan)
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "mcpkit", "run", str(script)],
        input=b"",
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 2
    err = done.stderr.decode()
    assert "the lifespan of server 'broken' failed to start: RuntimeError: no database" in err
    assert "Traceback" not in err


async def test_added_lifespans_run_inside_the_servers_own_in_order() -> None:
    events: list[str] = []

    def tracked(label: str) -> Any:
        @contextlib.asynccontextmanager
        async def lifespan(server: MCPServer) -> AsyncIterator[str]:
            events.append(f"enter {label}")
            yield label
            events.append(f"exit {label}")

        return lifespan

    server = MCPServer(name="life", version="1.0.0", lifespan=tracked("own"))
    server.add_lifespan(tracked("a"), label="a")
    server.add_lifespan(tracked("b"), label="b")
    async with server.lifespan_context() as state:
        assert state == "own"  # what the added ones yield is not the server's state
    assert events == ["enter own", "enter a", "enter b", "exit b", "exit a", "exit own"]


async def test_an_added_lifespan_runs_on_a_server_without_its_own() -> None:
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[None]:
        events.append("enter")
        yield
        events.append("exit")

    server = MCPServer(name="life", version="1.0.0")
    server.add_lifespan(lifespan, label="extra")
    async with connect(server):
        assert events == ["enter"]
    assert events == ["enter", "exit"]
