"""Which era a client left to choose takes with servers whose tools ask the client.

FastMCP 4.1.6 and the official Python SDK 2.3.0 answer ``server/discover``, yet a tool
written with their documented ``ctx.elicit`` / ``ctx.session.create_message`` fails on
2026-07-28 (FastMCP: a tool error, "elicitation via server-initiated requests is
unavailable on 2026-07-28 connections"; the SDK: a JSON-RPC error, HTTP 400 on
Streamable HTTP): that revision has no server-to-client requests, and these servers do
not turn them into input-required rounds. mcpkit's servers do, and say so in their
capabilities (the ``mcpkit/input-rounds`` extension).

So with default settings a client that has sampling and elicitation handlers must end
on the handshake with the two Python peers (over stdio a second process, since their
first message fixes the era of the process) and complete their tools, while mcpkit's
own server keeps it on 2026-07-28; a client without handlers, or one pinned to
2026-07-28, stays on 2026-07-28 with every server. Each peer runs as a real subprocess
over stdio and over Streamable HTTP, driven by ``Client``, ``MCPClient`` and the
``mcpkit call`` command.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from mcpkit.client import Client, MCPClient
from tests.interop.fixtures.peers import FIXTURES, REPO, Wire, http_peer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
TIMEOUT = 30.0
TRANSPORTS = ["stdio", "streamable-http"]


@dataclass(frozen=True)
class Peer:
    name: str
    script: str
    elicit_tool: str
    elicited: str  # what the elicitation tool returns for the name "Ada"
    era: str  # what a default client with handlers ends on

    def argv(self, *more: str) -> list[str]:
        return [sys.executable, str(FIXTURES / self.script), *more]


FASTMCP = Peer("fastmcp", "fastmcp_server.py", "ask_name", "hello Ada", HANDSHAKE)
# The SDK peer's form has two fields with defaults the client fills in (SEP-1034).
SDK = Peer("sdk", "sdk_server.py", "ask_user", "Ada|30|True", HANDSHAKE)
MCPKIT = Peer("mcpkit", "mcpkit_asking.py", "ask_name", "hello Ada", MODERN)
PEERS = [FASTMCP, SDK, MCPKIT]


@pytest.fixture(scope="module")
def http_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One Streamable HTTP server per peer for the whole module."""
    logs = tmp_path_factory.mktemp("era-choice")
    with (
        http_peer(lambda p: FASTMCP.argv("streamable-http", str(p)), log_path=logs / "f") as f,
        http_peer(lambda p: SDK.argv("streamable-http", str(p)), log_path=logs / "s") as s,
        http_peer(lambda p: MCPKIT.argv("streamable-http", str(p)), log_path=logs / "m") as m,
    ):
        yield {
            "fastmcp": f"http://127.0.0.1:{f}/mcp",
            "sdk": f"http://127.0.0.1:{s}/mcp",
            "mcpkit": f"http://127.0.0.1:{m}/mcp",
        }


def where(peer: Peer, transport: str, http_urls: dict[str, str]) -> dict[str, Any]:
    """How to reach ``peer``: ``Client``/server definition keyword arguments."""
    if transport == "stdio":
        return {"command": sys.executable, "args": peer.argv("stdio")[1:]}
    return {"url": http_urls[peer.name]}


