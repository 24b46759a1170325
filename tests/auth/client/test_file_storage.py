"""The file token store: private to the user (0600 file, 0700 directory), atomic, reloadable,
shared by concurrent processes without losing entries, and damaged only where it is damaged."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from mcpkit.auth.client import ClientRegistration, FileTokenStorage, OAuthTokens
from mcpkit.auth.client.file_storage import default_token_path, parse_token_file
from mcpkit.errors import StoreUnavailable
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
    # No temporary file left; the lock file stays (removing it would race with a waiter).
    assert sorted(p.name for p in path.parent.iterdir()) == ["tokens.json", "tokens.json.lock"]
    assert mode(path.with_name("tokens.json.lock")) == 0o600
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


# -- concurrent processes ------------------------------------------------------------------

SAVER = """
import asyncio, sys, time
from mcpkit.auth.client import FileTokenStorage, OAuthTokens

path, name, start = sys.argv[1], sys.argv[2], float(sys.argv[3])

async def main():
    store = FileTokenStorage(path)
    while time.time() < start:  # both processes begin together
        await asyncio.sleep(0.001)
    for i in range(100):
        await store.save_tokens(f"https://{name}-{i}.example/mcp", OAuthTokens(access_token=f"{name}-{i}"))

asyncio.run(main())
"""


async def test_two_processes_saving_at_once_keep_every_token(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    start = str(time.time() + 0.5)
    procs = [
        await asyncio.create_subprocess_exec(sys.executable, "-c", SAVER, str(path), name, start)
        for name in ("a", "b")
    ]
    async with asyncio.timeout(60):
        codes = [await p.wait() for p in procs]
    assert codes == [0, 0]
    store = FileTokenStorage(path)
    kept = [
        name
        for name in ("a", "b")
        for i in range(100)
        if await store.load_tokens(f"https://{name}-{i}.example/mcp")
        == OAuthTokens(access_token=f"{name}-{i}")
    ]
    assert len(kept) == 200
    entries, damaged = parse_token_file(path.read_text())
    assert len(entries) == 200 and damaged == []


async def test_a_lock_held_too_long_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('locked', flush=True)\n"
        "time.sleep(30)\n",
        str(path) + ".lock",
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        async with asyncio.timeout(10):
            assert await holder.stdout.readline() == b"locked\n"
        store = FileTokenStorage(path, lock_timeout=0.3)
        started = time.monotonic()
        with pytest.raises(StoreUnavailable) as caught:
            await store.save_tokens("https://h/mcp", OAuthTokens(access_token="t"))
        assert time.monotonic() - started < 3
        assert str(path) in str(caught.value) and "locked" in str(caught.value)
    finally:
        holder.kill()
        await holder.wait()
    await store.save_tokens("https://h/mcp", OAuthTokens(access_token="t"))  # free again
    assert await store.load_tokens("https://h/mcp") == OAuthTokens(access_token="t")


# -- damage stays local --------------------------------------------------------------------

SERVERS = [f"https://s{i}.example/mcp" for i in range(4)]


async def filled(path: Path) -> FileTokenStorage:
    store = FileTokenStorage(path)
    for i, server in enumerate(SERVERS):
        await store.save_tokens(server, OAuthTokens(access_token=f"AT-{i}", refresh_token="RT"))
    return store


async def loaded(store: FileTokenStorage) -> list[str | None]:
    return [
        tokens.access_token if (tokens := await store.load_tokens(s)) else None for s in SERVERS
    ]


async def test_a_truncated_file_loses_only_the_entry_it_cuts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tokens.json"
    await filled(path)
    text = path.read_text()
    path.write_text(text[: text.index(SERVERS[-1]) + 40])  # cut inside the last entry
    caplog.set_level(logging.WARNING, logger="mcpkit.auth.client")
    store = FileTokenStorage(path)
    assert await loaded(store) == ["AT-0", "AT-1", "AT-2", None]
    assert "damaged" in caplog.text
    assert "AT-" not in caplog.text and "RT" not in caplog.text  # positions, never content
    await store.save_tokens("https://new.example/mcp", OAuthTokens(access_token="AT-new"))
    assert await loaded(store) == ["AT-0", "AT-1", "AT-2", None]
    assert (await store.load_tokens("https://new.example/mcp")) is not None
    assert parse_token_file(path.read_text())[1] == []  # the save rewrote it whole


async def test_a_damaged_line_loses_only_its_entry(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tokens.json"
    await filled(path)
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:30] + "\x00garbage" + lines[2][60:]  # the second server's line
    path.write_text("".join(lines))
    caplog.set_level(logging.WARNING, logger="mcpkit.auth.client")
    store = FileTokenStorage(path)
    assert await loaded(store) == ["AT-0", None, "AT-2", "AT-3"]
    assert "line 3" in caplog.text
    await store.save_tokens(SERVERS[1], OAuthTokens(access_token="AT-1b"))
    assert await loaded(store) == ["AT-0", "AT-1b", "AT-2", "AT-3"]


async def test_an_entry_missing_its_access_token_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tokens.json"
    store = await filled(path)
    entries, _ = parse_token_file(path.read_text())
    del entries[SERVERS[0]]["tokens"]["access_token"]
    lines = ['{"mcpkit_oauth_tokens": 2}']
    lines += [json.dumps({"server": k, **v}) for k, v in entries.items()]
    path.write_text("\n".join(lines) + "\n")
    caplog.set_level(logging.WARNING, logger="mcpkit.auth.client")
    assert await loaded(store) == [None, "AT-1", "AT-2", "AT-3"]
    assert "unusable tokens" in caplog.text


def version_1(entries: dict[str, dict[str, object]]) -> str:
    """The single JSON object earlier versions wrote."""
    return json.dumps(entries, indent=1, sort_keys=True)


async def test_the_earlier_single_object_format_is_read_and_rewritten_as_lines(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(
        version_1(
            {
                s: {"tokens": OAuthTokens(access_token=f"AT-{i}").to_json()}
                for i, s in enumerate(SERVERS)
            }
        )
    )
    store = FileTokenStorage(path)
    assert await loaded(store) == ["AT-0", "AT-1", "AT-2", "AT-3"]
    await store.save_registration(SERVERS[0], ClientRegistration(client_id="c"))
    assert path.read_text().startswith('{"mcpkit_oauth_tokens": 2}\n')
    assert await loaded(store) == ["AT-0", "AT-1", "AT-2", "AT-3"]
    assert await store.load_registration(SERVERS[0]) == ClientRegistration(client_id="c")


async def test_a_truncated_earlier_format_file_keeps_the_entries_before_the_cut(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tokens.json"
    text = version_1(
        {
            s: {"tokens": OAuthTokens(access_token=f"AT-{i}").to_json()}
            for i, s in enumerate(SERVERS)
        }
    )
    path.write_text(text[: text.index(SERVERS[2]) + 50])
    caplog.set_level(logging.WARNING, logger="mcpkit.auth.client")
    store = FileTokenStorage(path)
    assert await loaded(store) == ["AT-0", "AT-1", None, None]
    assert "damaged" in caplog.text
    await store.save_tokens(SERVERS[3], OAuthTokens(access_token="AT-3b"))
    assert await loaded(store) == ["AT-0", "AT-1", None, "AT-3b"]


@pytest.mark.parametrize(
    "text",
    ["", "\n", "garbage", "[1, 2]", '{"mcpkit_oauth_tokens": 2}', '{"mcpkit_oa', "\x00" * 64],
)
def test_any_text_parses_without_an_exception(text: str) -> None:
    entries, _ = parse_token_file(text)
    assert entries == {}
