"""An ``OAuthProxy`` served in process (httpx's ASGI transport), for endpoint tests that
never reach the identity provider (it is only contacted once a user approves)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from mcpkit.auth.server import OAuthProxy, OIDCProvider

BASE = "http://127.0.0.1:8000"


def make_proxy(**options: Any) -> OAuthProxy:
    upstream = OIDCProvider(
        issuer="http://127.0.0.1:9", client_id="mcpkit", client_secret="secret", name="Example SSO"
    )
    return OAuthProxy(upstream=upstream, base_url=BASE, **options)


@contextlib.asynccontextmanager
async def client_of(proxy: OAuthProxy) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=proxy.app())
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
        yield http
