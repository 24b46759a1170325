"""``MCPClient`` against in-memory mcpkit servers (its behaviour does not depend on the transport).

Every test that uses the ``servers`` fixture runs in both eras: the client's default
(2026-07-28, which mcpkit servers speak) and the handshake era (2025-11-25, pinned),
since what MCPClient offers must not depend on the era. Every server's traffic is
recorded with ``trace`` and validated against the MCP schema of the revision in use
when the test ends.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from mcpkit import Context, MCPServer, ToolAnnotations, ToolError
from mcpkit.client import Client, MCPClient, ServerConfig, Tool
from mcpkit.errors import ConfigurationError, ConnectionClosed, PeerTimeout, ToolCallError
from tests.client.conftest import Traffic
from tests.client.fixtures.demo_server import build_server

TIMEOUT = 10.0
STATELESS = "2026-07-28"
HANDSHAKE = "2025-11-25"


class Forecast(BaseModel):
    city: str
    temperature_c: float


def weather_server() -> MCPServer:
    server = MCPServer(name="weather", version="1.0.0")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    async def forecast(city: str) -> Forecast:
        """The forecast for a city."""
        return Forecast(city=city, temperature_c=21.5)

    @server.tool(title="Say it", meta={"example.com/tier": "free"})
    async def say(text: str) -> str:
        return text

    @server.tool
    async def fail(city: str) -> str:
        raise ToolError(f"no weather for {city}")

    @server.resource("weather://current", mime_type="text/plain")
    async def current() -> str:
        return "sunny"

    @server.resource("weather://cities/{city}", mime_type="text/plain")
    async def city(city: str) -> str:
        return f"weather in {city}"

    @server.prompt(version="1")
    async def report(location: str) -> str:
        """Report the weather."""
        return f"v1 report for {location}"

    @server.prompt(version="2")
    async def report_v2(location: str, days: str = "1") -> str:
        """Report the weather (v2)."""
        return f"v2 report for {location} over {days} days"

    @server.tool
    async def change(ctx: Context) -> str:
        await server.resources.notify_updated("weather://current")
        return "changed"

    return server


class Servers:
    """Servers plus one traffic recorder each; ``definitions()`` for MCPClient.

    ``era`` is the revision the client should end up speaking: the stateless one is
    the client's default (nothing is pinned), the handshake one is pinned.
    """

    def __init__(self, era: str = STATELESS) -> None:
        self.era = era
        self.weather = weather_server()
        self.demo = build_server()
        self.traffic: dict[str, Traffic] = {"weather": Traffic(), "demo": Traffic()}

    @property
    def stateless(self) -> bool:
        return self.era == STATELESS

    def definitions(self, **extra: dict[str, Any]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {
            "weather": {"server": self.weather, "trace": self.traffic["weather"]},
            "demo": {"server": self.demo, "trace": self.traffic["demo"]},
        }
        if not self.stateless:
            for options in out.values():
                options["protocol_version"] = self.era
        for name, options in extra.items():
            out.setdefault(name, {}).update(options)
        return out

    def sent(self, server: str, method: str) -> list[dict[str, Any]]:
        return self.traffic[server].sent(method)

    def params(self, server: str, method: str) -> list[dict[str, Any]]:
        """The params of each ``method`` request, without the 2026-07-28 ``_meta`` envelope."""
        return [
            {k: v for k, v in (m.get("params") or {}).items() if k != "_meta"}
            for m in self.sent(server, method)
        ]

    def declared(self, server: str) -> dict[str, Any]:
        """The client capabilities the last connection declared: in ``initialize``, or in
        the last request's ``_meta`` (2026-07-28 declares them per request)."""
        if not self.stateless:
            return self.sent(server, "initialize")[-1]["params"]["capabilities"]  # type: ignore[no-any-return]
        last = [m for m in self.traffic[server].sent() if "id" in m][-1]
        return last["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]  # type: ignore[no-any-return]

    def check_era(self) -> None:
        """Every connection spoke the era the test asked for."""
        for name, recorder in self.traffic.items():
            if not recorder.traffic:
                continue
            assert bool(recorder.sent("initialize")) is not self.stateless, name
            assert recorder.stateless_version == (STATELESS if self.stateless else None), name


@pytest.fixture(params=[STATELESS, HANDSHAKE])
def servers(request: pytest.FixtureRequest) -> Iterator[Servers]:
    s = Servers(request.param)
    yield s
    s.check_era()
    for recorder in s.traffic.values():
        recorder.check()


# -- tools ------------------------------------------------------------------------------------------


async def test_tools_are_namespaced_and_described(servers: Servers) -> None:
    async with MCPClient(servers=servers.definitions(), timeout=TIMEOUT) as mcp:
        tools = await mcp.get_tools()
        assert {"weather_forecast", "weather_say", "demo_add", "demo_echo"} <= set(tools)
        forecast = tools["weather_forecast"]
        assert isinstance(forecast, Tool)
        assert forecast.name == "weather_forecast"
        assert (forecast.server_name, forecast.tool_name) == ("weather", "forecast")
        assert forecast.description == "The forecast for a city."
        assert forecast.input_schema["properties"]["city"]["type"] == "string"
        assert forecast.input_schema["required"] == ["city"]
        assert forecast.output_schema is not None
        assert set(forecast.output_schema["properties"]) == {"city", "temperature_c"}
        assert forecast.annotations == {"readOnlyHint": True, "idempotentHint": True}
        assert tools["weather_say"].output_schema is None
        assert tools["weather_say"].title == "Say it"
        assert tools["weather_say"].meta == {"example.com/tier": "free"}
        assert forecast.title is None
        assert forecast.definition["name"] == "forecast"
        assert tools["demo_add"].annotations is None
        assert "weather_forecast" in repr(forecast)


async def test_a_tool_is_awaitable_with_keyword_arguments(servers: Servers) -> None:
    async with MCPClient(servers=servers.definitions(), timeout=TIMEOUT) as mcp:
        tools = await mcp.get_tools()
        # structuredContent when the tool sends it...
        assert await tools["weather_forecast"](city="Tokyo") == {
            "city": "Tokyo",
            "temperature_c": 21.5,
        }
        assert await tools["weather_forecast"].call({"city": "Oslo"}, timeout=5) == {
            "city": "Oslo",
            "temperature_c": 21.5,
        }
        # ...a primitive is wrapped as {"result": ...} (what the SDK and FastMCP send).
        assert await tools["demo_add"](a=2, b=3) == {"result": 5}
        seen: list[Any] = []
        await tools["demo_slow"].call({"steps": 2}, progress=lambda *a: seen.append(a))
        assert [s[0] for s in seen] == [1, 2]
    assert servers.params("weather", "tools/call")[0] == {
        "name": "forecast",
        "arguments": {"city": "Tokyo"},
    }


async def test_a_tool_error_raises_with_its_content_or_is_returned(servers: Servers) -> None:
    async with MCPClient(servers=servers.definitions(), timeout=TIMEOUT) as mcp:
        tools = await mcp.get_tools()
        with pytest.raises(ToolError) as info:
            await tools["weather_fail"](city="Atlantis")
        exc = info.value
        assert isinstance(exc, ToolCallError)
        assert exc.content == [{"type": "text", "text": "no weather for Atlantis"}]
        assert (exc.server, exc.tool) == ("weather", "fail")
        assert exc.result["isError"] is True
        assert "no weather for Atlantis" in str(exc) and "'fail'" in str(exc)
        # Asked for, the error comes back like a result (for an agent to show the model).
        returned = await tools["weather_fail"].call({"city": "X"}, raise_on_error=False)
        assert returned == [{"type": "text", "text": "no weather for X"}]
        lenient = await mcp.get_tools(raise_on_error=False)
        assert await lenient["weather_fail"](city="Y") == [
            {"type": "text", "text": "no weather for Y"}
        ]
        # A protocol error (unknown tool) is not a tool error.
        raw = await mcp.call_tool("weather", "fail", {"city": "Z"})
        assert raw["isError"] is True


async def test_toolsets_group_tools_by_server(servers: Servers) -> None:
    async with MCPClient(servers=servers.definitions(), timeout=TIMEOUT) as mcp:
        toolsets = await mcp.get_toolsets()
        assert set(toolsets) == {"weather", "demo"}
        assert set(toolsets["weather"]) == {"forecast", "say", "fail", "change"}
        assert toolsets["weather"]["say"].name == "weather_say"
        assert await toolsets["weather"]["say"](text="hi") == [{"type": "text", "text": "hi"}]


async def test_tool_lists_are_cached_and_refreshed_on_list_changed(servers: Servers) -> None:
    changes: list[str] = []
    async with MCPClient(servers=servers.definitions(), timeout=TIMEOUT) as mcp:
        await mcp.get_tools()
        await mcp.get_tools()
        await mcp.get_toolsets()
        # The server declared tools.listChanged: one tools/list serves every call...
        assert len(servers.sent("demo", "tools/list")) == 1
        mcp.client("demo").session.on_notification(
            "notifications/tools/list_changed", lambda p: changes.append("seen")
        )
        await (await mcp.get_tools())["demo_add_tool"]()
        for _ in range(100):
            if changes:
                break
            await asyncio.sleep(0.01)
        # ...until it says the list changed: then the next listing asks again.
        tools = await mcp.get_tools()
        assert "demo_extra" in tools
        assert await tools["demo_extra"]() == [{"type": "text", "text": "extra"}]
        assert len(servers.sent("demo", "tools/list")) == 2
        assert len(servers.sent("weather", "tools/list")) == 1


async def test_resource_and_prompt_lists_are_cached_and_refreshed_on_list_changed(
    servers: Servers,
) -> None:
    seen: list[str] = []
    async with MCPClient(servers=servers.definitions(), timeout=TIMEOUT) as mcp:
        mcp.resources.on_list_changed("demo", lambda: seen.append("resources"))
        mcp.prompts.on_list_changed("demo", lambda: seen.append("prompts"))
        for _ in range(2):
            resources = await mcp.resources.list()
            prompts = await mcp.prompts.list()
            templates = await mcp.resources.templates()
        assert len(servers.sent("demo", "resources/list")) == 1
        assert len(servers.sent("demo", "prompts/list")) == 1
        assert len(servers.sent("demo", "resources/templates/list")) == 1
        assert "memo://late" not in [r["uri"] for r in resources["demo"]]
        assert "late" not in [p["name"] for p in prompts["demo"]]
        assert templates["demo"]

        servers.demo.resource("memo://late")(lambda: "late")
        servers.demo.prompt(name="late")(lambda: "late")
        await servers.demo.resources.notify_list_changed()
        await servers.demo.prompts.notify_list_changed()
        async with asyncio.timeout(5):
            while not {"resources", "prompts"} <= set(seen):
                await asyncio.sleep(0.01)

        resources = await mcp.resources.list()
        prompts = await mcp.prompts.list()
        assert "memo://late" in [r["uri"] for r in resources["demo"]]
        assert "late" in [p["name"] for p in prompts["demo"]]
        assert len(servers.sent("demo", "resources/list")) == 2
        assert len(servers.sent("demo", "prompts/list")) == 2
        assert len(servers.sent("weather", "prompts/list")) <= 1


async def test_without_list_changed_every_listing_asks_the_server(servers: Servers) -> None:
    servers.demo.capabilities = lambda revision=None: {"tools": {}}  # type: ignore[method-assign]
    async with MCPClient(servers=servers.definitions(), timeout=TIMEOUT) as mcp:
        await mcp.get_tools()
        await mcp.get_tools()
        assert len(servers.sent("demo", "tools/list")) == 2
        # No resources capability: nothing is asked, the server has none.
        assert (await mcp.resources.list())["demo"] == []
        assert servers.sent("demo", "resources/list") == []


async def test_colliding_names_keep_the_first_and_warn(caplog: pytest.LogCaptureFixture) -> None:
    a, b = MCPServer(name="a", version="1"), MCPServer(name="b", version="1")

    @a.tool(name="c")
    async def first() -> str:
        return "c of server a_b"

    @b.tool(name="b_c")
    async def second() -> str:
        return "b_c of server a"

    async with MCPClient(servers={"a_b": {"server": a}, "a": {"server": b}}) as mcp:
        with caplog.at_level(logging.WARNING, "mcpkit.client"):
            tools = await mcp.get_tools()
        assert await tools["a_b_c"]() == [{"type": "text", "text": "c of server a_b"}]
        assert "tool name 'a_b_c' is taken" in caplog.text
        assert (await mcp.get_toolsets())["a"]["b_c"].name == "a_b_c"


# -- resources and prompts ----------------------------------------------------------------------------


async def test_resources_of_every_server(servers: Servers) -> None:
    async with MCPClient(servers=servers.definitions(), timeout=TIMEOUT) as mcp:
        listing = await mcp.resources.list()
        assert set(listing) == {"weather", "demo"}
        assert [r["uri"] for r in listing["weather"]] == ["weather://current"]
        assert [r["uri"] for r in listing["demo"]] == ["memo://greeting"]
        templates = await mcp.resources.templates()
        assert templates["weather"][0]["uriTemplate"] == "weather://cities/{city}"
        result = await mcp.resources.read("weather", "weather://cities/Paris")
        assert result["contents"][0]["text"] == "weather in Paris"


async def test_resource_updates_and_list_changes_reach_their_handlers(servers: Servers) -> None:
    updated: list[str] = []
    changed: list[str] = []
    got = asyncio.Event()

    async def on_updated(uri: str) -> None:
        updated.append(uri)
        got.set()

    mcp = MCPClient(servers=servers.definitions(), timeout=TIMEOUT)
    mcp.resources.on_updated("weather", on_updated)
    mcp.resources.on_list_changed("weather", lambda: changed.append("resources"))
    mcp.prompts.on_list_changed("weather", lambda: changed.append("prompts"))
    async with mcp:
        await mcp.resources.subscribe("weather", "weather://current")
        await mcp.call_tool("weather", "change")
        async with asyncio.timeout(TIMEOUT):
            await got.wait()
        assert updated == ["weather://current"]
        await mcp.resources.unsubscribe("weather", "weather://current")
        await mcp.call_tool("weather", "change")
        await servers.weather.resources.notify_list_changed()
        await servers.weather.prompts.notify_list_changed()
        for _ in range(100):
            if len(changed) == 2:
                break
            await asyncio.sleep(0.01)
        assert sorted(changed) == ["prompts", "resources"]
        assert updated == ["weather://current"]  # nothing after unsubscribing


async def test_prompts_list_and_get_with_versions(servers: Servers) -> None:
    async with MCPClient(servers=servers.definitions(), timeout=TIMEOUT) as mcp:
        listing = await mcp.prompts.list()
        assert {p["name"] for p in listing["demo"]} == {"review"}
        assert {(p["name"], p.get("version")) for p in listing["weather"]} >= {("report", "1")}
        got = await mcp.prompts.get(server_name="demo", name="review", args={"code": "x = 1"})
        assert got["prompt"]["name"] == "review"
        assert got["prompt"]["description"] == "Review some code."
        assert got["messages"][0]["content"]["text"] == "Please review: x = 1"
        v1 = await mcp.prompts.get(
            server_name="weather", name="report", args={"location": "Kyoto"}, version="1"
        )
        assert v1["messages"][0]["content"]["text"] == "v1 report for Kyoto"
        assert v1["prompt"]["version"] == "1"
    sent = servers.params("weather", "prompts/get")[0]
    assert sent == {"name": "report", "arguments": {"location": "Kyoto"}, "version": "1"}


async def test_prompt_arguments_that_are_not_strings_are_sent_as_json(servers: Servers) -> None:
    server = MCPServer(name="p", version="1")

    @server.prompt
    async def plan(days: str, fast: str) -> str:
        return f"{days} days, fast={fast}"

    async with MCPClient(servers={"p": {"server": server}}) as mcp:
        got = await mcp.prompts.get(server_name="p", name="plan", args={"days": 3, "fast": True})
        assert got["messages"][0]["content"]["text"] == "3 days, fast=true"


# -- handlers for the servers' requests ----------------------------------------------------------------


async def test_elicitation_sampling_and_roots_handlers_per_server(servers: Servers) -> None:
    asked: list[str] = []

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"name": "Ada"}}

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "Paris"},
            "model": "m",
            "stopReason": "endTurn",
        }

    mcp = MCPClient(servers=servers.definitions(), timeout=TIMEOUT)
    mcp.elicitation.on_request("demo", elicit)
    mcp.sampling.on_request("demo", sample)
    mcp.roots.on_request("demo", lambda: ["file:///work"])
    async with mcp:
        await mcp.get_tools()
        assert set(servers.declared("demo")) == {"elicitation", "sampling", "roots"}
        assert servers.declared("weather") == {}
        answer = await mcp.call_tool("demo", "ask_user")
        assert asked == ["Who are you?"]
        # The handler's answer is completed with the schema's defaults (2025-11-25).
        assert answer["structuredContent"]["content"]["name"] == "Ada"
        assert answer["structuredContent"]["content"]["age"] == 30
        sampled = await mcp.call_tool("demo", "ask_llm", {"question": "Capital of France?"})
        assert sampled["content"][0]["text"] == "Paris"
        roots = await mcp.call_tool("demo", "roots")
        assert "file:///work" in roots["content"][0]["text"]
        await mcp.roots.set("demo", ["file:///other"])
        roots = await mcp.call_tool("demo", "roots")
        assert "file:///other" in roots["content"][0]["text"]
    asked_for = _server_asked(servers.traffic["demo"])
    assert asked_for == ["elicitation/create", "sampling/createMessage", "roots/list", "roots/list"]
    if servers.stateless:
        # 2026-07-28 has no server-to-client requests and no roots notification: each
        # question came back as an input-required result that the handler answered.
        assert servers.sent("demo", "notifications/roots/list_changed") == []
    else:
        assert len(servers.sent("demo", "notifications/roots/list_changed")) == 1


