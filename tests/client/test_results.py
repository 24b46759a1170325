"""Result-type handlers of client extensions: a result of an extension's ``resultType`` is
completed by its handler inside ``call_tool``, ``get_prompt`` and ``read_resource``."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from mcpkit import Client, ConfigurationError, MCPServer
from mcpkit.client.results import ResultContext, ResultHandler
from mcpkit.server.middleware import CallNext, MiddlewareContext

# "deferred" is a result type of this test's own, in no schema.
pytestmark = pytest.mark.no_schema_check

DEFERRED = {"resultType": "deferred", "ticket": "t-1"}


def deferring_server() -> MCPServer:
    server = MCPServer(name="deferring", version="1")

    @server.tool
    def later() -> str:
        return "never reached"

    @server.tool
    def now() -> str:
        return "at once"

    @server.prompt
    def greeting() -> str:
        return "hello"

    async def defer(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        name = ctx.params.get("name")
        if ctx.method in ("tools/call", "prompts/get") and name in ("later", "greeting"):
            return dict(DEFERRED)
        return await call_next(ctx)

    async def redeem(params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"redeemed {params['ticket']}"}]}

    server.add_middleware(defer)
    server.add_method("example/redeem", redeem)
    return server


class Redeeming:
    """A client extension that completes ``deferred`` results with ``example/redeem``."""

    identifier = "com.example/deferred"
    request_meta = None

    def __init__(self) -> None:
        self.seen: list[ResultContext] = []
        self.result_handlers: dict[str, ResultHandler] = {"deferred": self.redeem}

    async def redeem(self, context: ResultContext) -> dict[str, Any]:
        self.seen.append(context)
        return await context.session.request(
            "example/redeem", {"ticket": context.result["ticket"]}, timeout=context.timeout
        )


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_call_tool_returns_what_the_handler_made_of_the_result(version: str) -> None:
    ext = Redeeming()
    async with Client(
        server=deferring_server(), protocol_version=version, extensions=[ext]
    ) as client:
        result = await client.call_tool("later", {}, timeout=7)
        plain = await client.call_tool("now", {})
    assert result["content"] == [{"type": "text", "text": "redeemed t-1"}]
    assert plain["content"][0]["text"] == "at once"  # other results pass through
    (context,) = ext.seen
    assert context.method == "tools/call"
    assert context.params["name"] == "later"
    assert context.result["ticket"] == "t-1"
    assert context.timeout == 7


async def test_get_prompt_goes_through_the_handler_too() -> None:
    ext = Redeeming()
    async with Client(server=deferring_server(), extensions=[ext]) as client:
        result = await client.get_prompt("greeting")
    assert result["content"][0]["text"] == "redeemed t-1"
    assert ext.seen[0].method == "prompts/get"


async def test_without_a_handler_and_through_request_the_result_is_raw() -> None:
    async with Client(server=deferring_server()) as client:
        raw = await client.call_tool("later", {})
        assert (raw["resultType"], raw["ticket"]) == ("deferred", "t-1")
    async with Client(server=deferring_server(), extensions=[Redeeming()]) as client:
        raw = await client.request("tools/call", {"name": "later"})
        assert (raw["resultType"], raw["ticket"]) == ("deferred", "t-1")


def test_result_handlers_that_are_not_functions_are_refused() -> None:
    class Bad:
        identifier = "com.example/bad"
        request_meta = None
        result_handlers: ClassVar[dict[str, Any]] = {"deferred": "redeem"}

    with pytest.raises(ConfigurationError, match="result_handlers must map"):
        Client(server=MCPServer(name="s", version="1"), extensions=[Bad()])
