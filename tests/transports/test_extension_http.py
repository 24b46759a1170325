"""An extension over real sockets: its method and settings on Streamable HTTP (both eras), legacy SSE."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from mcpkit import Client, Context, Extension, MCPServer
from mcpkit.errors import METHOD_NOT_FOUND
from tests.transports.conftest import HTTPClient
from tests.transports.test_streamable_http_stateless_era import post, request


async def shout(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return {"text": str(params.get("text", "")).upper(), "era": ctx.session.revision.era}


def shouting_server() -> MCPServer:
    ext = Extension(
        identifier="com.example/shout",
        settings={"maxLength": 140},
        methods={"example/shout": shout},
    )
    return MCPServer(name="shout", version="1.0.0", extensions=[ext])


async def test_a_2026_post_reaches_the_added_method_and_discover_lists_it(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    url = await serve_app(shouting_server().http_app()) + "/mcp"
    discover = await post(http, url, request("server/discover"))
    assert discover.status == 200  # and valid against the 2026-07-28 schema (post checks)
    assert discover.result["capabilities"]["extensions"]["com.example/shout"] == {"maxLength": 140}
    ans = await post(http, url, request("example/shout", {"text": "hi"}))
    assert ans.status == 200
    assert (ans.result["text"], ans.result["era"]) == ("HI", "stateless")
    assert ans.result["resultType"] == "complete"
    missing = await post(http, url, request("example/whisper"))
    assert missing.status == 404 and missing.error["code"] == METHOD_NOT_FOUND


async def test_a_handshake_session_reaches_the_added_method(
    serve_app: Any, make_client: Callable[..., HTTPClient]
) -> None:
    client = make_client(await serve_app(shouting_server().http_app()) + "/mcp")
    init = await client.initialize()  # validated against the 2025-11-25 schema
    assert init.result["capabilities"]["extensions"] == {"com.example/shout": {"maxLength": 140}}
    # The additive method's result is in no schema: checked as a generic Result only.
    ans = await client.request("example/shout", {"text": "yo"})
    assert ans.status == 200
    assert ans.result == {"text": "YO", "era": "handshake"}


@pytest.mark.no_schema_check  # the client's request for the added method is in no schema
async def test_legacy_sse_reaches_the_added_method(serve_app: Any) -> None:
    base = await serve_app(shouting_server().sse_app())
    async with Client(url=base + "/sse", http_transport="sse", timeout=10) as client:
        assert client.server_capabilities["extensions"] == {"com.example/shout": {"maxLength": 140}}
        result = await client.request("example/shout", {"text": "sse"})
    assert result == {"text": "SSE", "era": "handshake"}
