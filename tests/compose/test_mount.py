"""mount(): a mounted server's components under a namespace, kept live, on both eras."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpkit import Client, Context, MCPServer, mcp_tool
from mcpkit.auth.info import AuthInfo
from mcpkit.compose import Mount, mount
from mcpkit.errors import RegistrationError, RemoteError
from mcpkit.testing import connect

STATELESS = "2026-07-28"
HANDSHAKE = "2025-11-25"


def weather_server() -> MCPServer:
    child = MCPServer(name="weather", version="1.0.0")

    @child.tool
    async def forecast(city: str) -> str:
        """The forecast for a city."""
        return f"sunny in {city}"

    @child.resource("weather://stations", mime_type="text/plain")
    def stations() -> str:
        return "paris,oslo"

    @child.resource("weather://city/{name}")
    def city(name: str) -> str:
        return f"city {name}"

    @child.prompt
    def report(city: str) -> str:
        return f"Write a weather report for {city}"

    @child.completion(prompt="report", argument="city")
    def cities(value: str) -> list[str]:
        return [c for c in ("paris", "oslo") if c.startswith(value)]

    @child.completion(resource_template="weather://city/{name}", argument="name")
    def names(value: str) -> list[str]:
        return [c for c in ("paris", "porto") if c.startswith(value)]

    return child


async def test_every_component_kind_appears_under_the_namespace() -> None:
    parent = MCPServer(name="hub", version="1.0.0")
    link = parent.mount(weather_server(), namespace="weather")
    assert isinstance(link, Mount)
    async with connect(parent) as client:
        assert [t["name"] for t in await client.list_tools()] == ["weather_forecast"]
        result = await client.call_tool("weather_forecast", {"city": "Oslo"})
        assert result["content"][0]["text"] == "sunny in Oslo"
        assert [r["uri"] for r in await client.list_resources()] == ["weather://weather/stations"]
        read = await client.read_resource("weather://weather/stations")
        assert read["contents"][0]["text"] == "paris,oslo"
        templates = await client.list_resource_templates()
        assert [t["uriTemplate"] for t in templates] == ["weather://weather/city/{name}"]
        read = await client.read_resource("weather://weather/city/rome")
        assert read["contents"][0]["text"] == "city rome"
        assert [p["name"] for p in await client.list_prompts()] == ["weather_report"]
        prompt = await client.get_prompt("weather_report", {"city": "Oslo"})
        assert "Oslo" in prompt["messages"][0]["content"]["text"]
        done = await client.complete({"type": "ref/prompt", "name": "weather_report"}, "city", "p")
        assert done["values"] == ["paris"]
        ref = {"type": "ref/resource", "uri": "weather://weather/city/{name}"}
        assert (await client.complete(ref, "name", "p"))["values"] == ["paris", "porto"]
        # The child's own names are not served by the parent.
        with pytest.raises(RemoteError):
            await client.call_tool("forecast", {"city": "Oslo"})


async def test_every_collision_is_named_and_nothing_is_mounted() -> None:
    parent = MCPServer(name="hub", version="1.0.0")

    @parent.tool
    def weather_forecast() -> str:
        return "mine"

    @parent.resource("weather://weather/stations")
    def taken() -> str:
        return "mine"

    @parent.prompt(name="weather_report")
    def report() -> str:
        return "mine"

    with pytest.raises(RegistrationError) as caught:
        mount(parent, weather_server(), namespace="weather")
    problems = caught.value.problems
    assert len(problems) == 3
    assert any("tool 'weather_forecast'" in p for p in problems)
    assert any("resource 'weather://weather/stations'" in p for p in problems)
    assert any("prompt 'weather_report'" in p for p in problems)
    assert [t.name for t in parent.tools] == ["weather_forecast"]
    assert list(parent.resources.static) == ["weather://weather/stations"]


@pytest.mark.parametrize("namespace", ["", "a_b", "a/b", "-x", 3])
def test_a_namespace_that_cannot_name_a_mount_is_refused(namespace: Any) -> None:
    parent = MCPServer(name="hub", version="1.0.0")
    with pytest.raises(RegistrationError, match="namespace"):
        mount(parent, weather_server(), namespace=namespace)


def test_a_resource_uri_without_a_scheme_is_refused_at_mount_time() -> None:
    parent = MCPServer(name="hub", version="1.0.0")
    child = MCPServer(name="odd", version="1.0.0")

    @child.resource("urn:odd")
    def odd() -> str:
        return "odd"

    with pytest.raises(RegistrationError, match="scheme"):
        mount(parent, child, namespace="odd")
    with pytest.raises(RegistrationError, match="itself"):
        mount(parent, parent, namespace="self")


async def test_tools_added_and_removed_later_follow_with_list_changed() -> None:
    parent = MCPServer(name="hub", version="1.0.0")
    child = weather_server()
    parent.mount(child, namespace="weather")
    async with connect(parent) as client:

        async def wind() -> str:
            return "calm"

        child.add_tool(wind)
        await asyncio.sleep(0.05)
        assert {t["name"] for t in await client.list_tools()} == {
            "weather_forecast",
            "weather_wind",
        }
        assert (await client.call_tool("weather_wind"))["content"][0]["text"] == "calm"
        child.tools.remove("forecast")
        await asyncio.sleep(0.05)
        assert [t["name"] for t in await client.list_tools()] == ["weather_wind"]
        changed = [
            n for n in client.notifications if n["method"] == "notifications/tools/list_changed"
        ]
        assert len(changed) == 2


async def test_a_tool_added_later_under_a_taken_name_leaves_the_parents_alone() -> None:
    parent = MCPServer(name="hub", version="1.0.0")
    child = weather_server()
    parent.mount(child, namespace="weather")

    @parent.tool
    def weather_wind() -> str:
        return "parent's"

    @child.tool
    def wind() -> str:
        return "child's"

    child.tools.remove("wind")
    async with connect(parent) as client:
        assert (await client.call_tool("weather_wind"))["content"][0]["text"] == "parent's"


async def test_the_childs_lifespan_runs_inside_the_parents() -> None:
    events: list[str] = []

    def tracked(label: str) -> Any:
        @contextlib.asynccontextmanager
        async def lifespan(server: MCPServer) -> AsyncIterator[dict[str, str]]:
            events.append(f"enter {label}")
            yield {"owner": label}
            events.append(f"exit {label}")

        return lifespan

    parent = MCPServer(name="hub", version="1.0.0", lifespan=tracked("parent"))
    child = MCPServer(name="db", version="1.0.0", lifespan=tracked("child"))

    @child.tool
    def owner() -> str:
        return str(child.lifespan_state["owner"])

    parent.mount(child, namespace="db")
    async with connect(parent) as client:
        assert events == ["enter parent", "enter child"]
        assert (await client.call_tool("db_owner"))["content"][0]["text"] == "child"
    assert events == ["enter parent", "enter child", "exit child", "exit parent"]


async def test_scopes_and_auth_info_reach_the_mounted_tool() -> None:
    parent = MCPServer(name="hub", version="1.0.0")
    child = MCPServer(name="admin", version="1.0.0")

    @child.tool(scopes=["mcp:admin"])
    async def whoami(ctx: Context) -> str:
        assert ctx.auth_info is not None
        return ctx.auth_info.client_id or "?"

    parent.mount(child, namespace="admin")
    reader = AuthInfo(token="t", client_id="reader", scopes=frozenset({"mcp:read"}))
    admin = AuthInfo(token="t", client_id="root", scopes=frozenset({"mcp:admin"}))
    async with connect(parent, auth_info=reader) as client:
        assert await client.list_tools() == []
        with pytest.raises(RemoteError):
            await client.call_tool("admin_whoami")
        client.auth_info = admin
        assert (await client.call_tool("admin_whoami"))["content"][0]["text"] == "root"


@pytest.mark.parametrize("era", [STATELESS, HANDSHAKE])
async def test_ctx_logs_elicits_samples_and_reports_progress_from_a_mounted_tool(
    era: str,
) -> None:
    parent = MCPServer(name="hub", version="1.0.0")
    child = MCPServer(name="ask", version="1.0.0")

    @child.tool
    async def confirm(ctx: Context) -> str:
        await ctx.info("asking")
        await ctx.progress(1, total=2)
        answer = await ctx.elicit(
            "Proceed?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}
        )
        sampled = await ctx.sample("Say yes", max_tokens=5)
        await ctx.progress(2, total=2)
        ok = (answer.content or {}).get("ok")
        return f"{answer.action}:{ok}:{sampled['content']['text']}"

    parent.mount(child, namespace="ask")
    progress: list[Any] = []
    logs: list[Any] = []
    pinned = {} if era == STATELESS else {"protocol_version": era}

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"ok": True}}

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        assert params["messages"][0]["content"]["text"] == "Say yes"
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "yes"},
            "model": "test-model",
            "stopReason": "endTurn",
        }

    async with Client(
        server=parent,
        elicitation_handler=elicit,
        sampling_handler=sample,
        log_handler=logs.append,
        **pinned,
    ) as client:
        result = await client.call_tool("ask_confirm", progress=lambda *args: progress.append(args))
    assert result["content"][0]["text"] == "accept:True:yes"
    if era == HANDSHAKE:  # on 2026-07-28 the input rounds re-run the tool: counts differ
        assert len(progress) == 2
        assert [entry["data"] for entry in logs] == ["asking"]
    else:
        assert progress and logs


async def test_servers_mount_several_levels_deep() -> None:
    top = MCPServer(name="top", version="1.0.0")
    middle = MCPServer(name="middle", version="1.0.0")
    leaf = weather_server()
    middle.mount(leaf, namespace="weather")
    top.mount(middle, namespace="eu")
    async with connect(top) as client:
        assert [t["name"] for t in await client.list_tools()] == ["eu_weather_forecast"]
        result = await client.call_tool("eu_weather_forecast", {"city": "Rome"})
        assert result["content"][0]["text"] == "sunny in Rome"
        read = await client.read_resource("weather://eu/weather/stations")
        assert read["contents"][0]["text"] == "paris,oslo"

        @leaf.tool
        def rain() -> str:
            return "none"

        await asyncio.sleep(0.05)
        assert (await client.call_tool("eu_weather_rain"))["content"][0]["text"] == "none"


def test_a_cycle_of_mounts_is_refused() -> None:
    a = MCPServer(name="a", version="1.0.0")
    b = MCPServer(name="b", version="1.0.0")
    c = weather_server()
    a.mount(b, namespace="b")
    b.mount(c, namespace="c")
    with pytest.raises(RegistrationError, match="'weather' is mounted in it"):
        c.mount(a, namespace="a")
    with pytest.raises(RegistrationError, match="'b' is mounted in it"):
        b.mount(a, namespace="a")
    assert [t.name for t in c.tools] == ["forecast"]
    other = MCPServer(name="other", version="1.0.0")
    other.mount(c, namespace="c")  # one server mounted on two parents is no cycle
    assert [t.name for t in other.tools] == ["c_forecast"]


def test_a_mounted_tools_back_channel_needs_are_the_parents_too() -> None:
    class Asker:
        @mcp_tool(needs=["elicitation"])
        async def ask(self) -> str:
            return "?"

    child = MCPServer(name="child", version="1.0.0", components=[Asker()])
    parent = MCPServer(name="parent", version="1.0.0")
    parent.mount(child, namespace="kid")
    assert parent.back_channel_needs == {"kid_ask": child.back_channel_needs["ask"]}
    child.tools.remove("ask")
    assert parent.back_channel_needs == {}
