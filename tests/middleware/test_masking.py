"""Error masking: client-facing errors lose internal details; the log keeps them all."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from mcpkit import MCPServer
from mcpkit.errors import Forbidden, MCPError, RemoteError
from mcpkit.middleware import by_session, mask_errors, rate_limit
from mcpkit.server.middleware import CallNext, MiddlewareContext
from mcpkit.testing import connect
from tests.middleware.conftest import demo


def masked_server(*, debug: bool = False, **options: Any) -> MCPServer:
    server = demo(debug=debug, middleware=[mask_errors(**options)])

    @server.tool
    async def leaky() -> str:
        """Raise a deliberate error that says too much."""
        raise MCPError("query failed: SELECT * FROM users", code=-32000, data={"dsn": "pg://x"})

    @server.resource("demo://crash")
    def crash() -> str:
        raise KeyError("internal-key")

    @server.tool
    async def denied() -> str:
        """A policy refusal the caller must see."""
        raise Forbidden("Forbidden: not your tenant")

    return server


async def error_of(server: MCPServer, tool: str) -> RemoteError:
    async with connect(server) as client:
        with pytest.raises(RemoteError) as caught:
            await client.call_tool(tool, {})
    return caught.value


async def test_internal_errors_are_masked_with_a_reference_found_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="mcpkit.errors")
    error = await error_of(masked_server(), "leaky")
    assert error.code == -32603 and error.data is None
    found = re.fullmatch(r"Internal error \(reference ([0-9a-f]{12})\)", error.message)
    assert found is not None
    (record,) = [r for r in caplog.records if r.name == "mcpkit.errors"]
    logged = record.getMessage()
    assert found.group(1) in logged and "SELECT * FROM users" in logged and "pg://x" in logged


async def test_debug_mode_and_enabled_false_leave_errors_alone() -> None:
    for server in (masked_server(debug=True), masked_server(enabled=False)):
        error = await error_of(server, "leaky")
        assert error.message == "query failed: SELECT * FROM users"
        assert error.data == {"dsn": "pg://x"}
    async with connect(masked_server(debug=True)) as client:
        with pytest.raises(RemoteError) as shown:
            await client.read_resource("demo://crash")
    assert "internal-key" in shown.value.message  # what debug shows ...
    async with connect(masked_server(enabled=True, debug=True)) as client:
        with pytest.raises(RemoteError) as hidden:
            await client.read_resource("demo://crash")
    assert "internal-key" not in hidden.value.message  # ... enabled=True masks


async def test_errors_the_caller_must_act_on_pass_through() -> None:
    assert (await error_of(masked_server(), "denied")).message == "Forbidden: not your tenant"
    server = demo(middleware=[mask_errors(), rate_limit(rate=0.001, burst=1, key=by_session)])
    async with connect(server) as client:
        with pytest.raises(RemoteError) as unknown:
            await client.call_tool("nope", {})
        assert "nope" in unknown.value.message  # invalid params: the caller's mistake
        with pytest.raises(RemoteError) as limited:
            await client.call_tool("echo", {"text": "x"})
        assert limited.value.code == -31429 and limited.value.data["retryAfter"] > 0
    exposed = await error_of(masked_server(expose={-32000}), "leaky")
    assert exposed.message.startswith("query failed")


async def test_an_inner_middlewares_exception_is_masked(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method == "tools/call":
            raise RuntimeError("middleware secret")
        return await call_next(ctx)

    server = demo(debug=True, middleware=[mask_errors(enabled=True), broken])
    error = await error_of(server, "echo")
    assert error.message.startswith("Internal error (reference ")
    assert "middleware secret" in caplog.text
