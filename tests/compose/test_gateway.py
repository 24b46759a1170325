"""from_config(): a gateway over real stdio upstreams, one of them broken, started lazily or eagerly."""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, MCPServer
from mcpkit.compose import ToolFilter, from_config
from mcpkit.compose.gateway import entry_tags
from mcpkit.errors import ConfigurationError, RemoteError
from tests.transports.conftest import run_app

# An upstream server: it writes its pid to $MARKER when it starts (to see when the
# gateway starts it), and exits at once while the file $GATE is missing (a broken
# upstream that can be mended).
UPSTREAM = """
import os, sys
from pathlib import Path
from mcpkit import MCPServer

if os.environ.get("MARKER"):
    with open(os.environ["MARKER"], "a") as f:
        f.write(f"{os.getpid()}\\n")
if os.environ.get("GATE") and not Path(os.environ["GATE"]).exists():
    sys.exit(3)

server = MCPServer(name="upstream", version="1.0.0")


@server.tool(meta={"tags": ["read"]})
def search(q: str) -> str:
    return f"found {q}"


@server.tool(meta={"tags": ["read"]})
def search_all() -> str:
    return "everything"


@server.tool(meta={"tags": ["write"]})
def delete(q: str) -> str:
    return f"deleted {q}"


@server.tool
async def touch() -> str:
    await server.resources.notify_updated("data://notes")
    return "touched"


@server.resource("data://notes", mime_type="text/plain")
def notes() -> str:
    return "three notes"


@server.prompt
def review(topic: str) -> str:
    return f"Review {topic}."


@server.completion(prompt="review", argument="topic")
def topics(value: str) -> list[str]:
    return [t for t in ("tests", "types") if t.startswith(value)]


if __name__ == "__main__":
    server.run_stdio()
"""

LOGGER = "mcpkit.compose"


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    script = tmp_path / "upstream.py"
    script.write_text(UPSTREAM)
    return script


def entry(script: Path, **env: Path) -> dict[str, Any]:
    definition: dict[str, Any] = {"command": sys.executable, "args": [str(script)]}
    if env:
        definition["env"] = {k: str(v) for k, v in env.items()}
    return definition


def names(tools: list[dict[str, Any]]) -> set[str]:
    return {t["name"] for t in tools}


def down_warnings(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == LOGGER
        and r.levelno == logging.WARNING
        and f"server {name!r}" in r.getMessage()
    ]