def _server_asked(recorder: Traffic) -> list[str]:
    """What the server asked the client, in order, whatever the era's way of asking."""
    out: list[str] = []
    for message in recorder.received():
        if "method" in message and "id" in message:  # a server-to-client request
            out.append(message["method"])
        result = message.get("result")
        if isinstance(result, dict) and result.get("resultType") == "input_required":
            out.extend(r["method"] for r in result["inputRequests"].values())
    return out


async def test_a_handler_set_after_connecting_is_declared_next_request_or_on_reconnection(
    servers: Servers, caplog: pytest.LogCaptureFixture
) -> None:
    async with MCPClient(servers=servers.definitions(), timeout=TIMEOUT) as mcp:
        with caplog.at_level(logging.WARNING, "mcpkit.client"):
            mcp.elicitation.on_request("demo", lambda p: {"action": "decline"})
        if servers.stateless:
            # 2026-07-28 declares capabilities per request: the next call carries it.
            assert "without the 'elicitation' capability" not in caplog.text
        else:
            # The handshake declared capabilities once: a new connection declares it.
            assert "'demo' was connected without the 'elicitation' capability" in caplog.text
            await mcp.reconnect("demo")
        answer = await mcp.call_tool("demo", "ask_user")
        assert answer["structuredContent"]["action"] == "decline"
    assert "elicitation" in servers.declared("demo")
    assert _server_asked(servers.traffic["demo"]) == ["elicitation/create"]


