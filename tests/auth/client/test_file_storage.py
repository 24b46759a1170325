"""The file token store: private to the user (0600 file, 0700 directory), atomic, reloadable."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mcpkit.auth.client import ClientRegistration, FileTokenStorage, OAuthTokens
from mcpkit.auth.client.file_storage import default_token_path
from tests.auth.client.world import world


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_tokens_and_registrations_survive_a_new_store_and_stay_private(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cfg" / "mcpkit" / "tokens.json"
    store = FileTokenStorage(path)
    tokens = OAuthTokens(access_token="AT-secret", refresh_token="RT-secret", expires_at=5.0)
    registration = ClientRegistration(client_id="c", client_secret="CS-secret", issuer="https://as")
    old_umask = os.umask(0o022)  # a permissive umask must not leak into the file's mode
    try:
        await store.save_tokens("https://h/mcp", tokens)
        await store.save_registration("https://h/mcp", registration)
    finally:
        os.umask(old_umask)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    again = FileTokenStorage(path)
    assert await again.load_tokens("https://h/mcp") == tokens
    assert await again.load_registration("https://h/mcp") == registration
    assert await again.load_tokens("https://other/mcp") is None
    assert [p.name for p in path.parent.iterdir()] == ["tokens.json"]  # no temporary left
    for secret in ("AT-secret", "RT-secret", "CS-secret"):
        assert secret not in repr(tokens) + repr(registration) + repr(again)
    await again.clear("https://h/mcp")
    assert await again.load_tokens("https://h/mcp") is None
    assert mode(path) == 0o600


async def test_the_default_path_is_under_the_users_config_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_token_path() == tmp_path / "mcpkit" / "oauth-tokens.json"


async def test_a_client_with_a_file_store_authorizes_once_across_runs(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    async with world() as w:
        for _ in range(2):
            async with w.client(w.oauth(storage=FileTokenStorage(path))) as client:
                await client.list_tools()
        assert len(w.auth_server.authorizations) == 1
        assert mode(path) == 0o600
