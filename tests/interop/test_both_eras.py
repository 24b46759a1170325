"""Both protocol eras against one running mcpkit HTTP server, at the same time.

One uvicorn server, one mcpkit app. A handshake-era client (2025-11-25: ``initialize``,
an ``Mcp-Session-Id``, server-to-client requests on the session) and a 2026-07-28 client
(``server/discover``, a per-request envelope, input-required rounds, no session) are
connected together and interleave calls with ``asyncio.gather``; each must get its own
correct answers. Then one ``notify_list_changed`` reaches the legacy client's session
(``notifications/tools/list_changed`` on its GET stream) and the 2026 client's
``subscriptions/listen`` stream. This is done with the official SDK's clients
(``mcp.Client(mode="legacy")`` and ``mode="auto"``) and with mcpkit's own.

Every exchange is validated against the schema of the revision it was made in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from mcp import Client as SDKClient
from mcp import types

from mcpkit import MCPServer
from mcpkit.client import Client
from tests.interop.fixtures.peers import Wire
from tests.interop.fixtures.wire_tap import AsgiTap, check_exchanges
from tests.transports.conftest import demo_server, run_app

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
TIMEOUT = 20.0


async def until(condition: Callable[[], bool], poke: Callable[[], Awaitable[None]]) -> None:
    """Call ``poke`` until ``condition`` holds (bounded by the test's timeout).

    A list-changed notification is a level trigger: sending it again is harmless, and it
    covers the legacy client opening its GET stream a moment after the handshake.
    """
    while not condition():
        await poke()
        for _ in range(50):
            if condition():
                return
            await asyncio.sleep(0.01)


def add_extra_tool(server: MCPServer) -> None:
    @server.tool
    def extra() -> str:
        """Added while the clients are connected."""
        return "extra"


# -- the official SDK's clients -----------------------------------------------------------------


class SDKPeer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[str] = []
        self.notifications: list[Any] = []

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        await asyncio.sleep(0.01)  # let the other era's calls run in between
        return types.ElicitResult(action="accept", content={"name": self.name})

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.notifications.append(message)


def sdk_text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def sdk_workload(client: SDKClient, who: str) -> list[str]:
    """The same mixed calls from one client, all at once."""
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async def read() -> str:
        got = (await client.read_resource("demo://items/" + who)).contents[0]
        assert isinstance(got, types.TextResourceContents)
        return got.text

    async def prompt() -> str:
        got = (await client.get_prompt("review", {"code": who})).messages[0].content
        assert isinstance(got, types.TextContent)
        return got.text

    results = await asyncio.gather(
        *(client.call_tool("add", {"a": i, "b": 100}) for i in range(4)),
        client.call_tool("ask", {}),
        client.call_tool("work", {"steps": 2}, progress_callback=on_progress),
    )
    texts = [sdk_text(r) for r in results]
    assert seen == [1, 2]
    return [*texts, await read(), await prompt()]


async def test_sdk_clients_of_both_eras_on_one_server_at_once() -> None:
    server = demo_server()
    tap = AsgiTap(server.http_app())
    old, new = SDKPeer("Legacy"), SDKPeer("Modern")
    async with run_app(tap) as base, asyncio.timeout(TIMEOUT):
        url = base + "/mcp"
        async with (
            SDKClient(
                url, mode="legacy", elicitation_callback=old.elicit, message_handler=old.message
            ) as legacy,
            SDKClient(url, elicitation_callback=new.elicit) as modern,
        ):
            assert legacy.protocol_version == LEGACY
            assert modern.protocol_version == MODERN
            assert len(tap) == 1  # the legacy client's session; the 2026 client has none

            old_answers, new_answers = await asyncio.gather(
                sdk_workload(legacy, "legacy"), sdk_workload(modern, "modern")
            )
            expected = [str(100 + i) for i in range(4)]
            assert old_answers[:4] == expected and new_answers[:4] == expected
            assert old_answers[4:6] == ["hello Legacy", "worked 2"]
            assert new_answers[4:6] == ["hello Modern", "worked 2"]
            assert '"legacy"' in old_answers[6] and '"modern"' in new_answers[6]
            assert old_answers[7] == "Review:\nlegacy" and new_answers[7] == "Review:\nmodern"
            assert old.asked == new.asked == ["What is your name?"]

            # A tool list change reaches both eras from the same notify call.
            async with modern.listen(tools_list_changed=True) as subscription:
                assert subscription.honored.tools_list_changed
                events: list[Any] = []

                async def collect() -> None:
                    async for event in subscription:
                        events.append(event)

                collector = asyncio.create_task(collect())
                add_extra_tool(server)
                await until(
                    lambda: bool(old.notifications and events), server.tools.notify_list_changed
                )
                collector.cancel()
            assert "extra" in {t.name for t in (await legacy.list_tools()).tools}
            assert "extra" in {t.name for t in (await modern.list_tools()).tools}

    # The two eras' traffic, apart: the legacy one all in a session, the 2026 one without.
    legacy_exchanges, modern_exchanges = tap.of(LEGACY), tap.of(MODERN)
    assert len(tap.exchanges) == len(legacy_exchanges) + len(modern_exchanges)
    assert all(
        "mcp-session-id" in e.request_headers
        for e in legacy_exchanges
        if e.rpc_method != "initialize"
    )
    assert not any("mcp-session-id" in e.response_headers for e in modern_exchanges)
    assert any(
        m.get("method") == "elicitation/create" for e in legacy_exchanges for m in e.messages
    )
    assert any(
        m.get("result", {}).get("resultType") == "input_required"
        for e in modern_exchanges
        for m in e.messages
    )
    listened = [e for e in modern_exchanges if e.rpc_method == "subscriptions/listen"]
    assert any(m.get("method") == "notifications/tools/list_changed" for m in listened[0].messages)
    assert check_exchanges(tap.exchanges) > 40


# -- mcpkit's own clients -----------------------------------------------------------------------


class Peer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[str] = []
        self.changed: list[str] = []

    async def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(params["message"])
        await asyncio.sleep(0.01)
        return {"action": "accept", "content": {"name": self.name}}

    def on_list_changed(self, kind: str) -> None:
        self.changed.append(kind)


async def mcpkit_workload(client: Client, who: str) -> list[str]:
    progress: list[float] = []
    results = await asyncio.gather(
        *(client.call_tool("add", {"a": i, "b": 200}) for i in range(4)),
        client.call_tool("ask", {}),
        client.call_tool("work", {"steps": 2}, progress=lambda v, *_: progress.append(v)),
    )
    assert progress == [1, 2]
    texts = [str(r["content"][0]["text"]) for r in results]
    read = await client.read_resource("demo://items/" + who)
    prompt = await client.get_prompt("review", {"code": who})
    return [*texts, read["contents"][0]["text"], prompt["messages"][0]["content"]["text"]]


async def test_mcpkit_clients_of_both_eras_on_one_server_at_once() -> None:
    server = demo_server()
    app = server.http_app()
    old, new = Peer("Legacy"), Peer("Modern")
    old_wire, new_wire = Wire(), Wire()
    async with run_app(app) as base, asyncio.timeout(TIMEOUT):
        url = base + "/mcp"

        def connect(peer: Peer, version: str, wire: Wire) -> Client:
            return Client(
                url=url,
                protocol_version=version,
                elicitation_handler=peer.elicit,
                on_list_changed=peer.on_list_changed,
                trace=wire,
                timeout=TIMEOUT,
            )

        async with (
            connect(old, LEGACY, old_wire) as legacy,
            connect(new, MODERN, new_wire) as modern,
        ):
            assert legacy.protocol_version == LEGACY
            assert modern.protocol_version == MODERN
            assert len(app) == 1  # type: ignore[arg-type]  # only the legacy client has a session

            old_answers, new_answers = await asyncio.gather(
                mcpkit_workload(legacy, "legacy"), mcpkit_workload(modern, "modern")
            )
            expected = [str(200 + i) for i in range(4)]
            assert old_answers[:6] == [*expected, "hello Legacy", "worked 2"]
            assert new_answers[:6] == [*expected, "hello Modern", "worked 2"]
            assert '"legacy"' in old_answers[6] and '"modern"' in new_answers[6]
            assert old_answers[7] == "Review:\nlegacy" and new_answers[7] == "Review:\nmodern"
            assert old.asked == new.asked == ["What is your name?"]

            add_extra_tool(server)
            await until(
                lambda: "tools" in old.changed and "tools" in new.changed,
                server.tools.notify_list_changed,
            )
            assert "extra" in {t["name"] for t in await legacy.list_tools()}
            assert "extra" in {t["name"] for t in await modern.list_tools()}

    assert old_wire.sent("initialize") and not new_wire.sent("initialize")
    assert old_wire.received("elicitation/create")  # a server request on the legacy session
    assert new_wire.sent("subscriptions/listen")
    assert (old_wire.eras, new_wire.eras) == ([LEGACY], [MODERN])
    old_wire.check(received_too=True)
    new_wire.check(received_too=True)
