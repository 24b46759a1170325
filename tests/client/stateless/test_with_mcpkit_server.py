"""Asking mcpkit's own server for 2026-07-28: the same calls work whichever era it speaks.

The client probes with ``server/discover``; a server with the stateless revision
answers it, an older one is reached through the handshake. Either way the calls,
the callbacks and the notifications below must behave the same.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcpkit.client import Client
from mcpkit.protocol.envelope import SUBSCRIPTION_ID
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.client.fixtures.demo_server import build_server
from tests.client.http_servers import serve

MODERN = "2026-07-28"


async def test_calls_and_notifications_over_http_in_either_era() -> None:
    server = build_server()
    changed: list[str] = []
    updated: list[str] = []
    seen: list[dict[str, object]] = []
    async with (
        serve(StreamableHTTPApp(server, path="/mcp")) as url,
        Client(
            url=url,
            protocol_version=MODERN,
            on_list_changed=changed.append,
            on_resource_updated=updated.append,
            trace=lambda direction, msg: seen.append(msg) if direction == "sent" else None,
            timeout=10,
        ) as client,
    ):
        assert client.protocol_version in (MODERN, "2025-11-25")
        assert client.server_info["name"] == "demo"
        result = await client.call_tool("add", {"a": 1, "b": 2})
        assert result["content"][0]["text"] == "3"
        contents = (await client.read_resource("memo://greeting"))["contents"]
        assert contents[0]["text"] == "hello"
        prompt = await client.get_prompt("review", {"code": "x"})
        assert "x" in prompt["messages"][0]["content"]["text"]
        await client.subscribe_resource("memo://greeting")
        async with asyncio.timeout(5):
            while True:  # the change stream (GET or subscriptions/listen) is up when this lands
                await client.call_tool("touch", {"uri": "memo://greeting"})
                if updated:
                    break
                await asyncio.sleep(0.05)
        await client.call_tool("add_tool", {})
        async with asyncio.timeout(5):
            while "tools" not in changed:
                await asyncio.sleep(0.01)
        assert "extra" in [t["name"] for t in await client.list_tools()]
    methods = [m.get("method") for m in seen]
    assert methods[0] == "server/discover"
    if "initialize" not in methods:  # the stateless era: every request had the envelope
        assert all(
            m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN
            for m in seen
            if "id" in m and m.get("method")
        )


async def sample(params: dict[str, object]) -> dict[str, object]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "Paris"},
        "model": "m",
        "stopReason": "endTurn",
    }


async def test_tools_that_ask_the_client_work_through_input_required_rounds() -> None:
    """ctx.elicit / ctx.sample / ctx.list_roots on a stateless server reach the handlers."""
    options = {
        "protocol_version": MODERN,
        "elicitation_handler": lambda params: {"action": "accept", "content": {"name": "Ada"}},
        "sampling_handler": sample,
        "roots": ["file:///w"],
        "timeout": 10,
    }
    seen: list[dict[str, Any]] = []
    async with (
        serve(StreamableHTTPApp(build_server(), path="/mcp")) as url,
        Client(url=url, trace=lambda d, m: seen.append(m) if d == "sent" else None, **options) as c,
    ):
        assert c.protocol_version == MODERN
        answer = (await c.call_tool("ask_user", {}))["content"][0]["text"]
        assert '"name":"Ada"' in answer
        assert (await c.call_tool("ask_llm", {"question": "q"}))["content"][0]["text"] == "Paris"
        assert (await c.call_tool("roots", {}))["content"][0]["text"] == "file:///w"
    retries = [m for m in seen if "inputResponses" in (m.get("params") or {})]
    assert len(retries) == 3
    async with Client(server=build_server(), **options) as memory:
        assert memory.protocol_version == MODERN
        assert (await memory.call_tool("roots", {}))["content"][0]["text"] == "file:///w"


async def test_a_subscription_holds_once_subscribe_returns_and_replaced_ones_go_quiet() -> None:
    """subscribe_resource waits for the acknowledgment, as resources/subscribe waits for its
    answer; a notification of a replaced subscriptions/listen request is dropped
    (2026-07-28 subscriptions § receiving notifications: demultiplex by subscription id)."""
    updated: list[str] = []
    sent: list[dict[str, Any]] = []
    async with Client(
        server=build_server(),
        on_resource_updated=updated.append,
        trace=lambda d, m: sent.append(m) if d == "sent" else None,
        timeout=10,
    ) as client:
        assert client.protocol_version == MODERN
        listener = client.session.listener
        await client.subscribe_resource("memo://greeting")
        first = listener.live
        assert listener.acknowledged is not None
        assert listener.acknowledged["resourceSubscriptions"] == ["memo://greeting"]
        await client.call_tool("touch", {"uri": "memo://greeting"})
        async with asyncio.timeout(5):
            while not updated:
                await asyncio.sleep(0.01)
        assert updated == ["memo://greeting"]

        await client.subscribe_resource("memo://items/1")
        assert isinstance(first, int) and isinstance(listener.live, int) and listener.live > first

        def updated_from(subscription: object) -> None:
            client.session.message_received(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/resources/updated",
                    "params": {
                        "uri": "memo://greeting",
                        "_meta": {SUBSCRIPTION_ID: subscription},
                    },
                }
            )

        updated.clear()
        updated_from(first)  # the replaced request, still open on a slow server
        assert updated == []
        updated_from(listener.live)
        assert updated == ["memo://greeting"]

        listens = len([m for m in sent if m.get("method") == "subscriptions/listen"])
        await client.unsubscribe_resource("memo://nothing")  # the filter did not change
        assert len([m for m in sent if m.get("method") == "subscriptions/listen"]) == listens
        await client.unsubscribe_resource("memo://greeting")
        await client.unsubscribe_resource("memo://items/1")
        assert "resourceSubscriptions" not in listener.acknowledged
        updated.clear()
        await client.call_tool("touch", {"uri": "memo://greeting"})  # answered after any update
        updated_from(first)
        assert updated == []
