"""Middleware in memory: order, short-circuits, errors, cancellation and what it sees."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpkit import (
    CallNext,
    ConfigurationError,
    Context,
    Forbidden,
    InvalidParams,
    MCPError,
    MCPServer,
    MiddlewareContext,
)
from mcpkit.testing import connect
from tests import schema

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "modern-client", "version": "2.0"},
}


def tagging(name: str, trail: list[str]) -> Any:
    async def mw(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        trail.append(f"{name}>")
        try:
            return await call_next(ctx)
        finally:
            trail.append(f"<{name}")

    return mw


def make_server(**options: Any) -> MCPServer:
    server = MCPServer(name="mw", version="1.0.0", **options)

    @server.tool
    async def echo(text: str) -> str:
        trail = getattr(server, "trail", None)
        if trail is not None:
            trail.append("handler")
        return text

    @server.tool
    async def crash() -> str:
        raise RuntimeError("secret internal detail")

    @server.tool
    async def slow(ctx: Context) -> str:
        await asyncio.sleep(30)
        return "slept"

    return server


async def _drop(message: dict[str, Any]) -> None:
    return None


async def modern(
    server: MCPServer, rid: Any, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    """One 2026-07-28 request on a fresh connection (as stdio's first message), validated."""
    msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": META}}
    reply = await server.create_session().handle(msg, _drop)
    assert reply is not None
    schema.validate_message(reply, MODERN, request_method=method)
    return reply


async def test_several_middlewares_nest_in_list_order_on_both_eras() -> None:
    trail: list[str] = []
    server = make_server(middleware=[tagging("a", trail), tagging("b", trail)])
    server.add_middleware(tagging("c", trail))  # added last: innermost
    server.trail = trail  # type: ignore[attr-defined]
    async with connect(server) as client:
        trail.clear()
        await client.call_tool("echo", {"text": "hi"})
        assert trail == ["a>", "b>", "c>", "handler", "<c", "<b", "<a"]
    async with server.lifespan_context():
        trail.clear()
        reply = await modern(server, 1, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        assert reply["result"]["content"][0]["text"] == "x"
        assert trail == ["a>", "b>", "c>", "handler", "<c", "<b", "<a"]
    assert server.middleware[2] is not None and len(server.middleware) == 3


async def test_a_middleware_short_circuits_with_a_result_the_handler_never_runs() -> None:
    async def canned(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method == "tools/call":
            return {"content": [{"type": "text", "text": "from the middleware"}]}
        return await call_next(ctx)

    trail: list[str] = []
    server = make_server(middleware=[canned])
    server.trail = trail  # type: ignore[attr-defined]
    async with connect(server) as client:
        result = await client.call_tool("echo", {"text": "hi"})
        assert result["content"][0]["text"] == "from the middleware"
    async with server.lifespan_context():
        reply = await modern(server, 7, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
        # Completed for the era like any result: resultType and the server's identity.
        assert reply["result"]["resultType"] == "complete"
        assert reply["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mw"
    assert trail == []


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_a_middleware_refuses_with_an_mcp_error(era: str) -> None:
    async def refuse(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.params.get("name") == "echo":
            raise Forbidden("echo is off today", data={"tool": "echo"})
        if ctx.params.get("name") == "crash":
            raise InvalidParams("no crashing")
        return await call_next(ctx)

    trail: list[str] = []
    server = make_server(middleware=[refuse])
    server.trail = trail  # type: ignore[attr-defined]
    if era == "handshake":
        async with connect(server) as client:
            reply = await client.send_raw(
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}
            )
            other = await client.send_raw(
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "crash"}}
            )
    else:
        reply = await modern(server, 1, "tools/call", {"name": "echo", "arguments": {}})
        other = await modern(server, 2, "tools/call", {"name": "crash", "arguments": {}})
    assert reply["error"] == {
        "code": -31403,
        "message": "echo is off today",
        "data": {"tool": "echo"},
    }
    assert other["error"]["code"] == -32602 and other["error"]["message"] == "no crashing"
    assert trail == []


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_call_next_raises_the_error_the_client_gets(era: str) -> None:
    seen: list[tuple[type[BaseException], int, str]] = []

    async def watch(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        try:
            return await call_next(ctx)
        except MCPError as exc:
            seen.append((type(exc), exc.code, exc.message))
            raise

    server = make_server(middleware=[watch])
    server.resource("demo://x")(lambda: "x")

    @server.resource("demo://broken")
    def broken() -> str:
        raise RuntimeError("secret internal detail")

    async with connect(server) as client:
        for rid, uri in enumerate(["demo://missing", "demo://broken"]):
            if era == "handshake":
                reply = await client.send_raw(
                    {
                        "jsonrpc": "2.0",
                        "id": rid,
                        "method": "resources/read",
                        "params": {"uri": uri},
                    }
                )
            else:
                reply = await modern(server, rid, "resources/read", {"uri": uri})
            assert "secret" not in str(reply)
    # Resource not found is -32002 to the middleware on both eras (2026-07-28 sends -32602).
    assert [code for _, code, _ in seen] == [-32002, -32603]
    assert all("secret" not in message for _, _, message in seen)


async def test_the_context_shows_method_params_session_and_auth() -> None:
    seen: list[dict[str, Any]] = []

    async def look(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        seen.append(
            {
                "method": ctx.method,
                "params": ctx.params,
                "id": ctx.request_id,
                "auth": ctx.auth_info,
                "session_id": ctx.session_id,
                "client": (ctx.client_info or {}).get("name"),
                "revision": ctx.revision,
                "era": ctx.era,
                "state": ctx.lifespan_state,
                "server": ctx.server.name,
            }
        )
        return await call_next(ctx)

    @contextlib.asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[str]:
        yield "the state"

    server = make_server(middleware=[look], lifespan=lifespan)
    async with connect(server) as client:
        await client.call_tool("echo", {"text": "hi"})
    async with server.lifespan_context():
        await modern(server, "m1", "tools/call", {"name": "echo", "arguments": {"text": "x"}})
    initialize, handshake_call, modern_call = seen
    assert initialize["method"] == "initialize"
    assert handshake_call["method"] == "tools/call"
    assert handshake_call["params"] == {"name": "echo", "arguments": {"text": "hi"}}
    assert handshake_call["client"] == "mcpkit-test-client"
    assert (handshake_call["revision"], handshake_call["era"]) == ("2025-11-25", "handshake")
    assert handshake_call["state"] == "the state" and handshake_call["server"] == "mw"
    assert handshake_call["auth"] is None and handshake_call["session_id"] is None
    # 2026-07-28: the envelope is read before the chain runs.
    assert modern_call["id"] == "m1"
    assert (modern_call["revision"], modern_call["era"]) == (MODERN, "stateless")
    assert modern_call["client"] == "modern-client"


async def test_notifications_and_refused_requests_do_not_reach_middleware() -> None:
    methods: list[str] = []

    async def log(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        methods.append(ctx.method)
        return await call_next(ctx)

    server = make_server(middleware=[log])
    async with connect(server, initialize=False) as client:
        early = await client.send_raw({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert early["error"]["code"] == -32600  # before initialize: the protocol refuses
        await client.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client.client_info},
        )
        await client.notify("notifications/initialized")
        unknown = await client.send_raw({"jsonrpc": "2.0", "id": 2, "method": "no/such"})
        assert unknown["error"]["code"] == -32601
        await client.request("ping")
    assert methods == ["initialize", "ping"]


async def test_a_cancelled_request_reaches_the_middleware_as_cancellation() -> None:
    outcome: list[str] = []
    started = asyncio.Event()

    async def watch(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        started.set()
        try:
            return await call_next(ctx)
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise

    server = make_server(middleware=[watch])
    async with connect(server) as client:
        call = asyncio.ensure_future(
            client.send_raw(
                {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "slow"}}
            )
        )
        async with asyncio.timeout(10):
            await started.wait()
            await client.notify("notifications/cancelled", {"requestId": 9})
            assert await call is None  # no response to a cancelled request
    assert outcome == ["cancelled"]


async def test_a_middleware_that_returns_no_result_is_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def forgetful(ctx: MiddlewareContext, call_next: CallNext) -> Any:
        await call_next(ctx)  # forgot to return it

    server = make_server(middleware=[forgetful])
    async with connect(server, initialize=False) as client:
        reply = await client.send_raw(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            }
        )
    assert reply["error"]["code"] == -32603
    assert "return await call_next(ctx)" in caplog.text


def test_middleware_option_is_checked() -> None:
    with pytest.raises(ConfigurationError, match=r"middleware\[1\]"):
        MCPServer(name="x", version="1", middleware=[tagging("a", []), "not callable"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="list of async functions"):
        MCPServer(name="x", version="1", middleware=tagging("a", []))  # type: ignore[arg-type]


async def test_crash_in_a_tool_is_still_a_tool_error_with_middleware() -> None:
    server = make_server(middleware=[tagging("a", [])])
    async with connect(server) as client:
        result = await client.call_tool("crash", {})
    assert result["isError"] is True and "secret" not in str(result)