async def test_a_broken_upstream_is_left_out_with_one_warning_and_the_others_are_served(
    upstream: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    gateway = MCPServer.from_config(
        {
            "mcpServers": {
                "good": entry(upstream),
                "missing": {"command": str(upstream.parent / "no-such-command")},
                "exits": {"command": sys.executable, "args": ["-c", "raise SystemExit(2)"]},
            }
        }
    )
    async with Client(server=gateway, protocol_version="2025-11-25") as client:
        for _ in range(3):  # listed again and again: still one warning each
            tools = await client.list_tools()
            assert names(tools) == {"good_search", "good_search_all", "good_delete", "good_touch"}
        found = await client.call_tool("good_search", {"q": "cats"})
        assert found["content"][0]["text"] == "found cats"
        with pytest.raises(RemoteError, match=r"upstream server 'missing' is unavailable") as exc:
            await client.call_tool("missing_search", {"q": "x"})
        assert exc.value.code == -32603
        assert [r["uri"] for r in await client.list_resources()] == ["data://good/notes"]
        read = await client.read_resource("data://good/notes")
        assert read["contents"] == [
            {"uri": "data://good/notes", "mimeType": "text/plain", "text": "three notes"}
        ]
        assert names(await client.list_prompts()) == {"good_review"}
        prompt = await client.get_prompt("good_review", {"topic": "gateways"})
        assert prompt["messages"][0]["content"]["text"] == "Review gateways."
        done = await client.complete({"type": "ref/prompt", "name": "good_review"}, "topic", "t")
        assert done["values"] == ["tests", "types"]
    assert len(down_warnings(caplog, "missing")) == 1
    assert len(down_warnings(caplog, "exits")) == 1
    assert "exited with status 2" in down_warnings(caplog, "exits")[0]
    assert not down_warnings(caplog, "good")


async def test_upstreams_start_on_first_use_by_default(upstream: Path, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    gateway = from_config({"mcpServers": {"up": entry(upstream, MARKER=marker)}})
    async with Client(server=gateway, protocol_version="2025-11-25") as client:
        assert not marker.exists()  # (an eager start is over before the client is in)
        assert "up_search" in names(await client.list_tools())
        for q in range(5):
            await client.call_tool("up_search", {"q": str(q)})
        assert len(marker.read_text().split()) == 1  # one process, one handshake, for all


async def test_http_upstreams_are_served_beside_stdio_ones_and_a_refused_one_is_down(
    upstream: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    remote = MCPServer(name="remote", version="1.0.0")

    @remote.tool
    def shout(text: str) -> str:
        return text.upper()

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    async with run_app(remote.http_app()) as base:
        gateway = from_config(
            {
                "mcpServers": {
                    "local": entry(upstream),
                    "remote": {"type": "http", "url": f"{base}/mcp"},
                    "gone": {"url": refused},
                }
            }
        )
        async with Client(server=gateway, protocol_version="2025-11-25") as client:
            assert {"local_search", "remote_shout"} <= names(await client.list_tools())
            shouted = await client.call_tool("remote_shout", {"text": "hi"})
            assert shouted["content"][0]["text"] == "HI"
            with pytest.raises(RemoteError, match="upstream server 'gone' is unavailable"):
                await client.call_tool("gone_shout", {"text": "x"})
    assert len(down_warnings(caplog, "gone")) == 1


async def test_eager_upstreams_start_with_the_gateway_and_a_broken_one_is_warned_of_then(
    upstream: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    marker = tmp_path / "started"
    gateway = from_config(
        {
            "mcpServers": {
                "up": entry(upstream, MARKER=marker),
                "broken": entry(upstream, GATE=tmp_path / "never"),
            }
        },
        eager=True,
    )
    async with gateway.lifespan_context():  # started, before any client came
        assert len(marker.read_text().split()) == 1
        assert len(down_warnings(caplog, "broken")) == 1
        # The eager connection serves stateless traffic: no second process for it.
        async with Client(server=gateway, protocol_version="2026-07-28") as client:
            assert names(await client.list_tools()) == {
                "up_search",
                "up_search_all",
                "up_delete",
                "up_touch",
            }
            assert (await client.call_tool("up_search", {"q": "x"}))["content"][0]["text"]
        assert len(marker.read_text().split()) == 1
    assert len(down_warnings(caplog, "broken")) == 1


async def test_a_down_upstream_is_retried_and_its_tools_are_announced_when_it_is_back(
    upstream: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    gate = tmp_path / "gate"
    gateway = from_config({"mcpServers": {"flaky": entry(upstream, GATE=gate)}}, retry_after=0.5)
    changed = asyncio.Event()

    async def on_list_changed(kind: str) -> None:
        if kind == "tools":
            changed.set()

    async with Client(
        server=gateway, protocol_version="2025-11-25", on_list_changed=on_list_changed
    ) as client:
        assert await client.list_tools() == []
        with pytest.raises(RemoteError, match=r"tried again in"):
            await client.call_tool("flaky_search", {"q": "x"})
        gate.touch()  # mended: the background retry finds it back
        await asyncio.wait_for(changed.wait(), 10)
        assert "flaky_search" in names(await client.list_tools())
        found = await client.call_tool("flaky_search", {"q": "dogs"})
        assert found["content"][0]["text"] == "found dogs"
    assert len(down_warnings(caplog, "flaky")) == 1  # the retries that failed said nothing
    back = [r for r in caplog.records if r.levelno == logging.INFO and "is back" in r.getMessage()]
    assert len(back) == 1


async def test_filters_serve_only_the_included_tools_not_excluded_by_name_glob_or_tag(
    upstream: Path,
) -> None:
    gateway = from_config(
        {"mcpServers": {"a": entry(upstream), "b": entry(upstream), "c": entry(upstream)}},
        include={"a": ["search*"], "c": ["tag:read", "touch"]},
        exclude={"a": ["search_all"], "b": ["tag:write", "to*"]},
    )
    async with Client(server=gateway, protocol_version="2025-11-25") as client:
        assert names(await client.list_tools()) == {
            "a_search",
            "b_search",
            "b_search_all",
            "c_search",
            "c_search_all",
            "c_touch",
        }
        for hidden in ("a_search_all", "a_delete", "b_delete", "c_delete"):
            with pytest.raises(RemoteError, match=f"Unknown tool: {hidden}"):
                await client.call_tool(hidden, {"q": "x"})
        assert (await client.call_tool("c_search", {"q": "y"}))["content"][0]["text"] == "found y"


async def test_a_tag_filter_applies_to_a_call_made_before_any_listing(upstream: Path) -> None:
    gateway = from_config({"mcpServers": {"a": entry(upstream)}}, exclude={"a": ["tag:write"]})
    async with Client(server=gateway, protocol_version="2025-11-25") as client:
        with pytest.raises(RemoteError, match="Unknown tool: a_delete"):
            await client.call_tool("a_delete", {"q": "x"})
        assert (await client.call_tool("a_search", {"q": "z"}))["content"][0]["text"] == "found z"


async def test_a_resource_update_upstream_reaches_the_subscriber_under_the_gateway_uri(
    upstream: Path,
) -> None:
    gateway = from_config({"mcpServers": {"up": entry(upstream)}})
    updated: list[str] = []
    arrived = asyncio.Event()

    async def on_updated(uri: str) -> None:
        updated.append(uri)
        arrived.set()

    async with Client(
        server=gateway, protocol_version="2025-11-25", on_resource_updated=on_updated
    ) as client:
        await client.subscribe_resource("data://up/notes")
        await client.call_tool("up_touch")
        await asyncio.wait_for(arrived.wait(), 10)
    assert updated == ["data://up/notes"]


def test_a_config_file_is_read_from_its_path(upstream: Path, tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(
        '{"mcpServers": {"up": {"command": "python", "args": ["x.py"]}, '
        '"off_line": {"comand": "python", "disabled": true}}, "globalShortcut": "Ctrl+Space"}'
    )
    gateway = from_config(path, name="hub")
    assert gateway.name == "hub"
    (source,) = gateway.component_sources
    assert list(source.members) == ["up"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("config", "options", "message"),
    [
        (
            {"mcpServers": {"up": {"comand": "python"}}},
            {},
            r"server 'up': unknown key 'comand' \(did you mean 'command'\?\)",
        ),
        (
            {"mcpServers": {"up": {"command": "python", "arg": ["x.py"]}}},
            {},
            r"unknown key 'arg' \(did you mean 'args'\?\)",
        ),
        ({"mcpServer": {"up": {"command": "python"}}}, {}, r"is 'mcpServer' misspelled\?"),
        (
            {"mcpServers": {"my_server": {"command": "python"}}},
            {},
            r"server 'my_server': its name is its namespace",
        ),
        (
            {"mcpServers": {"up": {"command": "python"}}},
            {"include": {"upp": ["x"]}},
            r"include: no server 'upp' in the configuration \(servers: 'up'\)",
        ),
        (
            {"mcpServers": {"up": {"command": "python"}}},
            {"exclude": {"up": "x*"}},
            r"exclude\['up'\] must be a list",
        ),
        ({"mcpServers": {"up": {"command": "python"}}}, {"retry_after": 0}, "retry_after"),
        ({"mcpServers": {"up": {}}}, {}, "needs exactly one of 'command'"),
    ],
)
def test_a_mistake_in_the_configuration_is_an_error_naming_it(
    config: dict[str, Any], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        from_config(config, **options)


def test_every_mistake_is_reported_at_once() -> None:
    with pytest.raises(ConfigurationError) as exc:
        from_config(
            {"mcpServers": {"a": {"comand": "x"}, "b": {"url": "http://h/mcp", "header": {}}}},
            include={"zz": ["x"]},
        )
    text = str(exc.value)
    assert "'comand'" in text and "'header'" in text and "'zz'" in text


def test_tool_filters_match_names_globs_and_tags() -> None:
    only_reads = ToolFilter(include=("tag:read",), exclude=("*_all",))
    assert only_reads.allows("search", {"read"})
    assert not only_reads.allows("search_all", {"read"})
    assert not only_reads.allows("delete", {"write"})
    assert ToolFilter().allows("anything")
    assert entry_tags({"name": "t", "_meta": {"tags": ["a", 1]}}) == {"a"}
    assert entry_tags({"name": "t", "_meta": {"_fastmcp": {"tags": ["b"]}}}) == {"b"}
    assert entry_tags({"name": "t"}) == frozenset()
