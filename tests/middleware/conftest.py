"""Fixtures of the middleware tests: a server with a few components, Redis stores per test.

The real-socket HTTP fixtures of the transport tests are available here too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any
from uuid import uuid4

import pytest

from mcpkit import MCPServer
from mcpkit.auth import AuthInfo
from mcpkit.stores.redis import RedisStore
from tests.redis_server import RedisServer
from tests.transports.conftest import http, serve_app  # noqa: F401 (fixtures)

STATELESS: dict[str, Any] = {"protocol_version": "2026-07-28", "initialize": False}
ALICE = AuthInfo(token="t-alice", subject="alice", client_id="ui", issuer="https://idp")
BOB = AuthInfo(token="t-bob", subject="bob", client_id="ui", issuer="https://idp")


def demo(**options: Any) -> MCPServer:
    """Two tools, a prompt, a resource; ``server.reads`` counts the resource's reads."""
    server = MCPServer(name="mw", version="1", **options)
    reads: list[str] = []
    server.reads = reads  # type: ignore[attr-defined]

    @server.tool
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @server.tool
    async def other() -> str:
        """Another tool."""
        return "other"

    @server.prompt
    def greet(name: str) -> str:
        """A greeting."""
        return f"Hello {name}"

    @server.resource("demo://readme")
    def readme() -> str:
        reads.append("readme")
        return f"read {len(reads)}"

    return server


@pytest.fixture
async def redis_stores(redis_server: RedisServer) -> AsyncIterator[Callable[[], RedisStore]]:
    """``make()`` → a RedisStore on the run's Redis under this test's prefix: stores made
    by one test are the nodes of one cluster."""
    prefix = f"mw-{uuid4().hex}:"
    made: list[RedisStore] = []

    def make() -> RedisStore:
        store = RedisStore(redis_server.url, prefix=prefix)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()