def test_handlers_need_a_configured_server() -> None:
    mcp = MCPClient(servers={"a": {"server": build_server()}})
    with pytest.raises(ConfigurationError, match="no MCP server named 'b'; configured: 'a'"):
        mcp.elicitation.on_request("b", lambda p: {"action": "decline"})


# -- configuration, lifecycle, instances ------------------------------------------------------------------


async def test_per_server_timeouts_override_the_global_one() -> None:
    mcp = MCPClient(
        servers={
            "quick": {"server": build_server(), "timeout": 0.2},
            "patient": {"server": build_server()},
        },
        timeout=0.6,
    )
    async with mcp:
        with pytest.raises(PeerTimeout, match=r"'quick' did not answer tools/call within 0\.2 s"):
            await mcp.call_tool("quick", "hang")
        start = time.monotonic()
        with pytest.raises(PeerTimeout, match=r"'patient' did not answer tools/call within 0\.6 s"):
            await mcp.call_tool("patient", "hang")
        assert 0.55 < time.monotonic() - start < 5.0
        # A call's own timeout wins over both.
        tools = await mcp.get_tools()
        with pytest.raises(PeerTimeout, match=r"within 0\.1 s"):
            await tools["patient_hang"].call(timeout=0.1)
        # The timed-out server keeps working.
        assert await tools["quick_add"](a=1, b=1) == {"result": 2}


