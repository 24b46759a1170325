"""StaticTokenVerifier: a development table of tokens."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from mcpkit.auth import AuthInfo, StaticTokenVerifier
from mcpkit.auth.static import StaticTokenEntry
from mcpkit.auth.verifier import TokenVerifier, as_verify_function
from mcpkit.errors import ConfigurationError, InvalidToken

TABLE: dict[str, StaticTokenEntry] = {
    "dev-alice": {"subject": "alice", "scopes": ["mcp:read", "mcp:write"], "client_id": "cli"},
    "dev-ci": ["mcp:read"],
    "dev-bob": AuthInfo(token="ignored", subject="bob", scopes=frozenset({"x"})),
}


async def test_known_tokens_map_to_their_auth_info() -> None:
    v = StaticTokenVerifier(TABLE, default_client_id="dev-client")
    alice = await v.verify("dev-alice")
    assert alice is not None
    assert (alice.token, alice.subject, alice.client_id) == ("dev-alice", "alice", "cli")
    assert alice.scopes == {"mcp:read", "mcp:write"}
    ci = await v.verify("dev-ci")
    assert ci is not None and ci.scopes == {"mcp:read"} and ci.client_id == "dev-client"
    bob = await v.verify("dev-bob")
    assert bob is not None and bob.token == "dev-bob" and bob.subject == "bob"


async def test_unknown_and_near_miss_tokens_are_refused() -> None:
    v = StaticTokenVerifier(TABLE)
    for token in ("", "dev", "dev-alic", "dev-alice ", "DEV-ALICE", "dev-alicex"):
        assert await v.verify(token) is None


async def test_expired_entry_is_refused() -> None:
    now = time.time()
    v = StaticTokenVerifier(
        {"old": {"subject": "o", "expires_at": now - 1}, "new": {"expires_at": now + 60}}
    )
    with pytest.raises(InvalidToken, match="expired") as info:
        await v.verify("old")
    assert "old" not in str(info.value)
    assert (await v.verify("new")) is not None


async def test_it_is_a_token_verifier_under_the_contract() -> None:
    v = StaticTokenVerifier(TABLE)
    assert isinstance(v, TokenVerifier)
    call = as_verify_function(v)
    info = await call("dev-alice", "https://mcp.example.com/mcp")
    assert info is not None and info.subject == "alice"
    assert await call("nope", "https://mcp.example.com/mcp") is None


def test_repr_never_shows_tokens() -> None:
    assert "dev-alice" not in repr(StaticTokenVerifier(TABLE))
    assert "dev-alice" not in repr(StaticTokenVerifier(TABLE)._table)  # digests only as keys


def test_configuration_mistakes_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown field"):
        StaticTokenVerifier({"t": {"user": "x"}})
    with pytest.raises(ConfigurationError, match="list"):
        StaticTokenVerifier({"t": "mcp:read"})
    with pytest.raises(ConfigurationError, match="non-empty"):
        StaticTokenVerifier({"": ["a"]})


def test_static_verifier_needs_no_optional_dependency() -> None:
    code = (
        "import sys; from mcpkit.auth import StaticTokenVerifier; "
        "print(sorted(m for m in ('httpx', 'joserfc', 'cryptography') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_subject_that_is_not_a_non_empty_string_is_a_configuration_error() -> None:
    for subject in (1, ["alice"], ""):
        with pytest.raises(ConfigurationError, match="subject must be a non-empty string"):
            StaticTokenVerifier({"t": {"subject": subject, "scopes": ["a"]}})
