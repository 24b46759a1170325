"""The WWW-Authenticate challenge: what the server writes, the client reads back."""

from __future__ import annotations

from mcpkit.auth import AuthInfo, parse_www_authenticate, www_authenticate


def test_a_challenge_round_trips_with_quotes_and_scopes() -> None:
    header = www_authenticate(
        resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp",
        error="insufficient_scope",
        scopes=["mcp:read", "mcp:write"],
        description='needs "write"',
    )
    assert header.startswith("Bearer resource_metadata=")
    assert parse_www_authenticate(header) == {
        "resource_metadata": "https://mcp.example/.well-known/oauth-protected-resource/mcp",
        "error": "insufficient_scope",
        "scope": "mcp:read mcp:write",
        "error_description": 'needs "write"',
    }


def test_the_bearer_challenge_is_found_among_others_and_tokens_are_unquoted() -> None:
    value = 'Basic realm="files", Bearer error=invalid_token, scope="a b"'
    assert parse_www_authenticate(value) == {"error": "invalid_token", "scope": "a b"}
    assert parse_www_authenticate('Basic realm="files"') is None
    assert parse_www_authenticate("Bearer") == {}


def test_auth_info_hides_its_token_and_checks_scopes() -> None:
    info = AuthInfo(token="s3cret-token", subject="alice", scopes=frozenset({"mcp:read"}))
    assert "s3cret-token" not in repr(info)
    assert info.has_scopes(["mcp:read"]) and not info.has_scopes(["mcp:read", "mcp:write"])
    assert info.missing_scopes(["mcp:read", "mcp:write"]) == {"mcp:write"}
    assert not info.expired()
    assert AuthInfo(token="t", expires_at=100.0).expired(now=131.0, leeway=30.0)
    assert not AuthInfo(token="t", expires_at=100.0).expired(now=129.0, leeway=30.0)
