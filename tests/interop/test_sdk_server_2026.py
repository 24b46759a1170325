"""mcpkit's ``Client`` asking for 2026-07-28 from a server built on the official MCP Python SDK.

The server is ``tests/interop/fixtures/sdk_server_2026.py``: the SDK's ``MCPServer``,
which answers ``server/discover`` and serves both eras from one process (over stdio the
client's first message picks the era; over Streamable HTTP the ``MCP-Protocol-Version``
header does). Its tools ask the user through the SDK's resolvers, which become
input-required results on 2026-07-28 (one round for ``greet``, two chained rounds for
``profile``) and ``elicitation/create`` requests on 2025-11-25. The mcpkit client must
find the 2026 era by discovery, answer the rounds with its elicitation handler, and still
speak the handshake era to the same server. Every message both ways is validated
against the schema of the era in use.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit.client import Client
from mcpkit.errors import RemoteError
from tests.interop.fixtures.peers import FIXTURES, Wire, http_peer

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
TIMEOUT = 20.0
SERVER = str(FIXTURES / "sdk_server_2026.py")


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("sdk2026") / "streamable-http.log"
    argv = lambda port: [sys.executable, SERVER, "streamable-http", str(port)]  # noqa: E731
    with http_peer(argv, log_path=log) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(params=["stdio", "streamable-http"])
def target(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "stdio":
        return {"command": sys.executable, "args": [SERVER, "stdio"]}
    return {"url": request.getfixturevalue("http_url")}


class Peer:
    def __init__(self, name: str = "Ada") -> None:
        self.name = name
        self.asked: list[str] = []

    def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(params["message"])
        if "name" in params["requestedSchema"]["properties"]:
            return {"action": "accept", "content": {"name": self.name}}
        return {"action": "accept", "content": {"color": "teal"}}


def connect(target: dict[str, Any], version: str, peer: Peer, wire: Wire) -> Client:
    return Client(
        **target,
        protocol_version=version,
        elicitation_handler=peer.elicit,
        trace=wire,
        timeout=TIMEOUT,
    )


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def rounds(wire: Wire, tool: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(request, response)`` for each ``tools/call`` of ``tool``, in order."""
    responses = {m.get("id"): m for m in wire.received() if "method" not in m}
    return [
        (sent, responses[sent["id"]])
        for sent in wire.sent("tools/call")
        if sent["params"]["name"] == tool
    ]


async def test_mcpkit_client_finds_and_speaks_2026_with_the_sdk_server(
    target: dict[str, Any],
) -> None:
    peer, wire = Peer(), Wire()
    async with asyncio.timeout(TIMEOUT), connect(target, MODERN, peer, wire) as client:
        assert client.protocol_version == MODERN  # picked by server/discover, no handshake
        assert client.server_info["name"] == "sdk-modern"

        tools = {t["name"]: t for t in await client.list_tools()}
        assert set(tools) == {"add", "fail", "greet", "profile"}
        assert tools["add"]["outputSchema"]["properties"]["total"]["type"] == "integer"
        added = await client.call_tool("add", {"a": 20, "b": 22})
        assert added["structuredContent"] == {"total": 42} and added["resultType"] == "complete"
        failed = await client.call_tool("fail", {"reason": "x"})
        assert failed["isError"] is True

        # One input round, then two chained ones (the colour question needs the name).
        assert text(await client.call_tool("greet", {})) == "hello Ada"
        assert text(await client.call_tool("profile", {})) == "Ada likes teal"
        assert peer.asked == ["What is your name?", "What is your name?", "Favourite colour, Ada?"]

        readme = await client.read_resource("sdk://notes/readme")
        assert readme["contents"][0]["text"] == "read me"
        assert "ttlMs" in readme and "cacheScope" in readme
        note = await client.read_resource("sdk://notes/todo")
        assert note["contents"][0]["text"] == "note todo"
        with pytest.raises(RemoteError) as missing:
            await client.read_resource("other://nothing")
        assert missing.value.code == -32602  # resource not found (2026-07-28 resources)

        (prompt,) = await client.list_prompts()
        assert prompt["name"] == "welcome"
        got = await client.get_prompt("welcome", {"name": "Bo", "tone": "formal"})
        assert got["messages"][0]["content"]["text"] == "Say hello to Bo, formally."

    assert wire.sent()[0]["method"] == "server/discover"
    # An initialize may follow a probe a slow server left unanswered for PROBE_GRACE; the
    # probe's answer must still have decided the era.
    assert wire.eras[0] == MODERN
    # Each round's retry echoes the previous round's requestState and answers every
    # input request by its key.
    profile = rounds(wire, "profile")
    assert [r["result"]["resultType"] for _, r in profile] == [
        "input_required",
        "input_required",
        "complete",
    ]
    for (_, interim), (retry, _) in itertools.pairwise(profile):
        assert retry["params"]["requestState"] == interim["result"]["requestState"]
        assert set(retry["params"]["inputResponses"]) == set(interim["result"]["inputRequests"])
    greet = rounds(wire, "greet")
    assert len(greet) == 2 and "requestState" not in greet[0][0]["params"]

    assert wire.eras == [MODERN]  # settled by server/discover: no initialize answer names it
    assert wire.check(received_too=True) > 20


async def test_the_handshake_era_still_works_against_the_same_sdk_server(
    target: dict[str, Any],
) -> None:
    old_peer, old_wire = Peer("Lin"), Wire()
    new_peer, new_wire = Peer("Ada"), Wire()

    async def legacy_calls() -> list[str]:
        async with connect(target, LEGACY, old_peer, old_wire) as client:
            assert client.protocol_version == LEGACY
            assert client.server_info["name"] == "sdk-modern"
            added = await client.call_tool("add", {"a": 1, "b": 2})
            assert "resultType" not in added
            greeted = await client.call_tool("greet", {})
            readme = await client.read_resource("sdk://notes/readme")
            return [text(added), text(greeted), readme["contents"][0]["text"]]

    async def modern_calls() -> list[str]:
        async with connect(target, MODERN, new_peer, new_wire) as client:
            assert client.protocol_version == MODERN
            greeted = await client.call_tool("greet", {})
            return [text(greeted)]

    # Over HTTP the two clients share one SDK server process; over stdio each has its own.
    async with asyncio.timeout(TIMEOUT):
        old, new = await asyncio.gather(legacy_calls(), modern_calls())
    assert old == ['{\n  "total": 3\n}', "hello Lin", "read me"]
    assert new == ["hello Ada"]
    assert old_peer.asked == new_peer.asked == ["What is your name?"]

    # The legacy era asked by a server-to-client request in the middle of the call.
    (asked,) = old_wire.received("elicitation/create")
    assert old_wire.answer_to(asked)["result"] == {"action": "accept", "content": {"name": "Lin"}}
    assert old_wire.sent("initialize")
    assert (old_wire.eras, new_wire.eras) == ([LEGACY], [MODERN])
    old_wire.check(received_too=True)
    new_wire.check(received_too=True)