class User:
    """The client's handlers: a user who is called Ada, a model that says forty-two."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.prompts: list[str] = []

    def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(params["message"])
        return {"action": "accept", "content": {"name": "Ada"}}

    async def sample(self, params: dict[str, Any]) -> dict[str, Any]:
        self.prompts.append(params["messages"][0]["content"]["text"])
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "forty-two"},
            "model": "mcpkit-test-model",
            "stopReason": "endTurn",
        }


def text(result: dict[str, Any]) -> str:
    assert result.get("isError") is not True, result
    return str(result["content"][0]["text"])


peers = pytest.mark.parametrize("peer", PEERS, ids=lambda p: p.name)
transports = pytest.mark.parametrize("transport", TRANSPORTS)


@peers
@transports
async def test_client_defaults_complete_elicitation_and_sampling(
    peer: Peer, transport: str, http_urls: dict[str, str]
) -> None:
    user, wire = User(), Wire()
    async with Client(
        **where(peer, transport, http_urls),
        elicitation_handler=user.elicit,
        sampling_handler=user.sample,
        trace=wire,
        timeout=TIMEOUT,
    ) as client:
        assert client.protocol_version == peer.era
        assert text(await client.call_tool(peer.elicit_tool, {})) == peer.elicited
        answer = await client.call_tool("ask_model", {"question": "meaning of life?"})
        assert text(answer) == "forty-two"
    assert len(user.asked) == 1
    assert user.prompts == ["meaning of life?"]
    # The probe came first; mcpkit's server was never sent initialize.
    assert wire.sent()[0]["method"] == "server/discover"
    assert bool(wire.sent("initialize")) == (peer.era == HANDSHAKE)
    if peer.era == MODERN:
        assert wire.received("elicitation/create") == []  # input rounds, not requests
    wire.check(received_too=True)


@peers
@transports
async def test_mcp_client_defaults_complete_elicitation_and_sampling(
    peer: Peer, transport: str, http_urls: dict[str, str]
) -> None:
    user, wire = User(), Wire()
    server = {**where(peer, transport, http_urls), "trace": wire}
    mcp = MCPClient(servers={"peer": server}, timeout=TIMEOUT)
    mcp.elicitation.on_request("peer", user.elicit)
    mcp.sampling.on_request("peer", user.sample)
    async with mcp:
        assert mcp.client("peer").protocol_version == peer.era
        assert text(await mcp.call_tool("peer", peer.elicit_tool, {})) == peer.elicited
        answer = await mcp.call_tool("peer", "ask_model", {"question": "meaning of life?"})
        assert text(answer) == "forty-two"
        # The era is remembered: a reconnection to a server that ended on the handshake
        # goes straight to initialize.
        await mcp.reconnect("peer")
        assert mcp.client("peer").protocol_version == peer.era
        assert text(await mcp.call_tool("peer", peer.elicit_tool, {})) == peer.elicited
    assert user.prompts == ["meaning of life?"]
    assert len(wire.sent("server/discover")) == (1 if peer.era == HANDSHAKE else 2)


def mcpkit_call(target: list[str], tool: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpkit", "call", tool, *target, *options],
        capture_output=True,
        text=True,
        timeout=TIMEOUT * 2,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


def target(peer: Peer, transport: str, http_urls: dict[str, str]) -> list[str]:
    """The server options of ``mcpkit call`` for ``peer`` (no --protocol-version)."""
    if transport == "stdio":
        return ["--stdio", shlex.join(peer.argv("stdio"))]
    return ["--url", http_urls[peer.name]]


@peers
@transports
def test_mcpkit_call_defaults_complete_elicitation(
    peer: Peer, transport: str, http_urls: dict[str, str]
) -> None:
    server = target(peer, transport, http_urls)
    asked = mcpkit_call(server, peer.elicit_tool, "--elicit", '{"name": "Ada"}')
    assert (asked.returncode, printed(asked.stdout), asked.stderr) == (0, peer.elicited, "")


@peers
@transports
def test_mcpkit_call_defaults_complete_sampling(
    peer: Peer, transport: str, http_urls: dict[str, str]
) -> None:
    question = ("--args", '{"question": "meaning of life?"}')
    sampled = mcpkit_call(
        target(peer, transport, http_urls), "ask_model", *question, "--sample", "forty-two"
    )
    assert (sampled.returncode, printed(sampled.stdout), sampled.stderr) == (0, "forty-two", "")


def printed(stdout: str) -> str:
    """The tool's text as ``mcpkit call`` printed it: its text, or the structured content
    (``{"result": text}``: FastMCP and the SDK wrap a string return value) as JSON."""
    if stdout.startswith("{"):
        return str(json.loads(stdout)["result"])
    assert stdout.endswith("\n")
    return stdout[:-1]


@peers
@transports
async def test_without_handlers_or_pinned_the_client_stays_on_2026(
    peer: Peer, transport: str, http_urls: dict[str, str]
) -> None:
    """A client without handlers loses nothing on 2026-07-28 and is kept there (no handshake);
    ``protocol_version="2026-07-28"`` keeps it there with handlers too."""
    wire = Wire()
    async with Client(**where(peer, transport, http_urls), trace=wire, timeout=TIMEOUT) as client:
        assert client.protocol_version == MODERN
        assert await client.call_tool("add", {"a": 1, "b": 2})
    assert accepted_initialize(wire) == []
    user, pinned = User(), Wire()
    async with Client(
        **where(peer, transport, http_urls),
        protocol_version=MODERN,
        elicitation_handler=user.elicit,
        sampling_handler=user.sample,
        trace=pinned,
        timeout=TIMEOUT,
    ) as client:
        assert client.protocol_version == MODERN
    assert accepted_initialize(pinned) == []


def accepted_initialize(wire: Wire) -> list[dict[str, Any]]:
    """Answers to ``initialize`` that accepted it. (A peer slower than 2 s to answer the probe
    over stdio is sent ``initialize`` too, the legacy-server race; these refuse it then.)"""
    ids = {m["id"] for m in wire.sent("initialize")}
    return [m for m in wire.received() if m.get("id") in ids and "result" in m]
