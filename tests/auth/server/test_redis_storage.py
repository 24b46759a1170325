"""The authorization server's Redis storage passes the storage conformance class, and a
whole sign-in alternates between two nodes that share nothing but Redis."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from joserfc.jwk import ECKey

from mcpkit import Context, MCPServer
from mcpkit.auth.client import OAuth
from mcpkit.auth.server import OAuthProxy, OIDCProvider
from mcpkit.auth.server.encryption import new_key
from mcpkit.auth.server.redis_storage import RedisAuthServerStorage
from mcpkit.auth.server.storage import AuthServerStorage
from mcpkit.client import Client
from tests.auth.server.browser import FormBrowser
from tests.auth.server.storage_conformance import AuthServerStorageConformance, refresh_record
from tests.auth.server.upstream import Upstream
from tests.client.http_servers import free_socket, serve
from tests.redis_server import RedisServer


class TestRedisAuthServerStorage(AuthServerStorageConformance):
    @pytest.fixture
    async def storage(self, redis_server: RedisServer) -> AsyncIterator[AuthServerStorage]:
        store = RedisAuthServerStorage(redis_server.url, prefix=f"t{secrets.token_hex(4)}:")
        yield store
        await store.aclose()


async def test_records_expire_in_redis_itself(redis_server: RedisServer) -> None:
    store = RedisAuthServerStorage(redis_server.url, prefix=f"t{secrets.token_hex(4)}:")
    try:
        await store.save_refresh_token("rt", refresh_record(expires_in=60))
        keys = [k async for k in store.redis.scan_iter(f"{store.prefix}*")]
        assert len(keys) == 2  # the token and its grant's index
        for key in keys:
            assert 0 < await store.redis.pttl(key) <= 60_000
    finally:
        await store.aclose()


class RoundRobin:
    """A load balancer in front of two nodes: each request goes to the next node."""

    def __init__(self, *nodes: Any) -> None:
        self.nodes = nodes
        self.turn = itertools.cycle(range(len(nodes)))
        self.served = [0] * len(nodes)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.nodes[0](scope, receive, send)  # the MCP apps need no start-up of their own
            return
        n = next(self.turn)
        self.served[n] += 1
        await self.nodes[n](scope, receive, send)


async def test_a_sign_in_alternates_between_two_nodes_sharing_redis(
    upstream: tuple[Upstream, int], redis_server: RedisServer
) -> None:
    up, port = upstream
    base = f"http://127.0.0.1:{port}"
    key = ECKey.generate_key("P-256", auto_kid=True).as_dict(private=True)
    prefix = f"two-nodes-{secrets.token_hex(4)}:"
    sealing = new_key()  # both nodes seal and open the provider's tokens with it
    nodes, providers, stores = [], [], []
    for _ in range(2):
        provider = OIDCProvider(issuer=up.issuer, client_id=up.client_id,
                                client_secret=up.client_secret)  # fmt: skip
        store = RedisAuthServerStorage(redis_server.url, prefix=prefix)
        proxy = OAuthProxy(upstream=provider, base_url=base, storage=store, signing_key=key,
                           encryption_key=sealing)  # fmt: skip
        server = MCPServer(name="node", version="1", auth=proxy.protected_resource())

        @server.tool
        def whoami(ctx: Context) -> str:
            """Who is calling."""
            return ctx.auth.subject if ctx.auth else "nobody"

        nodes.append(server.http_app(stateless=True))
        providers.append(provider)
        stores.append(store)
    balancer = RoundRobin(*nodes)
    browser = FormBrowser(login="heidi")
    try:
        async with serve(balancer, free_socket(port)) as url:
            auth = OAuth(authorizer=browser)
            async with Client(url=url, auth=auth, timeout=10.0) as client:
                result = await client.call_tool("whoami", {})
    finally:
        await browser.aclose()
        for provider, store in zip(providers, stores, strict=True):
            await provider.aclose()
            await store.aclose()
    assert result["content"][0]["text"] == "heidi"
    assert min(balancer.served) >= 4  # both nodes took part
