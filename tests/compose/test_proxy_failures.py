"""proxy() when its upstream fails: refused, restarted, too slow, or answering garbage.

Each failure is a clear ``-32603`` error naming the upstream (an upstream's own JSON-RPC
errors keep their codes), and the next request connects again. Each runs for a
handshake-era downstream (its session's own upstream) and a 2026-07-28 one (the pool).
The HTTP upstreams are mcpkit servers on uvicorn, on a real port that a test frees and
binds again; the garbage one is a hand-written stdio process
(``tests/fixtures/garbage_upstream.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpkit import Client, MCPServer
from mcpkit.compose import proxy
from mcpkit.errors import RemoteError
from mcpkit.server.middleware import CallNext, MiddlewareContext
from tests.client.http_servers import free_socket, serve, unused_port
from tests.transports.stdio_peer import FIXTURES

ERAS = ["2025-11-25", "2026-07-28"]
GARBAGE = {"command": sys.executable, "args": [str(FIXTURES / "garbage_upstream.py")]}


def upstream(label: str) -> tuple[MCPServer, list[str]]:
    """A server whose ``who`` tool says which one it is; it records the methods it served."""
    server = MCPServer(name=label, version="1")
    methods: list[str] = []

    async def record(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        methods.append(ctx.method)
        return await call_next(ctx)

    server.add_middleware(record)

    @server.tool
    def who() -> str:
        return label

    @server.tool
    async def nap(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "rested"

    return server, methods


@contextlib.asynccontextmanager
async def serving(server: MCPServer, port: int) -> AsyncIterator[str]:
    async with serve(server.http_app(), free_socket(port)) as url:
        yield url


async def who(client: Client) -> str:
    return str((await client.call_tool("who", {}))["content"][0]["text"])


@pytest.mark.parametrize("era", ERAS)
async def test_a_refused_connection_is_a_clear_error_and_the_next_request_connects(
    era: str,
) -> None:
    port = unused_port()
    url = f"http://127.0.0.1:{port}/mcp"
    server = proxy(url)
    async with Client(server=server, protocol_version=era) as client:
        with pytest.raises(RemoteError, match=r"upstream server .* is unavailable") as exc:
            await client.call_tool("who", {})
        assert exc.value.code == -32603
        assert exc.value.data == {"upstream": repr(url)}
        assert str(port) in str(exc.value)
        up, _ = upstream("late")
        async with serving(up, port):
            assert await who(client) == "late"


@pytest.mark.parametrize("era", ERAS)
async def test_an_upstream_restarted_between_calls_is_reconnected_in_the_next_call(
    era: str,
) -> None:
    port = unused_port()
    first, _ = upstream("first")
    second, second_methods = upstream("second")
    server = proxy(f"http://127.0.0.1:{port}/mcp")
    async with Client(server=server, protocol_version=era) as client:
        async with serving(first, port):
            assert await who(client) == "first"
        async with serving(second, port):
            # The old upstream session is unknown to the new process (404): the upstream
            # client opens a new one and the call goes through on it.
            assert await who(client) == "second"
        assert second_methods[0] == "initialize"


@pytest.mark.parametrize("era", ERAS)
async def test_an_upstream_down_mid_session_fails_clearly_then_comes_back(era: str) -> None:
    port = unused_port()
    first, _ = upstream("first")
    server = proxy(f"http://127.0.0.1:{port}/mcp")
    async with Client(server=server, protocol_version=era) as client:
        async with serving(first, port):
            assert await who(client) == "first"
        with pytest.raises(RemoteError, match=r"upstream server .* is unavailable") as exc:
            await client.call_tool("who", {})
        assert exc.value.code == -32603
        second, _ = upstream("second")
        async with serving(second, port):
            assert await who(client) == "second"


@pytest.mark.parametrize("era", ERAS)
async def test_an_upstream_too_slow_to_answer_is_a_timeout_error_and_the_next_call_works(
    era: str,
) -> None:
    slow, _ = upstream("slow")
    port = unused_port()
    async with serving(slow, port) as url:
        server = proxy({"url": url, "timeout": 0.3})
        async with Client(server=server, protocol_version=era) as client:
            with pytest.raises(RemoteError, match=r"did not answer in time") as exc:
                await client.call_tool("nap", {"seconds": 5})
            assert exc.value.code == -32603
            assert exc.value.data == {"upstream": repr(url)}
            assert await who(client) == "slow"


@pytest.mark.parametrize("era", ERAS)
async def test_an_upstream_error_is_not_a_failure_and_keeps_its_code(era: str) -> None:
    up, methods = upstream("errors")
    async with Client(server=proxy(up), protocol_version=era) as client:
        with pytest.raises(RemoteError, match="missing") as exc:
            await client.call_tool("missing", {})
        assert exc.value.code == -32602  # the upstream's own: unknown tool
        failed = await client.call_tool("nap", {"seconds": "not a number"})
        assert failed["isError"] is True  # a tool's error result stays a result
        assert await who(client) == "errors"
    assert methods.count("initialize") == 1  # the connection was kept


@pytest.mark.parametrize("era", ERAS)
async def test_an_upstream_answering_garbage_cannot_exhaust_the_proxy(era: str) -> None:
    # The upstream Client's bounds apply: a message larger than max_message_size ends the
    # connection (not read into memory), a line that is not JSON ends it, a flood of
    # requests is refused beyond max_server_requests; the next call starts a new process.
    server = proxy({**GARBAGE, "max_message_size": 64 * 1024})
    async with Client(server=server, protocol_version=era) as client:
        fine = (await client.call_tool("fine", {}))["content"][0]["text"]
        with pytest.raises(RemoteError, match="larger than max_message_size") as exc:
            await client.call_tool("huge", {})
        assert exc.value.code == -32603
        again = (await client.call_tool("fine", {}))["content"][0]["text"]
        assert again != fine  # a new upstream process
        with pytest.raises(RemoteError, match="not JSON") as exc:
            await client.call_tool("noise", {})
        assert exc.value.code == -32603
        flood = await asyncio.wait_for(client.call_tool("flood", {}), 10)
        assert flood["content"][0]["text"].startswith("flood survived by")
        assert (await client.call_tool("fine", {}))["content"][0]["text"].startswith("fine from")
