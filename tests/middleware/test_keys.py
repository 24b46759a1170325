"""Key functions: what each returns on each era and transport, and the peer's address."""

from __future__ import annotations

from typing import Any

from mcpkit.middleware import ClientAddress, by_principal, by_session, by_tool, combined
from mcpkit.server.middleware import CallNext, MiddlewareContext
from mcpkit.testing import connect
from tests.middleware.conftest import ALICE, STATELESS, demo


async def keys_seen(**options: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def record(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if ctx.method == "tools/call":
            seen.update(
                principal=by_principal(ctx),
                session=by_session(ctx),
                tool=by_tool(ctx),
                both=combined(by_principal, by_tool)(ctx),
            )
        return await call_next(ctx)

    async with connect(demo(middleware=[record]), **options) as client:
        await client.call_tool("other", {})
    return seen


async def test_keys_on_the_handshake_era() -> None:
    seen = await keys_seen(auth_info=ALICE)
    assert seen["principal"] == "p:" + ALICE.principal
    assert seen["session"].startswith("c:")  # in memory: the connection
    assert seen["tool"] == "t:other"
    assert seen["both"] == f"p:{ALICE.principal}|t:other"


async def test_keys_on_the_stateless_era_without_a_token() -> None:
    seen = await keys_seen(**STATELESS)
    assert seen == {"principal": None, "session": None, "tool": "t:other", "both": None}


def test_the_client_address_is_the_peer_unless_a_trusted_proxy_forwarded() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError

    wrapper = ClientAddress(app, trusted_proxies=frozenset({"10.0.0.9", "10.0.0.8"}))

    def scope(peer: str | None, forwarded: str | None = None) -> dict[str, Any]:
        headers = [] if forwarded is None else [(b"x-forwarded-for", forwarded.encode())]
        return {
            "type": "http",
            "client": None if peer is None else (peer, 1234),
            "headers": headers,
        }

    assert wrapper.address_of(scope("1.2.3.4", "6.6.6.6")) == "1.2.3.4"  # untrusted peer
    assert wrapper.address_of(scope("10.0.0.9", "6.6.6.6, 1.2.3.4, 10.0.0.8")) == "1.2.3.4"
    assert wrapper.address_of(scope("10.0.0.9")) == "10.0.0.9"  # nothing forwarded
    assert wrapper.address_of(scope(None)) is None
