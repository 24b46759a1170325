"""mcpkit's ``Client`` against ``@modelcontextprotocol/server-everything`` (npm), a server written
independently (on the TypeScript SDK) to exercise every client feature.

The package is pinned and installed from npm into a cache directory on first use
(``tests/interop/fixtures/peers.py``) and runs on the Node.js 22 binary the conformance
tooling installs. Every test runs over each transport the package offers: stdio, Streamable
HTTP (``/mcp``) and the legacy HTTP+SSE transport (``/sse``). Every message the mcpkit
client sends, answers to the server's own requests included, is validated against the
JSON schema of the revision it belongs to (and so is everything the server sends).

The pinned release speaks only the handshake era (2025-11-25): it has no
``server/discover``. The tests use the client's default, which prefers 2026-07-28, so
every one of them also exercises the era fallback on stdio and Streamable HTTP: the
``server/discover`` probe fails and the ``initialize`` handshake follows (asserted on its
own below). HTTP+SSE is a handshake-era transport only: the client does not probe there.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit.client import Client
from mcpkit.errors import URL_ELICITATION_REQUIRED, RemoteError
from tests.interop.fixtures.peers import (
    PROTOCOL_VERSION_KEY,
    NodePackage,
    Wire,
    free_port,
    http_peer,
    install_server_everything,
    stop_group,
)

TIMEOUT = 20.0
ROOT = "file:///workspace/project"
TRANSPORTS = ["stdio", "streamable-http", "sse"]
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
METHOD_NOT_FOUND = -32601


@pytest.fixture(scope="module")
def everything() -> NodePackage:
    return install_server_everything()


def _serve(everything: NodePackage, kind: str, path: str, log: Path) -> Iterator[str]:
    with http_peer(
        lambda port: everything.argv(kind),
        env_for_port=lambda port: {"PORT": str(port)},
        log_path=log,
    ) as port:
        yield f"http://127.0.0.1:{port}{path}"


@pytest.fixture(scope="module")
def http_url(everything: NodePackage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("everything") / "streamableHttp.log"
    yield from _serve(everything, "streamableHttp", "/mcp", log)


@pytest.fixture(scope="module")
def sse_url(everything: NodePackage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("everything") / "sse.log"
    yield from _serve(everything, "sse", "/sse", log)


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def target(
    request: pytest.FixtureRequest, transport: str, everything: NodePackage
) -> dict[str, Any]:
    """``Client`` keyword arguments that reach the server over one transport."""
    if transport == "stdio":
        return {"command": str(everything.node), "args": [str(everything.entry), "stdio"]}
    if transport == "streamable-http":
        # The URL does not end in /sse: Client tries Streamable HTTP first, and it answers.
        return {"url": request.getfixturevalue("http_url")}
    return {"url": request.getfixturevalue("sse_url")}  # ends in /sse: straight to HTTP+SSE


class Peer:
    """The application side: handlers for the server's requests and what they saw."""

    def __init__(self) -> None:
        self.logs: list[dict[str, Any]] = []
        self.updated: list[str] = []
        self.sampling: list[dict[str, Any]] = []
        self.elicitations: list[dict[str, Any]] = []
        self.elicit_answer: dict[str, Any] = {"action": "accept", "content": {"name": "Ada"}}

    async def sample(self, params: dict[str, Any]) -> dict[str, Any]:
        self.sampling.append(params)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "MCP is a protocol (said mcpkit)"},
            "model": "mcpkit-test-model",
            "stopReason": "endTurn",
        }

    async def elicit(self, params: dict[str, Any]) -> dict[str, Any]:
        self.elicitations.append(params)
        return self.elicit_answer


@pytest.fixture
def wire() -> Iterator[Wire]:
    recorder = Wire()
    yield recorder
    # Both directions: the client's messages must be valid, and checking the server's
    # proves the recorder saw the real conversation (replies paired with their requests).
    recorder.check(received_too=True)
    assert recorder.eras == [HANDSHAKE]  # a legacy server: the probe never settles 2026-07-28


