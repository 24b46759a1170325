"""Scope selection, offline_access, refresh, and step-up with its retry limit."""

from __future__ import annotations

import pytest

from mcpkit.auth.client import MemoryTokenStorage
from mcpkit.errors import AuthorizationFailed
from tests.auth.client.world import world


async def test_the_challenged_scope_wins_over_scopes_supported() -> None:
    async with world(challenge_scope="mcp:read", scopes_supported=("mcp:a", "mcp:b")) as w:
        async with w.client(w.oauth()) as client:
            await client.list_tools()
        assert w.auth_server.authorizations[0]["scope"] == "mcp:read"


async def test_scopes_supported_is_used_when_the_challenge_has_none() -> None:
    async with world(scopes_supported=("mcp:a", "mcp:b")) as w:
        async with w.client(w.oauth()) as client:
            await client.list_tools()
        assert w.auth_server.authorizations[0]["scope"] == "mcp:a mcp:b"


async def test_the_scope_is_left_out_when_nothing_names_one() -> None:
    async with world() as w:
        async with w.client(w.oauth()) as client:
            await client.list_tools()
        assert "scope" not in w.auth_server.authorizations[0]


@pytest.mark.parametrize("advertised", [True, False])
async def test_offline_access_is_asked_for_only_when_advertised(advertised: bool) -> None:
    scopes = ("mcp:basic", "offline_access") if advertised else ("mcp:basic",)
    async with world(scopes_supported=("mcp:basic",), as_options={"scopes_supported": scopes}) as w:
        async with w.client(w.oauth()) as client:
            await client.list_tools()
        requested = w.auth_server.authorizations[0]["scope"].split()
        assert ("offline_access" in requested) == advertised
        assert "mcp:basic" in requested


async def test_an_expiring_token_is_refreshed_before_the_request() -> None:
    storage = MemoryTokenStorage()
    # expires_in 5 s is inside the 30 s refresh margin: every request refreshes first.
    async with world(as_options={"expires_in": 5}) as w:
        async with w.client(w.oauth(storage=storage)) as client:
            await client.list_tools()
            first = await storage.load_tokens(w.url)
            await client.list_tools()
            second = await storage.load_tokens(w.url)
        grants = [r["grant_type"] for r in w.auth_server.token_requests]
        assert grants[0] == "authorization_code" and "refresh_token" in grants
        assert len(w.auth_server.authorizations) == 1
        assert w.auth_server.token_requests[-1]["resource"] == w.url
        assert first is not None and second is not None
        assert first.access_token != second.access_token
        assert w.auth_server.refusals == []


async def test_a_revoked_token_is_refreshed_on_401() -> None:
    storage = MemoryTokenStorage()
    async with world() as w:
        async with w.client(w.oauth(storage=storage)) as client:
            await client.list_tools()
            w.table.access.clear()  # the resource no longer accepts the token
            await client.list_tools()
        grants = [r["grant_type"] for r in w.auth_server.token_requests]
        assert grants == ["authorization_code", "refresh_token"]
        assert len(w.auth_server.authorizations) == 1


async def test_a_refused_refresh_falls_back_to_a_new_authorization() -> None:
    storage = MemoryTokenStorage()
    async with world() as w:
        async with w.client(w.oauth(storage=storage)) as client:
            await client.list_tools()
            w.table.access.clear()
            w.auth_server._refresh.clear()  # the refresh token is revoked too
            await client.list_tools()
        assert len(w.auth_server.authorizations) == 2
        assert w.auth_server.refusals == ["refresh: unknown refresh token"]


async def test_insufficient_scope_steps_up_keeping_the_scopes_granted_before() -> None:
    async with world(challenge_scope="mcp:read", tool_scopes={"write": {"mcp:write"}}) as w:
        async with w.client(w.oauth()) as client:
            await client.call_tool("echo", {"text": "a"})
            result = await client.call_tool("write", {"text": "b"})
        assert result["content"][0]["text"] == "wrote b"
        scopes = [set(a.get("scope", "").split()) for a in w.auth_server.authorizations]
        assert scopes == [{"mcp:read"}, {"mcp:read", "mcp:write"}]


async def test_step_up_stops_at_the_retry_limit() -> None:
    async with world(tool_scopes={"write": {"mcp:admin"}}) as w:
        # An authorization server that never grants mcp:admin: the 403 repeats.
        original = w.auth_server._authorize

        async def strip_admin(q: dict[str, str], send: object) -> None:
            q = {**q, "scope": " ".join(s for s in q.get("scope", "").split() if s != "mcp:admin")}
            await original(q, send)  # type: ignore[arg-type]

        w.auth_server._authorize = strip_admin  # type: ignore[method-assign]
        async with w.client(w.oauth(max_step_up=2)) as client:
            await client.list_tools()
            with pytest.raises(AuthorizationFailed) as caught:
                await client.call_tool("write", {"text": "b"})
        assert caught.value.error == "insufficient_scope"
        assert len(w.auth_server.authorizations) == 3  # the first, then two step-ups


async def test_explicit_scopes_are_asked_for_exactly() -> None:
    async with world(
        challenge_scope="mcp:read", as_options={"scopes_supported": ("mcp:x", "offline_access")}
    ) as w:
        async with w.client(w.oauth(scopes=["mcp:x"])) as client:
            await client.list_tools()
        assert w.auth_server.authorizations[0]["scope"] == "mcp:x"
