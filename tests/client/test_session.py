"""ClientSession behaviour against a real mcpkit server, in memory (JSON both ways).

Behaviour users rely on in any era runs on both (the ``era`` fixture); what exists only
in the handshake era (initialize, server-to-client requests and pings on the wire,
roots list_changed) is pinned to 2025-11-25.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from typing import Any

import pytest

from mcpkit.client import Client
from mcpkit.client.stateless.discover import DEFAULT_VERSION
from mcpkit.errors import (
    ConfigurationError,
    ConnectionClosed,
    MCPError,
    PeerTimeout,
    RemoteError,
)
from mcpkit.protocol.versions import LATEST_HANDSHAKE
from mcpkit.server.server import MCPServer
from tests.client.conftest import Traffic
from tests.client.fixtures.demo_server import build_server


def text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def texts(result: dict[str, Any]) -> list[str]:
    return [c["text"] for c in result["content"]]


STATELESS = "2026-07-28"


@pytest.fixture
def server() -> MCPServer:
    return build_server()


@pytest.fixture(params=[LATEST_HANDSHAKE, STATELESS])
def era(request: pytest.FixtureRequest) -> str:
    """The protocol revision the client asks for: each era of the one server."""
    return str(request.param)


def without_meta(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k != "_meta"}


def input_answers(traffic: Traffic) -> list[dict[str, Any]]:
    """What the client answered the server's questions: each handshake-era response to a
    server request, or each answer a 2026-07-28 retry carries in ``inputResponses``."""
    answers = [m["result"] for m in traffic.sent() if "result" in m]
    for m in traffic.sent():
        responses = m.get("params", {}).get("inputResponses")
        if isinstance(responses, dict):
            answers.extend(responses.values())
    return answers


# -- handshake ---------------------------------------------------------------------------------


async def test_handshake_reports_server_and_negotiated_version(
    server: MCPServer, traffic: Traffic
) -> None:
    async with Client(server=server, trace=traffic, protocol_version=LATEST_HANDSHAKE) as client:
        assert client.server_info == {"name": "demo", "version": "1.0.0"}
        assert client.protocol_version == LATEST_HANDSHAKE
        assert client.instructions == "Be kind."
        assert "tools" in client.server_capabilities
        assert client.name == "demo"
    init = traffic.sent("initialize")[0]
    assert init["params"]["protocolVersion"] == LATEST_HANDSHAKE
    assert init["params"]["capabilities"] == {}  # no handlers: nothing declared
    assert [m["method"] for m in traffic.sent() if "method" in m][:2] == [
        "initialize",
        "notifications/initialized",
    ]


@pytest.fixture
def released_as_9_9_9(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The installed mcpkit distribution says it is version 9.9.9."""
    import importlib.metadata

    from mcpkit import _version

    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: "9.9.9" if name == "mcpkit" else real(name)
    )
    _version.version.cache_clear()
    yield
    _version.version.cache_clear()


async def test_client_info_names_the_installed_version(
    server: MCPServer, traffic: Traffic, era: str, released_as_9_9_9: None
) -> None:
    async with Client(server=server, trace=traffic, protocol_version=era) as client:
        await client.list_tools()
    sent = traffic.sent("initialize") or traffic.sent("tools/list")
    params = sent[0]["params"]
    info = params.get("clientInfo") or params["_meta"]["io.modelcontextprotocol/clientInfo"]
    assert info == {"name": "mcpkit", "version": "9.9.9"}