@pytest.fixture
async def connect(target: dict[str, Any], wire: Wire) -> AsyncIterator[Callable[[Peer], Client]]:
    clients: list[Client] = []

    def make(peer: Peer) -> Client:
        client = Client(
            **target,
            name="everything",
            trace=wire,
            timeout=TIMEOUT,
            sampling_handler=peer.sample,
            elicitation_handler=peer.elicit,
            elicitation_modes=("form", "url"),
            roots=[{"uri": ROOT, "name": "project"}],
            log_handler=peer.logs.append,
            on_resource_updated=peer.updated.append,
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


async def until(check: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not check():
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def texts(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result["content"] if c.get("type") == "text")


# -- the era ------------------------------------------------------------------------------------


async def test_the_discover_probe_falls_back_to_the_handshake(
    connect: Callable[[Peer], Client], wire: Wire, transport: str
) -> None:
    async with connect(Peer()) as client:
        assert client.protocol_version == HANDSHAKE
        assert texts(await client.call_tool("echo", {"message": "hi"})) == "Echo: hi"
    if transport == "sse":
        # 2026-07-28 has no HTTP+SSE transport (basic/transports): no probe, the handshake.
        assert wire.sent()[0]["method"] == "initialize" and not wire.sent("server/discover")
        return
    probe, initialize = wire.sent()[:2]
    assert probe["method"] == "server/discover"
    assert probe["params"]["_meta"][PROTOCOL_VERSION_KEY] == MODERN
    assert initialize["method"] == "initialize"
    assert initialize["params"]["protocolVersion"] == HANDSHAKE
    answers = [m for m in wire.received() if "method" not in m and m.get("id") == probe["id"]]
    if transport == "streamable-http":
        # Refused with HTTP 400 "Server not initialized" (an error with a null id, not
        # an answer to the probe): the status says legacy (streamable-http § backward
        # compatibility), and no response reaches the trace.
        assert answers == []
    else:
        assert [a["error"]["code"] for a in answers] == [METHOD_NOT_FOUND]
    # From the handshake on, nothing carries the 2026-07-28 envelope.
    rest = wire.sent()[1:]
    assert not [m for m in rest if PROTOCOL_VERSION_KEY in m.get("params", {}).get("_meta", {})]


# -- tools ----------------------------------------------------------------------------------------


async def test_tools_list_and_call(connect: Callable[[Peer], Client]) -> None:
    async with connect(Peer()) as client:
        assert client.server_info["name"] == "mcp-servers/everything"
        assert client.protocol_version == "2025-11-25"
        tools = {t["name"]: t for t in await client.list_tools()}
        # Registered only because the client declared sampling, elicitation (url) and roots.
        for name in (
            "echo",
            "get-sum",
            "trigger-sampling-request",
            "trigger-elicitation-request",
            "trigger-url-elicitation",
            "get-roots-list",
        ):
            assert name in tools, sorted(tools)
        assert tools["echo"]["inputSchema"]["properties"]["message"]["type"] == "string"

        assert texts(await client.call_tool("echo", {"message": "héllo"})) == "Echo: héllo"
        assert (
            texts(await client.call_tool("get-sum", {"a": 2, "b": 3})) == "The sum of 2 and 3 is 5."
        )

        structured = await client.call_tool("get-structured-content", {"location": "Chicago"})
        assert set(structured["structuredContent"]) == {"temperature", "conditions", "humidity"}
        assert "outputSchema" in tools["get-structured-content"]

        image = await client.call_tool("get-tiny-image", {})
        png = next(c for c in image["content"] if c["type"] == "image")
        assert png["mimeType"] == "image/png"
        assert base64.b64decode(png["data"]).startswith(b"\x89PNG")

        bad = await client.call_tool("get-sum", {"a": "two", "b": 3})
        assert bad.get("isError") is True  # argument validation failure is a tool error


async def test_resources_and_templates(connect: Callable[[Peer], Client]) -> None:
    async with connect(Peer()) as client:
        resources = await client.list_resources()
        docs = [r for r in resources if r["uri"].startswith("demo://resource/static/document/")]
        assert docs, resources
        templates = {t["uriTemplate"] for t in await client.list_resource_templates()}
        assert "demo://resource/dynamic/text/{resourceId}" in templates

        text = (await client.read_resource("demo://resource/dynamic/text/7"))["contents"][0]
        assert text["uri"] == "demo://resource/dynamic/text/7" and "Resource 7" in text["text"]
        blob = (await client.read_resource("demo://resource/dynamic/blob/7"))["contents"][0]
        assert base64.b64decode(blob["blob"])
        doc = (await client.read_resource(docs[0]["uri"]))["contents"][0]
        assert doc["text"].strip()

        with pytest.raises(RemoteError):
            await client.read_resource("demo://resource/dynamic/text/not-a-number")


async def test_prompts_and_completion(connect: Callable[[Peer], Client]) -> None:
    async with connect(Peer()) as client:
        prompts = {p["name"]: p for p in await client.list_prompts()}
        assert {"simple-prompt", "args-prompt", "resource-prompt"} <= set(prompts)
        simple = await client.get_prompt("simple-prompt")
        assert simple["messages"][0]["role"] == "user"
        args = await client.get_prompt("args-prompt", {"city": "Paris", "state": "Texas"})
        assert "Paris" in args["messages"][0]["content"]["text"]
        embedded = await client.get_prompt(
            "resource-prompt", {"resourceType": "Text", "resourceId": "3"}
        )
        kinds = [m["content"]["type"] for m in embedded["messages"]]
        assert "resource" in kinds

        completion = await client.complete(
            {"type": "ref/prompt", "name": "completable-prompt"}, "department", "E"
        )
        assert completion["values"] == ["Engineering"]


# -- notifications --------------------------------------------------------------------------------


async def test_progress_of_a_call(connect: Callable[[Peer], Client], wire: Wire) -> None:
    progress: list[tuple[float, float | None]] = []
    async with connect(Peer()) as client:
        result = await client.call_tool(
            "trigger-long-running-operation",
            {"duration": 0.3, "steps": 3},
            progress=lambda p, total, message: progress.append((p, total)),
        )
    assert "Long running operation completed" in texts(result)
    assert progress == [(1, 3), (2, 3), (3, 3)]
    call = wire.sent("tools/call")[0]
    token = call["params"]["_meta"]["progressToken"]
    assert all(
        n["params"]["progressToken"] == token for n in wire.received("notifications/progress")
    )


async def test_log_messages(
    connect: Callable[[Peer], Client], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpkit.client.server_log")
    peer = Peer()
    async with connect(peer) as client:
        # After initialization the server asks for our roots and logs what it got.
        await until(
            lambda: any("Roots updated: 1 root(s)" in str(m.get("data")) for m in peer.logs),
            "the server's roots log",
        )
        await client.set_logging_level("debug")
        await client.call_tool("toggle-simulated-logging", {})  # logs once at once, then every 5 s
        await until(
            lambda: any("level" in str(m.get("data")).lower() for m in peer.logs[1:]),
            "a simulated log message",
        )
    levels = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
    assert all(m["level"] in levels for m in peer.logs)
    # Also forwarded to Python logging, prefixed with the server's name.
    lines = [r.getMessage() for r in caplog.records if r.name == "mcpkit.client.server_log"]
    assert any(line.startswith("[everything] everything-server: Roots updated") for line in lines)


async def test_resource_subscription_updates(connect: Callable[[Peer], Client]) -> None:
    peer = Peer()
    uri = "demo://resource/dynamic/text/1"
    async with connect(peer) as client:
        await client.subscribe_resource(uri)
        await client.call_tool("toggle-subscriber-updates", {})  # one update at once
        await until(lambda: uri in peer.updated, "notifications/resources/updated")
        await client.unsubscribe_resource(uri)


# -- the server's requests ------------------------------------------------------------------------


async def test_sampling_request(connect: Callable[[Peer], Client], wire: Wire) -> None:
    peer = Peer()
    async with connect(peer) as client:
        result = await client.call_tool(
            "trigger-sampling-request", {"prompt": "What is MCP?", "maxTokens": 50}
        )
    assert len(peer.sampling) == 1
    request = peer.sampling[0]
    assert request["messages"][0]["content"]["text"].endswith("What is MCP?")
    assert request["maxTokens"] == 50
    assert "MCP is a protocol (said mcpkit)" in texts(result)
    (asked,) = wire.received("sampling/createMessage")
    assert wire.answer_to(asked)["result"]["model"] == "mcpkit-test-model"


async def test_form_elicitation_is_completed_with_schema_defaults(
    connect: Callable[[Peer], Client], wire: Wire
) -> None:
    peer = Peer()  # answers only "name"; the client fills the rest from the defaults
    async with connect(peer) as client:
        result = await client.call_tool("trigger-elicitation-request", {})
    assert peer.elicitations[0]["requestedSchema"]["required"] == ["name"]
    (asked,) = wire.received("elicitation/create")
    content = wire.answer_to(asked)["result"]["content"]
    assert content["name"] == "Ada"
    assert content["firstLine"] == "It was a dark and stormy night."
    assert content["integer"] == 42 and content["number"] == 3.14
    assert content["untitledMultipleSelectEnum"] == ["Guitar"]
    text = texts(result)
    assert "Name: Ada" in text and "Favorite Integer: 42" in text


async def test_declined_elicitation(connect: Callable[[Peer], Client], wire: Wire) -> None:
    peer = Peer()
    peer.elicit_answer = {"action": "decline"}
    async with connect(peer) as client:
        result = await client.call_tool("trigger-elicitation-request", {})
    assert "declined" in texts(result)
    (asked,) = wire.received("elicitation/create")
    assert wire.answer_to(asked)["result"] == {"action": "decline"}


async def test_url_elicitation(connect: Callable[[Peer], Client]) -> None:
    peer = Peer()
    peer.elicit_answer = {"action": "accept"}
    url = "https://example.com/authorize"
    async with connect(peer) as client:
        result = await client.call_tool("trigger-url-elicitation", {"url": url})
        assert peer.elicitations[0]["mode"] == "url" and peer.elicitations[0]["url"] == url
        assert "completed the URL elicitation" in texts(result)
        # The error path: -32042 carries the elicitations the caller must complete first.
        with pytest.raises(RemoteError) as info:
            await client.call_tool("trigger-url-elicitation", {"url": url, "errorPath": True})
    assert info.value.code == URL_ELICITATION_REQUIRED
    assert info.value.data["elicitations"][0]["mode"] == "url"


async def test_roots_and_roots_list_changed(connect: Callable[[Peer], Client], wire: Wire) -> None:
    async with connect(Peer()) as client:
        await until(lambda: len(wire.received("roots/list")) >= 1, "the server's roots/list")
        assert ROOT in texts(await client.call_tool("get-roots-list", {}))
        # The server may ask again on its own (for instance when a tool runs
        # before our first answer is stored), so count from the change on.
        before = len(wire.received("roots/list"))
        await client.set_roots(["file:///elsewhere"])
        # notifications/roots/list_changed makes the server ask again.
        await until(
            lambda: len(wire.received("roots/list")) > before, "a roots/list after the change"
        )
        async with asyncio.timeout(TIMEOUT):  # the server stores our answer when it arrives
            while "file:///elsewhere" not in texts(await client.call_tool("get-roots-list", {})):
                await asyncio.sleep(0.02)
    assert len(wire.sent("notifications/roots/list_changed")) == 1
    for asked in wire.received("roots/list")[before:]:
        assert wire.answer_to(asked)["result"] == {"roots": [{"uri": "file:///elsewhere"}]}


# -- a restart behind an open session -----------------------------------------------------------


@contextlib.contextmanager
def _on_port(everything: NodePackage, port: int, log: Path) -> Iterator[None]:
    """The Streamable HTTP server on ``port`` until the block ends (then its group is killed)."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            everything.argv("streamableHttp"),
            env=dict(os.environ, PORT=str(port)),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert proc.poll() is None, f"server-everything exited; see {log}"
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                break
            assert time.monotonic() < deadline, f"server-everything never listened; see {log}"
            time.sleep(0.05)
        yield
    finally:
        stop_group(proc)


async def test_a_restarted_server_gets_a_new_session_transparently(
    everything: NodePackage, tmp_path: Path
) -> None:
    """The TypeScript SDK answers a session id it does not know with 400 "Bad Request: No
    valid session ID provided", not the specification's 404: the client treats it the same.
    """
    wire = Wire()
    port = free_port()
    log = tmp_path / "streamableHttp.log"
    client = Client(
        url=f"http://127.0.0.1:{port}/mcp", name="everything", trace=wire, timeout=TIMEOUT
    )
    try:
        with _on_port(everything, port, log):
            await client.connect()
            assert texts(await client.call_tool("echo", {"message": "before"})) == "Echo: before"
        with _on_port(everything, port, log):  # a new process, same port: no sessions
            results = await asyncio.gather(
                *(client.call_tool("echo", {"message": f"after {i}"}) for i in range(3))
            )
            assert [texts(r) for r in results] == [f"Echo: after {i}" for i in range(3)]
            assert texts(await client.call_tool("get-sum", {"a": 2, "b": 3})).endswith("is 5.")
            await client.aclose()
    finally:
        await client.aclose()
    # One new handshake, however many calls saw the 400.
    assert [m["params"]["protocolVersion"] for m in wire.sent("initialize")] == [HANDSHAKE] * 2
    assert len(wire.sent("notifications/initialized")) == 2
    wire.check(received_too=True)
