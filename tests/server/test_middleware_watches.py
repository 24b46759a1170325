"""Middleware that watch some methods, replace params, and see notifications."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import CallNext, ConfigurationError, MCPServer, MiddlewareContext
from mcpkit.server.middleware import ANY_NOTIFICATION, for_methods
from mcpkit.testing import connect
from tests.server.test_middleware import make_server, modern


def recording(seen: list[str], *methods: str) -> Any:
    async def mw(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        seen.append(ctx.method)
        return await call_next(ctx)

    return for_methods(*methods)(mw) if methods else mw


async def test_a_middleware_watching_tools_call_is_left_out_of_other_methods() -> None:
    watched: list[str] = []
    everything: list[str] = []
    server = make_server(middleware=[recording(everything), recording(watched, "tools/call")])
    async with connect(server) as client:
        await client.list_tools()
        await client.call_tool("echo", {"text": "hi"})
    async with server.lifespan_context():
        await modern(server, 1, "tools/list", {})
        await modern(server, 2, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
    assert watched == ["tools/call", "tools/call"]
    assert everything == ["initialize", "tools/list", "tools/call", "tools/list", "tools/call"]


async def test_methods_no_middleware_watches_are_served_without_a_chain() -> None:
    server = make_server(middleware=[recording([], "tools/call")])
    chains = server.middleware_chains.requests
    assert set(chains) == {"tools/call"}
    # The handshake table: the bare handler for every other method.
    assert server.wrapped_methods["tools/list"] is server.methods["tools/list"]
    assert server.wrapped_methods["tools/call"] is not server.methods["tools/call"]


@pytest.mark.no_schema_check  # an additional method: in no revision's schema
async def test_a_method_added_later_gets_the_chain_of_the_middleware_watching_it() -> None:
    seen: list[str] = []
    server = make_server(middleware=[recording(seen, "acme/ping")])

    async def acme_ping(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"pong": True}

    server.add_method("acme/ping", acme_ping)
    async with connect(server) as client:
        assert (await client.request("acme/ping"))["pong"] is True
        await client.list_tools()
    assert seen == ["acme/ping"]


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_replacing_ctx_params_changes_what_the_handler_serves(era: str) -> None:
    async def shout(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        args = ctx.params["arguments"]
        ctx.params = {**ctx.params, "arguments": {**args, "text": args["text"].upper()}}
        return await call_next(ctx)

    server = make_server(middleware=[for_methods("tools/call")(shout)])
    call = {"name": "echo", "arguments": {"text": "hi"}}
    if era == "handshake":
        async with connect(server) as client:
            result = await client.call_tool("echo", {"text": "hi"})
    else:
        async with server.lifespan_context():
            result = (await modern(server, 3, "tools/call", call))["result"]
    assert result["content"][0]["text"] == "HI"
    assert call["arguments"] == {"text": "hi"}  # the request's own dict is left as it was


async def test_a_middleware_watching_notifications_sees_them_after_the_server_acted() -> None:
    seen: list[tuple[str, Any, str]] = []
    done = asyncio.Event()

    async def note(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        # The session is ready already: the lifecycle did not wait for the middleware.
        seen.append((ctx.method, ctx.request_id, ctx.session.state.value))
        result = await call_next(ctx)
        if ctx.method == "notifications/roots/list_changed":
            done.set()
        return result

    requests: list[str] = []
    server = make_server(
        middleware=[for_methods(ANY_NOTIFICATION)(note), recording(requests)],
    )
    async with connect(server) as client:
        await client.notify("notifications/roots/list_changed")
        await asyncio.wait_for(done.wait(), 5)
        await client.list_tools()
    assert seen == [
        ("notifications/initialized", None, "ready"),
        ("notifications/roots/list_changed", None, "ready"),
    ]
    assert requests == ["initialize", "tools/list"]  # no notification for the others


async def test_a_named_notification_is_the_only_one_seen() -> None:
    seen: list[str] = []
    done = asyncio.Event()

    async def note(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        seen.append(ctx.method)
        done.set()
        return await call_next(ctx)

    server = make_server(middleware=[for_methods("notifications/roots/list_changed")(note)])
    async with connect(server) as client:
        await client.notify("notifications/roots/list_changed")
        await asyncio.wait_for(done.wait(), 5)
        await client.list_tools()
    assert seen == ["notifications/roots/list_changed"]


def test_watches_is_checked() -> None:
    async def mw(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        return await call_next(ctx)

    mw.watches = "tools/call"  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="collection of method names"):
        MCPServer(name="x", middleware=[mw])
    mw.watches = {"tools/call": "not callable"}  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match="method names"):
        MCPServer(name="x", middleware=[mw])
    with pytest.raises(ConfigurationError, match="one or more"):
        for_methods()
