"""OAuth from server definitions (code and config files) and from ``mcpkit tools --auth oauth``."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from mcpkit.auth.client import FileTokenStorage, MemoryTokenStorage, OAuth
from mcpkit.client import MCPClient
from mcpkit.client.config import load_config
from mcpkit.errors import ConfigurationError
from tests.auth.client.world import world

REPO = Path(__file__).resolve().parents[3]
BROWSER = "import sys, httpx\nhttpx.get(sys.argv[1], follow_redirects=True, timeout=10)\n"


def test_a_config_file_auth_key_builds_an_oauth_flow(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "plain": {"url": "https://a.example/mcp", "auth": "oauth"},
                    "custom": {
                        "type": "http",
                        "url": "https://b.example/mcp",
                        "auth": {
                            "type": "oauth",
                            "scopes": ["mcp:read"],
                            "client_id": "app",
                            "client_secret_env": "APP_SECRET",
                            "storage": "file",
                            "token_file": str(tmp_path / "t.json"),
                            "redirect_port": 0,
                            "open_browser": False,
                        },
                    },
                }
            }
        )
    )
    os.environ["APP_SECRET"] = "from-env"
    try:
        servers = load_config(config)
    finally:
        del os.environ["APP_SECRET"]
    plain, custom = servers["plain"].auth, servers["custom"].auth
    assert isinstance(plain, OAuth) and isinstance(custom, OAuth)
    assert isinstance(plain.storage, FileTokenStorage)
    assert custom.scopes == "mcp:read" and custom.client_id == "app"
    assert isinstance(custom.storage, FileTokenStorage)
    assert custom.storage.path == tmp_path / "t.json"
    assert "from-env" not in repr(custom)


@pytest.mark.parametrize(
    ("auth", "problem"),
    [
        ({"type": "oauth", "scope": ["x"]}, "unknown setting"),
        ({"type": "basic"}, "unknown type"),
        ("bearer", "must be 'oauth'"),
        ({"storage": "cloud"}, "'storage'"),
    ],
)
def test_a_bad_auth_setting_is_refused_with_the_servers_name(auth: object, problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem) as caught:
        load_config({"mcpServers": {"s": {"url": "https://a/mcp", "auth": auth}}})
    assert "'s'" in str(caught.value)


def test_auth_needs_a_url() -> None:
    with pytest.raises(ConfigurationError, match="need 'url'"):
        load_config({"mcpServers": {"s": {"command": "x", "auth": "oauth"}}})


async def test_an_mcp_client_server_definition_with_auth_connects() -> None:
    async with world() as w:
        auth = w.oauth(storage=MemoryTokenStorage())
        async with MCPClient(servers={"p": {"url": w.url, "auth": auth}}) as mcp:
            tools = await mcp.get_tools()
        assert set(tools) == {"p_echo", "p_write"}
        assert len(w.auth_server.token_requests) == 1


async def test_the_cli_authorizes_in_the_browser_and_keeps_the_token_private(
    tmp_path: Path,
) -> None:
    browser = tmp_path / "browser.py"
    browser.write_text(BROWSER)
    env = {
        **os.environ,
        "BROWSER": f"{sys.executable} {browser} %s",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p
        ),
    }

    async def tools(url: str) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "mcpkit", "tools", "--url", url, "--auth", "oauth",
            "--auth-scope", "mcp:read", "--json",
            env=env, cwd=REPO, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    async with world() as w:
        status, out, err = await tools(w.url)
        assert status == 0, err
        assert "echo" in out and "write" in out
        assert w.auth_server.authorizations[0]["scope"] == "mcp:read"
        token_file = tmp_path / "config" / "mcpkit" / "oauth-tokens.json"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        access = next(iter(w.table.access))
        assert access not in out + err
        status, out, err = await tools(w.url)  # the stored token is reused
        assert status == 0, err
        assert len(w.auth_server.authorizations) == 1


def test_auth_on_the_command_line_needs_url() -> None:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "mcpkit", "tools", "--stdio", "x", "--auth", "oauth"],
        capture_output=True, text=True, timeout=30, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--auth only applies with --url" in proc.stderr