async def test_connects_on_first_use_and_not_after_disconnect() -> None:
    mcp = MCPClient(servers={"demo": {"server": build_server()}})
    assert "not connected" in repr(mcp)
    tools = await mcp.get_tools()  # the seeds' client connects lazily
    assert await tools["demo_add"](a=1, b=2) == {"result": 3}
    assert "connected" in repr(mcp)
    await mcp.disconnect()
    with pytest.raises(ConnectionClosed, match="'demo' is not connected"):
        await tools["demo_add"](a=1, b=2)
    with pytest.raises(ConnectionClosed, match="MCPClient was disconnected"):
        await mcp.get_tools()
    await mcp.disconnect()  # idempotent
    async with mcp:  # an explicit connect brings it back
        assert await tools["demo_add"](a=1, b=2) == {"result": 3}


async def test_a_second_client_with_the_same_configuration_is_refused() -> None:
    server = build_server()

    def config() -> dict[str, Any]:
        return {"demo": {"server": server, "timeout": 5}}

    first = MCPClient(servers=config())
    with pytest.raises(ConfigurationError, match="this exact configuration already exists"):
        MCPClient(servers=config())
    # Distinct ids are distinct instances.
    one = MCPClient(servers=config(), id="one")
    two = MCPClient(servers=config(), id="two")
    with pytest.raises(ConfigurationError, match="id 'one' already exists"):
        MCPClient(servers={"other": {"server": build_server()}}, id="one")
    async with one, two:
        assert await one.call_tool("demo", "add", {"a": 1, "b": 1})
        assert await two.call_tool("demo", "add", {"a": 1, "b": 1})
    # Disconnecting releases the configuration.
    await first.disconnect()
    again = MCPClient(servers=config())
    # A different timeout is a different configuration.
    MCPClient(servers=config(), timeout=1)
    # A client that was dropped does not hold its configuration.
    del again
    gc.collect()
    MCPClient(servers=config())