async def test_by_default_discover_finds_the_stateless_era(
    server: MCPServer, traffic: Traffic
) -> None:
    async with Client(server=server, trace=traffic) as client:
        assert client.server_info == {"name": "demo", "version": "1.0.0"}
        assert client.protocol_version == DEFAULT_VERSION == STATELESS
        assert client.instructions == "Be kind."
        assert "tools" in client.server_capabilities
        await client.list_tools()
    assert traffic.sent()[0]["method"] == "server/discover"
    assert not traffic.sent("initialize") and not traffic.sent("notifications/initialized")
    meta = traffic.sent("tools/list")[0]["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == STATELESS


async def test_older_protocol_version_is_negotiated(server: MCPServer, traffic: Traffic) -> None:
    async with Client(server=server, protocol_version="2025-06-18", trace=traffic) as client:
        assert client.protocol_version == "2025-06-18"
        tools = await client.list_tools()
        assert {t["name"] for t in tools} >= {"add", "echo"}


async def test_capabilities_follow_the_handlers_given(
    server: MCPServer, traffic: Traffic, era: str
) -> None:
    async with Client(
        server=server,
        trace=traffic,
        protocol_version=era,
        sampling_handler=lambda p: {},
        elicitation_handler=lambda p: {"action": "cancel"},
        roots=["file:///tmp"],
    ) as client:
        await client.call_tool("add", {"a": 1, "b": 2})
        if era == LATEST_HANDSHAKE:  # declared once, in initialize
            (session,) = server.sessions()
            declared = session.client_capabilities
        else:  # declared on every request (2026-07-28 basic § _meta)
            meta = traffic.sent("tools/call")[0]["params"]["_meta"]
            declared = meta["io.modelcontextprotocol/clientCapabilities"]
    # roots/list_changed does not exist in 2026-07-28: no listChanged to declare there.
    roots = {"listChanged": True} if era == LATEST_HANDSHAKE else {}
    assert declared == {"sampling": {}, "elicitation": {"form": {}}, "roots": roots}


def test_client_needs_exactly_one_target(server: MCPServer) -> None:
    with pytest.raises(ConfigurationError, match="exactly one"):
        Client()
    with pytest.raises(ConfigurationError, match="exactly one"):
        Client(server=server, url="http://127.0.0.1:1/mcp")
    with pytest.raises(ConfigurationError, match="only apply with command"):
        Client(server=server, args=["x"])


# -- requests ----------------------------------------------------------------------------------


async def test_tools_round_trip(server: MCPServer, traffic: Traffic, era: str) -> None:
    async with Client(server=server, trace=traffic, protocol_version=era) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        assert tools["add"]["description"] == "Add two integers."
        assert text_of(await client.call_tool("add", {"a": 2, "b": 40})) == "42"
        with pytest.raises(RemoteError) as info:
            await client.call_tool("nope")
        assert info.value.code == -32602


async def test_listing_follows_pagination(traffic: Traffic, era: str) -> None:
    server = build_server(page_size=3)
    async with Client(server=server, trace=traffic, protocol_version=era) as client:
        tools = await client.list_tools()
    assert len(tools) == len(server.tools) > 3
    pages = traffic.sent("tools/list")
    assert len(pages) == -(-len(server.tools) // 3)
    # The first page has no cursor (and, in 2026-07-28, params only for the _meta envelope).
    assert without_meta(pages[0].get("params", {})) == {} and pages[1]["params"]["cursor"]


async def test_concurrent_calls_are_correlated_by_id(
    server: MCPServer, traffic: Traffic, era: str
) -> None:
    async with Client(server=server, trace=traffic, protocol_version=era) as client:
        results = await asyncio.gather(
            *(client.call_tool("echo", {"text": str(i)}) for i in range(50))
        )
    assert [text_of(r) for r in results] == [str(i) for i in range(50)]


async def test_resources(server: MCPServer, traffic: Traffic, era: str) -> None:
    updated: list[str] = []
    async with Client(
        server=server, trace=traffic, protocol_version=era, on_resource_updated=updated.append
    ) as client:
        assert [r["uri"] for r in await client.list_resources()] == ["memo://greeting"]
        templates = await client.list_resource_templates()
        assert templates[0]["uriTemplate"] == "memo://items/{item}"
        read = await client.read_resource("memo://items/7")
        assert read["contents"][0]["text"] == "item 7"
        await client.subscribe_resource("memo://greeting")
        await client.call_tool("touch", {"uri": "memo://greeting"})
        await client.unsubscribe_resource("memo://greeting")
        await client.call_tool("touch", {"uri": "memo://greeting"})
    assert updated == ["memo://greeting"]


async def test_prompts_completion_ping_and_log_level(
    server: MCPServer, traffic: Traffic, era: str
) -> None:
    async with Client(server=server, trace=traffic, protocol_version=era) as client:
        assert [p["name"] for p in await client.list_prompts()] == ["review"]
        prompt = await client.get_prompt("review", {"code": "x = 1"})
        assert prompt["messages"][0]["content"]["text"] == "Please review: x = 1"
        completion = await client.complete({"type": "ref/prompt", "name": "review"}, "code", "p")
        assert completion["values"] == ["print", "pass"]
        await client.ping()
        await client.set_logging_level("error")
        if era == LATEST_HANDSHAKE:  # logging/setLevel, kept by the server's session
            assert server.sessions()[0].log_level > 0
        else:  # no ping, no setLevel: discover, and the level rides in each request
            assert len(traffic.sent("server/discover")) == 2
            await client.list_prompts()
            meta = traffic.sent("prompts/list")[-1]["params"]["_meta"]
            assert meta["io.modelcontextprotocol/logLevel"] == "error"
            assert not traffic.sent("ping") and not traffic.sent("logging/setLevel")


# -- timeouts, cancellation, progress ------------------------------------------------------------


async def test_timeout_raises_and_cancels_the_request(
    server: MCPServer, traffic: Traffic, era: str
) -> None:
    async with Client(server=server, trace=traffic, protocol_version=era) as client:
        start = time.monotonic()
        with pytest.raises(PeerTimeout, match=r"did not answer tools/call within 0\.2 s"):
            await client.call_tool("hang", timeout=0.2)
        assert time.monotonic() - start < 3.0  # far below anything unbounded
        call_id = traffic.sent("tools/call")[0]["id"]
        cancels = traffic.sent("notifications/cancelled")
        assert [c["params"]["requestId"] for c in cancels] == [call_id]
        async with asyncio.timeout(5):
            while not server.cancelled:  # type: ignore[attr-defined]
                await asyncio.sleep(0.01)
        assert server.cancelled == [call_id]  # type: ignore[attr-defined]
        # The session is still usable.
        assert text_of(await client.call_tool("add", {"a": 1, "b": 1})) == "2"


async def test_client_default_timeout_applies(server: MCPServer, era: str) -> None:
    async with Client(server=server, timeout=0.1, protocol_version=era) as client:
        with pytest.raises(PeerTimeout):
            await client.call_tool("hang")


async def test_a_timeout_mcpkit_cannot_wait_for_is_refused(server: MCPServer) -> None:
    for bad in (0, -1.0, math.nan, math.inf):
        with pytest.raises(ConfigurationError, match="timeout must be a positive, finite"):
            Client(server=server, timeout=bad)
        with pytest.raises(ConfigurationError, match="connect_timeout must be a positive"):
            Client(server=server, connect_timeout=bad)
    async with Client(server=server) as client:
        for bad in (0, math.nan, -math.inf):
            with pytest.raises(ValueError, match="the timeout of tools/call must be a positive"):
                await client.call_tool("add", {"a": 1, "b": 2}, timeout=bad)
        # math.inf is one call's way to wait as long as it takes; the session is unharmed.
        result = await client.call_tool("add", {"a": 1, "b": 2}, timeout=math.inf)
        assert text_of(result) == "3"


async def test_cancelling_the_task_sends_cancelled(
    server: MCPServer, traffic: Traffic, era: str
) -> None:
    async with Client(server=server, trace=traffic, protocol_version=era) as client:
        task = asyncio.create_task(client.call_tool("hang"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(100):
            if server.cancelled:  # type: ignore[attr-defined]
                break
            await asyncio.sleep(0.01)
        call_id = traffic.sent("tools/call")[0]["id"]
        assert [c["params"]["requestId"] for c in traffic.sent("notifications/cancelled")] == [
            call_id
        ]
        assert server.cancelled == [call_id]  # type: ignore[attr-defined]


async def test_progress_callback_per_call(server: MCPServer, traffic: Traffic, era: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(server=server, trace=traffic, protocol_version=era) as client:
        result = await client.call_tool("slow", {"steps": 3}, progress=lambda *a: seen.append(a))
        assert text_of(result) == "done"
        await client.call_tool("slow", {"steps": 2}, progress=on_progress)
        await asyncio.sleep(0.01)
        await client.call_tool("slow", {"steps": 2})  # no callback: no token
    assert seen == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
        (1, 2, "step 1"),
        (2, 2, "step 2"),
    ]
    calls = traffic.sent("tools/call")
    assert calls[0]["params"]["_meta"]["progressToken"] == calls[0]["id"]
    assert "progressToken" not in calls[2]["params"].get("_meta", {})


async def test_calls_after_close_fail_clearly(server: MCPServer) -> None:
    client = Client(server=server)
    async with client:
        pass
    with pytest.raises(ConnectionClosed, match="not connected"):
        await client.ping()


async def test_pending_calls_fail_when_the_session_closes(server: MCPServer, era: str) -> None:
    async with Client(server=server, protocol_version=era) as client:
        session = client.session
        task = asyncio.create_task(client.call_tool("hang"))
        await asyncio.sleep(0.02)
        await session.aclose()
        with pytest.raises(ConnectionClosed, match="closed"):
            await asyncio.wait_for(task, 1)


# -- server → client requests --------------------------------------------------------------------


async def test_sampling_handler_answers(server: MCPServer, traffic: Traffic, era: str) -> None:
    asked: list[dict[str, Any]] = []

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "Paris"},
            "model": "test-model",
            "stopReason": "endTurn",
        }

    async with Client(
        server=server, trace=traffic, protocol_version=era, sampling_handler=sample
    ) as client:
        result = await client.call_tool("ask_llm", {"question": "Capital of France?"})
    assert text_of(result) == "Paris"
    assert asked[0]["messages"][0]["content"]["text"] == "Capital of France?"
    assert asked[0]["maxTokens"] == 50


async def test_requests_without_a_handler_get_method_not_found(
    server: MCPServer, traffic: Traffic
) -> None:
    # Server-to-client requests on the wire exist only in the handshake era.
    async with Client(server=server, trace=traffic, protocol_version=LATEST_HANDSHAKE) as client:
        for method in ("sampling/createMessage", "elicitation/create", "roots/list", "bogus/x"):
            await client.call_tool("raw_request", {"method": method})
    traffic.exempt(
        lambda m: m.get("method") in ("sampling/createMessage", "elicitation/create", "bogus/x"),
        "the test server sends deliberately incomplete or unknown requests",
    )
    errors = [m["error"] for m in traffic.sent() if "error" in m]
    assert [e["code"] for e in errors] == [-32601] * 4
    assert errors[0]["message"] == "Method not found: sampling/createMessage"


async def test_elicitation_fills_schema_defaults(
    server: MCPServer, traffic: Traffic, era: str
) -> None:
    async with Client(
        server=server,
        trace=traffic,
        protocol_version=era,
        elicitation_handler=lambda p: {"action": "accept", "content": {"name": "Ada"}},
    ) as client:
        result = await client.call_tool("ask_user")
    assert result["structuredContent"] == {
        "action": "accept",
        "content": {
            "name": "Ada",
            "age": 30,
            "score": 95.5,
            "status": "active",
            "verified": True,
        },
    }
    (answer,) = [a for a in input_answers(traffic) if "action" in a]
    assert answer["content"]["age"] == 30


async def test_elicitation_decline_sends_no_content(
    server: MCPServer, traffic: Traffic, era: str
) -> None:
    async with Client(
        server=server,
        trace=traffic,
        protocol_version=era,
        elicitation_handler=lambda p: {"action": "decline"},
    ) as client:
        result = await client.call_tool("ask_user")
    assert result["structuredContent"] == {"action": "decline", "content": None}
    (answer,) = [a for a in input_answers(traffic) if "action" in a]
    assert answer == {"action": "decline"}


async def test_server_cancelling_its_request_cancels_the_handler(server: MCPServer) -> None:
    cancelled = asyncio.Event()

    async def never(params: dict[str, Any]) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}

    # The server cancels its own elicitation/create request: the handshake era's. In
    # 2026-07-28 an input request cannot be cancelled; the handler runs to its end.
    async with Client(
        server=server, elicitation_handler=never, protocol_version=LATEST_HANDSHAKE
    ) as client:
        async with asyncio.timeout(5):
            result = await client.call_tool("ask_user", {"timeout": 0.1})
        assert result["isError"] is True
        await asyncio.wait_for(cancelled.wait(), 1)


async def test_failing_handler_answers_with_an_error(
    server: MCPServer, traffic: Traffic, era: str
) -> None:
    def broken(params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("secret detail")

    async with Client(
        server=server, trace=traffic, protocol_version=era, sampling_handler=broken
    ) as client:
        if era == LATEST_HANDSHAKE:
            with contextlib.suppress(RemoteError):  # how the tool reports it is the server's
                await client.call_tool("ask_llm", {"question": "?"})
        else:  # an input round has no error answer (basic/patterns/mrtr): the call fails here
            with pytest.raises(RuntimeError, match="secret detail"):
                await client.call_tool("ask_llm", {"question": "?"})
    # errors.py: internals stay on this side; the server learns at most that it failed.
    assert "secret detail" not in str(traffic.sent())
    errors = [m["error"] for m in traffic.sent() if "error" in m]
    if era == LATEST_HANDSHAKE:
        assert errors == [{"code": -32603, "message": "Internal error"}]
    else:
        assert not errors and len(traffic.sent("tools/call")) == 1  # no retry


async def test_handler_raising_mcp_error_sends_its_code(
    server: MCPServer, traffic: Traffic, era: str
) -> None:
    def refuse(params: dict[str, Any]) -> dict[str, Any]:
        raise MCPError("User rejected sampling request", code=-1)

    async with Client(
        server=server, trace=traffic, protocol_version=era, sampling_handler=refuse
    ) as client:
        if era == LATEST_HANDSHAKE:  # the code goes to the server
            with contextlib.suppress(RemoteError):
                await client.call_tool("ask_llm", {"question": "?"})
            (error,) = [m["error"] for m in traffic.sent() if "error" in m]
            assert error == {"code": -1, "message": "User rejected sampling request"}
        else:  # no error answer to an input round: the caller gets it, code and all
            with pytest.raises(MCPError, match="User rejected") as info:
                await client.call_tool("ask_llm", {"question": "?"})
            assert info.value.code == -1


async def test_roots_and_list_changed(server: MCPServer, traffic: Traffic, era: str) -> None:
    changed: list[str] = []
    server.on_roots_changed(lambda session: changed.append("roots"))

    async def roots() -> list[Any]:
        return ["file:///a", {"uri": "file:///b", "name": "B"}]

    async with Client(server=server, trace=traffic, protocol_version=era, roots=roots) as client:
        assert texts(await client.call_tool("roots")) == ["file:///a", "file:///b"]
        await client.set_roots(["file:///c"])
        assert texts(await client.call_tool("roots")) == ["file:///c"]
    # 2026-07-28 removed roots/list_changed: every call asks for the roots afresh.
    told = 1 if era == LATEST_HANDSHAKE else 0
    assert len(traffic.sent("notifications/roots/list_changed")) == told
    assert changed == ["roots"] * told


async def test_server_ping_is_answered(server: MCPServer, traffic: Traffic) -> None:
    # A server-to-client ping exists only in the handshake era.
    async with Client(server=server, trace=traffic, protocol_version=LATEST_HANDSHAKE) as client:
        assert text_of(await client.call_tool("ping_client")) == "pong"


# -- notifications -------------------------------------------------------------------------------


async def test_server_logs_go_to_python_logging(
    server: MCPServer, caplog: pytest.LogCaptureFixture, era: str
) -> None:
    params: list[dict[str, Any]] = []
    caplog.set_level(logging.DEBUG, logger="mcpkit.client.server_log")
    async with Client(server=server, log_handler=params.append, protocol_version=era) as client:
        await client.call_tool("chatty")
    records = [(r.levelno, r.getMessage()) for r in caplog.records if r.name.endswith("server_log")]
    assert records == [
        (logging.INFO, "[demo] hello from the tool"),
        (logging.WARNING, '[demo] db: {"detail":42}'),
    ]
    assert [p["level"] for p in params] == ["info", "warning"]


async def test_server_logs_can_be_turned_off(
    server: MCPServer, caplog: pytest.LogCaptureFixture, era: str
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpkit.client.server_log")
    async with Client(
        server=server, server_logs=False, name="quiet", protocol_version=era
    ) as client:
        await client.call_tool("chatty")
    assert not [r for r in caplog.records if r.name.endswith("server_log")]


async def test_list_changed_callback(server: MCPServer, traffic: Traffic, era: str) -> None:
    kinds: list[str] = []
    raw: list[dict[str, Any]] = []
    async with Client(
        server=server, trace=traffic, protocol_version=era, on_list_changed=kinds.append
    ) as client:
        client.session.on_notification("notifications/tools/list_changed", raw.append)
        if era == STATELESS:  # a change is told only once the subscription is acknowledged
            async with asyncio.timeout(5):
                while not traffic.received("notifications/subscriptions/acknowledged"):
                    await asyncio.sleep(0.01)
        await client.call_tool("add_tool")
        assert "extra" in {t["name"] for t in await client.list_tools()}
        async with asyncio.timeout(5):  # 2026-07-28: it comes on the subscriptions/listen stream
            while not kinds:
                await asyncio.sleep(0.01)
    assert kinds == ["tools"]
    assert [without_meta(p) for p in raw] == [{}]
