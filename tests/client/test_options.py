"""One options object: Client, ClientSession and server definitions check options alike."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from mcpkit.client import Client, ClientSession, MCPClient
from mcpkit.client.config import _OPTIONS, ServerConfig, parse_servers
from mcpkit.client.options import SERVER_DEFINITION_OPTIONS, ClientOptions
from mcpkit.client.transports.memory import MemoryTransport
from mcpkit.errors import ConfigurationError, ConnectionClosed
from tests.client.fixtures.demo_server import build_server

BAD: list[tuple[str, Any, str]] = [
    ("timeout", -1, "must be a positive, finite number"),
    ("timeout", math.nan, "must be a positive, finite number"),
    ("connect_timeout", 0, "must be a positive, finite number"),
    ("max_message_size", 10, "must be a whole number of bytes"),
    ("max_server_requests", 0, "must be a positive integer"),
    ("server_logs", "yes", "must be true or false"),
    ("capabilities", ["sampling"], "must be a dict"),
    ("protocol_version", "2030-01-01", "must be one of"),
]


@pytest.mark.parametrize(("key", "value", "problem"), BAD)
def test_a_bad_option_is_refused_alike_everywhere(key: str, value: Any, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=f"^{key} {problem}"):
        ClientOptions(**{key: value})
    with pytest.raises(ConfigurationError, match=f"^{key} {problem}"):
        Client(command="x", **{key: value})
    if key in _OPTIONS:
        with pytest.raises(ConfigurationError, match=f"server 'a': '{key}' {problem}"):
            parse_servers({"a": {"command": "x", key: value}})


def test_supported_versions_must_be_known_and_hold_the_requested_one() -> None:
    with pytest.raises(ConfigurationError, match="unknown protocol versions"):
        ClientOptions(supported_versions=("1999-01-01",))
    with pytest.raises(ConfigurationError, match="protocol_version must be one of 2025-06-18"):
        Client(
            server=build_server(), protocol_version="2026-07-28", supported_versions=("2025-06-18",)
        )


async def test_without_protocol_version_the_newest_supported_one_is_asked_for() -> None:
    async with Client(server=build_server(), supported_versions=("2025-06-18",)) as client:
        assert client.protocol_version == "2025-06-18"
    async with Client(server=build_server()) as client:
        assert client.protocol_version == "2026-07-28"


def test_options_are_frozen_and_replace_checks_again() -> None:
    options = ClientOptions(timeout=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.timeout = 6  # type: ignore[misc]
    assert options.replace(timeout=7).timeout == 7
    with pytest.raises(ConfigurationError, match="timeout must be"):
        options.replace(timeout=-1)


def test_client_keywords_become_its_options() -> None:
    client = Client(command="x", timeout=3, protocol_version="2025-06-18", server_logs=False)
    assert client.options == ClientOptions(
        timeout=3, protocol_version="2025-06-18", server_logs=False
    )


def test_server_definition_options_are_client_options() -> None:
    names = {f.name for f in dataclasses.fields(ClientOptions)}
    assert _OPTIONS <= SERVER_DEFINITION_OPTIONS <= names
    assert ServerConfig(command="x", timeout=2).timeout == 2


async def test_a_session_runs_on_an_options_object() -> None:
    server = build_server()
    options = ClientOptions(
        protocol_version="2025-11-25", client_info={"name": "t", "version": "1"}
    )
    async with ClientSession(MemoryTransport(server), options) as session:
        assert session.protocol_version == "2025-11-25"
        assert session.client_info == {"name": "t", "version": "1"}
        assert {t["name"] for t in await session.list_tools()} >= {"add"}


async def test_client_methods_act_on_its_session() -> None:
    client = Client(server=build_server(), protocol_version="2025-11-25")
    with pytest.raises(ConnectionClosed, match="not connected"):
        await client.list_tools()
    async with client:
        result = await client.call_tool("add", {"a": 1, "b": 2})
        assert result["content"][0]["text"] == "3"
    async with MCPClient(servers={"s": {"server": build_server(), "timeout": 9}}) as mcp:
        assert mcp.client("s").options.timeout == 9