def test_from_config_reads_mcp_servers(tmp_path: Any) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"files": {"command": "python", "args": ["s.py"]}}}')
    mcp = MCPClient.from_config(path, timeout=3, id="from-file")
    assert mcp.server_names == ["files"]
    assert mcp.timeout == 3.0
    assert mcp.id == "from-file"
    mcp2 = MCPClient.from_config({"mcpServers": {"w": {"url": "http://h/mcp"}}})
    assert mcp2.server_names == ["w"]


def test_constructor_options_are_checked() -> None:
    for bad in (0, -1, math.nan, math.inf, True, "5"):
        with pytest.raises(ConfigurationError, match="timeout must be a positive, finite number"):
            MCPClient(servers={}, timeout=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="id must be a non-empty string"):
        MCPClient(servers={}, id="")
    with pytest.raises(TypeError):
        MCPClient({"a": {"command": "x"}})  # type: ignore[misc]
    with pytest.raises(ConfigurationError, match="server 'a': unknown option"):
        MCPClient(servers={"a": {"command": "x", "cmd": "y"}})
    # ServerConfig objects are accepted as they are.
    mcp = MCPClient(servers={"a": ServerConfig(command="python")}, id="objects")
    assert mcp.server_names == ["a"]


async def test_the_client_of_one_server_is_reachable(servers: Servers) -> None:
    async with MCPClient(servers=servers.definitions(), timeout=TIMEOUT) as mcp:
        demo = mcp.client("demo")
        assert isinstance(demo, Client)
        assert demo.server_info["name"] == "demo"
        completion = await demo.complete({"type": "ref/prompt", "name": "review"}, "code", "p")
        assert completion["values"] == ["print", "pass"]
        assert mcp.errors == {}


