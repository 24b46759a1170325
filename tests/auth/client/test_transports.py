"""OAuth on every HTTP way of connecting: legacy SSE, concurrent requests, the blocking facade."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from mcpkit.auth.client import HeadlessAuthorizer, MemoryTokenStorage, OAuth
from mcpkit.client import Client
from mcpkit.client.blocking import Blocking
from tests.auth.client.servers import AuthServer, ProtectedMCP, TokenTable
from tests.auth.client.world import REDIRECT, mcp_server, world
from tests.client.http_servers import free_socket, serve


@contextlib.asynccontextmanager
async def sse_world() -> AsyncIterator[tuple[str, AuthServer]]:
    table = TokenTable()
    as_sock, rs_sock = free_socket(), free_socket()
    auth_server = AuthServer(base=f"http://127.0.0.1:{as_sock.getsockname()[1]}", table=table)
    base = f"http://127.0.0.1:{rs_sock.getsockname()[1]}"
    resource = ProtectedMCP(
        app=mcp_server().sse_app(),
        base=base,
        table=table,
        issuers=lambda: [auth_server.issuer],
        prm_at="root",  # the resource is the origin: both /sse and /message are in it
        guarded=("/sse", "/message"),
    )
    async with serve(auth_server, as_sock, path=""), serve(resource, rs_sock, path="/sse") as url:
        yield url, auth_server


async def test_a_legacy_sse_server_gets_the_same_token_on_its_stream_and_its_posts() -> None:
    async with sse_world() as (url, auth_server):
        auth = OAuth(authorizer=HeadlessAuthorizer(REDIRECT))
        async with Client(url=url, auth=auth, timeout=10.0) as client:
            result = await client.call_tool("echo", {"text": "over sse"})
        assert result["content"][0]["text"] == "over sse"
        assert len(auth_server.authorizations) == 1  # the POSTs reused the stream's token


async def test_concurrent_requests_meeting_a_401_share_one_refresh() -> None:
    async with world() as w:
        async with w.client(w.oauth(storage=MemoryTokenStorage())) as client:
            await client.list_tools()
            w.table.access.clear()
            await asyncio.gather(*(client.call_tool("echo", {"text": str(i)}) for i in range(4)))
        grants = [r["grant_type"] for r in w.auth_server.token_requests]
        assert grants == ["authorization_code", "refresh_token"]


async def test_the_blocking_facade_authorizes_too() -> None:
    async with world() as w:

        def run() -> str:
            with Blocking(w.client(w.oauth())) as client:
                result = client.call_tool("echo", {"text": "blocking"})
            return str(result["content"][0]["text"])

        assert await asyncio.to_thread(run) == "blocking"
        assert len(w.auth_server.token_requests) == 1


def test_a_synchronous_httpx_client_is_refused_rather_than_sent_without_a_token() -> None:
    import httpx
    import pytest

    from mcpkit.errors import ConfigurationError

    with httpx.Client(auth=OAuth(authorizer=HeadlessAuthorizer(REDIRECT))) as http:
        with pytest.raises(ConfigurationError, match="AsyncClient"):
            http.get("http://127.0.0.1:1/mcp")
