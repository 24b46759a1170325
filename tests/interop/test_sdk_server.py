"""mcpkit's ``Client`` against a server built on the official MCP Python SDK (``mcp`` from PyPI).

The server is ``tests/interop/fixtures/sdk_server.py``: the SDK's ``MCPServer`` with tools
that return structured output, fail, report progress and log, ask the client's model,
elicit a form with defaults, list the client's roots and sleep (to be cancelled), plus a
resource, a template, a prompt and completions. It runs as a subprocess over stdio, the
SDK's Streamable HTTP transport and its legacy HTTP+SSE transport. Every message the
mcpkit client sends, and every message it receives, is validated against the JSON schema
of the revision it belongs to.

The SDK server is dual-era: it answers ``server/discover``, so a ``Client`` pinned to
2026-07-28 speaks 2026-07-28 to it, and one pinned to 2025-11-25 gets the handshake.
What users rely on in any era (tools, progress, logs, resources, prompts, completion, a
timed-out call) runs in both over stdio and Streamable HTTP; the HTTP+SSE transport
belongs to the handshake era and runs only there. This server's sampling, elicitation
and roots tools ask through the SDK's session back channel, which exists only in the
handshake era (``tests/interop/test_sdk_server_2026.py`` covers its 2026-07-28
input-required rounds). The clients here have those handlers, so with default settings
they end on the handshake after the probe (the server does not declare input rounds;
``tests/interop/test_era_choice.py``), and the sampling test runs there too.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from mcpkit.client import Client
from mcpkit.errors import PeerTimeout, RemoteError
from tests.interop.fixtures.peers import FIXTURES, Wire, http_peer

TIMEOUT = 20.0
SERVER = str(FIXTURES / "sdk_server.py")
ROOT = "file:///workspace/sdk"
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
# (transport, protocol_version given to Client): None is the client's default, which
# probes with server/discover and, having handlers, takes the handshake.
HANDSHAKE_CASES = [("stdio", HANDSHAKE), ("streamable-http", HANDSHAKE), ("sse", HANDSHAKE)]
DEFAULT_CASES = [("stdio", None), ("streamable-http", None)]
BOTH_ERAS = [*HANDSHAKE_CASES, ("stdio", MODERN), ("streamable-http", MODERN), *DEFAULT_CASES]
both_eras = pytest.mark.parametrize("case", BOTH_ERAS, ids=lambda c: f"{c[0]}-{c[1] or 'default'}")
handshake_era = pytest.mark.parametrize(
    "case", [*HANDSHAKE_CASES, *DEFAULT_CASES], ids=lambda c: f"{c[0]}-{c[1] or 'default'}"
)


def _serve(kind: str, path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("sdk") / f"{kind}.log"
    with http_peer(lambda port: [sys.executable, SERVER, kind, str(port)], log_path=log) as port:
        yield f"http://127.0.0.1:{port}{path}"


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve("streamable-http", "/mcp", tmp_path_factory)


@pytest.fixture(scope="module")
def sse_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve("sse", "/sse", tmp_path_factory)


@pytest.fixture
def target(request: pytest.FixtureRequest, case: tuple[str, str | None]) -> dict[str, Any]:
    """``Client`` keyword arguments: the transport, and the revision asked for if any."""
    transport, version = case
    pinned = {} if version is None else {"protocol_version": version}
    if transport == "stdio":
        return {"command": sys.executable, "args": [SERVER, "stdio"], **pinned}
    url = request.getfixturevalue("http_url" if transport != "sse" else "sse_url")
    return {"url": url, **pinned}


def era(case: tuple[str, str | None]) -> str:
    """The revision the client must end up speaking."""
    return case[1] or HANDSHAKE


class Peer:
    def __init__(self) -> None:
        self.logs: list[dict[str, Any]] = []
        self.questions: list[dict[str, Any]] = []
        self.elicitations: list[dict[str, Any]] = []

    async def sample(self, params: dict[str, Any]) -> dict[str, Any]:
        self.questions.append(params)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "forty-two"},
            "model": "mcpkit-test-model",
            "stopReason": "endTurn",
        }

    def elicit(self, params: dict[str, Any]) -> dict[str, Any]:  # a plain function works too
        self.elicitations.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}


@pytest.fixture
def wire() -> Iterator[Wire]:
    recorder = Wire()
    yield recorder
    recorder.check(received_too=True)


@pytest.fixture
async def connect(target: dict[str, Any], wire: Wire) -> AsyncIterator[Callable[[Peer], Client]]:
    clients: list[Client] = []

    def make(peer: Peer) -> Client:
        client = Client(
            **target,
            name="sdk",
            trace=wire,
            timeout=TIMEOUT,
            sampling_handler=peer.sample,
            elicitation_handler=peer.elicit,
            roots=[ROOT],
            log_handler=peer.logs.append,
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def _results(wire: Wire, method: str) -> list[dict[str, Any]]:
    """The results of the client's ``method`` requests."""
    ids = {m["id"] for m in wire.sent(method)}
    return [m["result"] for m in wire.received() if m.get("id") in ids and "result" in m]


