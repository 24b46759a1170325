"""Extensions' hooks on the ``_meta`` of each outgoing client request, on both eras."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from mcpkit import Client, ConfigurationError, Context, Extension, MCPServer

TRACE = "com.example/trace"
PV = "io.modelcontextprotocol/protocolVersion"


def traced_server(seen: list[dict[str, Any]]) -> MCPServer:
    server = MCPServer(name="meta", version="1")

    @server.tool
    async def look(ctx: Context) -> str:
        """Record the request's _meta."""
        seen.append(dict(ctx.meta))
        return "ok"

    return server


def tracing(calls: list[str]) -> Extension:
    def hook(method: str, meta: dict[str, Any]) -> None:
        calls.append(method)
        meta[TRACE] = f"00-{len(calls):032x}-{1:016x}-01"
        meta[PV] = "1999-01-01"  # a hook cannot break the envelope: its keys win

    return Extension(identifier="com.example/tracing", request_meta=hook)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_the_server_sees_what_the_hook_put_in_meta(version: str) -> None:
    seen: list[dict[str, Any]] = []
    calls: list[str] = []
    arguments: dict[str, Any] = {"_meta": {"progressToken": "mine"}}
    async with Client(
        server=traced_server(seen), protocol_version=version, extensions=[tracing(calls)]
    ) as client:
        await client.request("tools/call", {"name": "look", **arguments})
    assert "tools/call" in calls
    (meta,) = seen
    assert meta[TRACE].startswith("00-")
    assert meta["progressToken"] == "mine"  # the caller's own keys stay
    assert arguments == {"_meta": {"progressToken": "mine"}}  # and its dict is not changed
    if version == "2026-07-28":
        assert meta[PV] == "2026-07-28"
    else:
        assert PV not in meta  # the hook's envelope key is dropped on the handshake era


async def test_without_hooks_requests_carry_no_meta_of_theirs() -> None:
    seen: list[dict[str, Any]] = []
    ext = Extension(identifier="com.example/quiet")  # no request_meta
    async with Client(
        server=traced_server(seen), protocol_version="2025-11-25", extensions=[ext]
    ) as client:
        await client.call_tool("look", {})
    assert TRACE not in seen[0]


def test_something_that_is_not_an_extension_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"extensions\[0\] must be an extension"):
        Client(server=MCPServer(name="s", version="1"), extensions=["com.example/x"])  # type: ignore[list-item]


class Declaring:
    """A client-side extension that declares itself in ``capabilities.extensions``."""

    identifier = "com.example/declared"
    request_meta = None
    client_capability: ClassVar[dict[str, Any]] = {"level": 2}


def capabilities_server(seen: list[dict[str, Any]]) -> MCPServer:
    server = MCPServer(name="caps", version="1")

    @server.tool
    async def look(ctx: Context) -> str:
        """Record the client capabilities the request carries."""
        seen.append(dict(ctx.client_capabilities))
        return "ok"

    return server


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_an_extension_with_a_client_capability_is_declared_on_both_eras(
    version: str,
) -> None:
    seen: list[dict[str, Any]] = []
    async with Client(
        server=capabilities_server(seen),
        protocol_version=version,
        extensions=[Declaring(), tracing([])],
        capabilities={"extensions": {"com.example/mine": {}}},
    ) as client:
        await client.call_tool("look", {})
    (caps,) = seen
    assert caps["extensions"] == {"com.example/declared": {"level": 2}, "com.example/mine": {}}


async def test_the_callers_own_entry_wins_over_the_extensions() -> None:
    seen: list[dict[str, Any]] = []
    async with Client(
        server=capabilities_server(seen),
        protocol_version="2026-07-28",
        extensions=[Declaring()],
        capabilities={"extensions": {"com.example/declared": {"level": 1}}},
    ) as client:
        await client.call_tool("look", {})
    assert seen[0]["extensions"] == {"com.example/declared": {"level": 1}}


def test_a_client_capability_that_is_not_a_dict_is_refused() -> None:
    class Bad(Declaring):
        client_capability = "yes"  # type: ignore[assignment]

    with pytest.raises(ConfigurationError, match=r"client_capability must be a dict"):
        Client(server=MCPServer(name="s", version="1"), extensions=[Bad()])
