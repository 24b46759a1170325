"""The registration limit holds across the nodes of a cluster that share Redis storage."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator

import httpx

from mcpkit.auth.server import OAuthProxy, OIDCProvider
from mcpkit.auth.server.redis_storage import RedisAuthServerStorage
from tests.client.http_servers import serve
from tests.redis_server import RedisServer

BODY = {"redirect_uris": ["https://app.example/cb"], "token_endpoint_auth_method": "none"}


@contextlib.asynccontextmanager
async def two_nodes(redis_url: str, *, limit: int) -> AsyncIterator[tuple[str, str]]:
    """Two authorization servers on their own sockets, sharing one Redis (and nothing else)."""
    prefix = f"limits-{secrets.token_hex(4)}:"
    async with contextlib.AsyncExitStack() as stack:
        urls = []
        for _ in range(2):
            upstream = OIDCProvider(issuer="http://127.0.0.1:9", client_id="c", client_secret="s")
            stack.push_async_callback(upstream.aclose)
            store = RedisAuthServerStorage(redis_url, prefix=prefix)
            stack.push_async_callback(store.aclose)
            proxy = OAuthProxy(upstream=upstream, base_url="http://127.0.0.1:8000",
                               storage=store, registration_limit=(limit, 3600.0))  # fmt: skip
            urls.append(await stack.enter_async_context(serve(proxy.app(), path="")))
        yield urls[0], urls[1]


async def test_the_registration_after_the_limit_is_refused_on_the_other_node(
    redis_server: RedisServer,
) -> None:
    async with two_nodes(redis_server.url, limit=3) as (a, b), httpx.AsyncClient() as http:
        spread = [await http.post(f"{node}/register", json=BODY) for node in (a, b, a)]
        refused = await http.post(f"{b}/register", json=BODY)
        again_on_a = await http.post(f"{a}/register", json=BODY)
    assert [r.status_code for r in spread] == [201, 201, 201]
    assert refused.status_code == 429
    assert refused.json()["error"] == "temporarily_unavailable"
    assert refused.headers["cache-control"] == "no-store"
    # A burst of 3, then one registration every 3600 / 3 seconds.
    assert 1100 < int(refused.headers["retry-after"]) <= 1200
    assert again_on_a.status_code == 429


async def test_nodes_with_their_own_storage_count_apart(redis_server: RedisServer) -> None:
    # The contrast: without shared storage each node keeps its own budget.
    async with contextlib.AsyncExitStack() as stack, httpx.AsyncClient() as http:
        urls = []
        for _ in range(2):
            upstream = OIDCProvider(issuer="http://127.0.0.1:9", client_id="c", client_secret="s")
            stack.push_async_callback(upstream.aclose)
            proxy = OAuthProxy(upstream=upstream, base_url="http://127.0.0.1:8000",
                               registration_limit=(1, 3600.0))  # fmt: skip
            urls.append(await stack.enter_async_context(serve(proxy.app(), path="")))
        answers = [await http.post(f"{node}/register", json=BODY) for node in (*urls, *urls)]
    assert [r.status_code for r in answers] == [201, 201, 429, 429]