@both_eras
async def test_tools_structured_output_and_errors(
    connect: Callable[[Peer], Client], wire: Wire, case: tuple[str, str | None]
) -> None:
    async with connect(Peer()) as client:
        assert client.server_info["name"] == "sdk-interop"
        assert client.protocol_version == era(case)
        tools = {t["name"]: t for t in await client.list_tools()}
        assert {"add", "fail", "sleep", "slow_steps", "ask_model", "ask_user", "roots"} <= set(
            tools
        )
        assert tools["add"]["outputSchema"]["properties"]["total"]["type"] == "integer"

        result = await client.call_tool("add", {"a": 20, "b": 22})
        assert result["structuredContent"] == {"total": 42}
        assert result.get("isError") is False

        failed = await client.call_tool("fail", {"reason": "x"})
        assert failed["isError"] is True and failed["content"][0]["type"] == "text"

        invalid = await client.call_tool("add", {"a": "one"})
        assert invalid["isError"] is True  # argument validation is reported as a tool error
        await client.ping()
    if era(case) == MODERN:  # found by the probe; no handshake
        # An initialize may follow a probe a slow server left unanswered for PROBE_GRACE;
        # the probe's answer must still have decided the era.
        assert wire.sent()[0]["method"] == "server/discover" and wire.eras[0] == MODERN
        assert all(r.get("resultType") == "complete" for r in _results(wire, "tools/call"))
    elif case[1] is None:  # the probe found a modern server; the handlers took the handshake
        assert wire.sent()[0]["method"] == "server/discover" and wire.eras == [MODERN, HANDSHAKE]
        assert wire.sent("ping")
    else:
        assert not wire.sent("server/discover") and wire.sent()[0]["method"] == "initialize"
        assert wire.sent("ping")
    if case[1] is not None:
        assert wire.eras == [era(case)]


@both_eras
async def test_progress_and_logs_of_a_call(
    connect: Callable[[Peer], Client], wire: Wire, case: tuple[str, str | None]
) -> None:
    peer = Peer()
    progress: list[tuple[float, float | None, str | None]] = []
    async with connect(peer) as client:
        result = await client.call_tool(
            "slow_steps", {"steps": 3}, progress=lambda *update: progress.append(update)
        )
    assert text(result) == "done 3"
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert [(m["logger"], m["data"]) for m in peer.logs] == [
        ("sdk-peer", f"did step {i}") for i in (1, 2, 3)
    ]
    meta = wire.sent("tools/call")[0]["params"]["_meta"]
    assert {n["params"]["progressToken"] for n in wire.received("notifications/progress")} == {
        meta["progressToken"]
    }
    if era(case) == MODERN:
        # A 2026-07-28 server logs only for a request that asks (server/utilities/logging):
        # the client asked because it has a log handler, so the logs still reach it.
        assert meta["io.modelcontextprotocol/logLevel"] == "info"


@handshake_era
async def test_sampling_elicitation_and_roots_inside_calls(
    connect: Callable[[Peer], Client], wire: Wire
) -> None:
    peer = Peer()
    async with connect(peer) as client:
        answer = await client.call_tool("ask_model", {"question": "meaning of life?"})
        profile = await client.call_tool("ask_user", {})
        roots = await client.call_tool("roots", {})
    assert text(answer) == "forty-two"
    assert peer.questions[0]["messages"][0]["content"]["text"] == "meaning of life?"
    assert peer.questions[0]["maxTokens"] == 50

    # The handler gave only the name; the client filled age and newsletter from the schema
    # defaults (2025-11-25 client/elicitation, SEP-1034) before answering.
    (asked,) = wire.received("elicitation/create")
    assert wire.answer_to(asked)["result"] == {
        "action": "accept",
        "content": {"name": "Ada", "age": 30, "newsletter": True},
    }
    assert text(profile) == "Ada|30|True"
    assert roots["structuredContent"] == {"result": [ROOT]}


@both_eras
async def test_resources_prompts_and_completion(connect: Callable[[Peer], Client]) -> None:
    async with connect(Peer()) as client:
        assert [r["uri"] for r in await client.list_resources()] == ["sdk://notes/readme"]
        templates = await client.list_resource_templates()
        assert [t["uriTemplate"] for t in templates] == ["sdk://notes/{name}"]
        readme = await client.read_resource("sdk://notes/readme")
        assert readme["contents"][0]["text"] == "read me"
        note = await client.read_resource("sdk://notes/todo")
        assert note["contents"][0]["text"] == "note todo"
        with pytest.raises(RemoteError):
            await client.read_resource("other://nothing")

        (prompt,) = await client.list_prompts()
        assert prompt["name"] == "greet"
        assert [a["name"] for a in prompt["arguments"]] == ["name", "tone"]
        got = await client.get_prompt("greet", {"name": "Bo", "tone": "formal"})
        assert got["messages"][0]["content"]["text"] == "Say hello to Bo, formally."
        completion = await client.complete({"type": "ref/prompt", "name": "greet"}, "tone", "w")
        assert completion["values"] == ["warm", "wry"]


@both_eras
async def test_a_timed_out_call_is_cancelled_and_the_session_goes_on(
    connect: Callable[[Peer], Client], wire: Wire
) -> None:
    async with connect(Peer()) as client:
        with pytest.raises(PeerTimeout):
            await client.call_tool("sleep", {"seconds": 30}, timeout=0.3)
        call_id = wire.sent("tools/call")[0]["id"]
        async with asyncio.timeout(TIMEOUT):
            while not wire.sent("notifications/cancelled"):
                await asyncio.sleep(0.01)
        (cancelled,) = wire.sent("notifications/cancelled")
        assert cancelled["params"]["requestId"] == call_id
        assert text(await client.call_tool("sleep", {"seconds": 0})) == "slept"