@pytest.mark.parametrize("era", [STATELESS, HANDSHAKE])
async def test_server_logs_can_be_turned_off_per_server(
    caplog: pytest.LogCaptureFixture, era: str
) -> None:
    seen: list[Any] = []
    mute = Traffic()
    pinned = {} if era == STATELESS else {"protocol_version": era}
    mcp = MCPClient(
        servers={
            "loud": {"server": build_server(), **pinned},
            "quiet": {
                "server": build_server(),
                "server_logs": False,
                "log_handler": seen.append,
                **pinned,
            },
            "mute": {"server": build_server(), "server_logs": False, "trace": mute, **pinned},
        }
    )
    async with mcp:
        with caplog.at_level(logging.INFO, "mcpkit.client.server_log"):
            await mcp.call_tool("loud", "chatty")
            await mcp.call_tool("quiet", "chatty")
            await mcp.call_tool("mute", "chatty")
    assert "[loud] hello from the tool" in caplog.text
    assert "[quiet]" not in caplog.text
    assert "[mute]" not in caplog.text
    assert [entry["data"] for entry in seen] == ["hello from the tool", {"detail": 42}]
    if era == STATELESS:
        # 2026-07-28 sends logs only to a request that asks: a client that shows none
        # does not ask, one that does asks for "info", as a handshake-era server defaults to.
        assert mute.received("notifications/message") == []
        assert (
            "io.modelcontextprotocol/logLevel" not in mute.sent("tools/call")[0]["params"]["_meta"]
        )
    mute.check()


async def test_a_server_definition_takes_client_extensions() -> None:
    seen: list[dict[str, Any]] = []
    hooked: list[str] = []
    server = MCPServer(name="caps", version="1")

    @server.tool
    async def look(ctx: Context) -> str:
        seen.append(dict(ctx.client_capabilities))
        return "ok"

    class Declaring:
        identifier = "com.example/declared"
        client_capability: dict[str, Any] = {}  # noqa: RUF012

        def request_meta(self, method: str, meta: dict[str, Any]) -> None:
            hooked.append(method)

    async with MCPClient(
        servers={"caps": {"server": server, "extensions": [Declaring()]}}, timeout=TIMEOUT
    ) as mcp:
        await mcp.call_tool("caps", "look", {})
    assert seen[0]["extensions"] == {"com.example/declared": {}}
    assert "tools/call" in hooked
