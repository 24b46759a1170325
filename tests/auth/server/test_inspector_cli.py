"""The MCP Inspector's CLI signs in through the authorization server and calls a tool.

The real Inspector (npm ``@modelcontextprotocol/inspector``, started with npx on Node 22
as ``mcpkit dev`` does; 2.12.0 when this was written) in ``--cli`` mode against
``OAuthProxy`` in front of oidc-provider: it discovers the server from the 401, registers
(RFC 7591), prints the authorization URL and waits on its loopback callback. The test is
the user at the browser (:class:`FormBrowser`: mcpkit's consent page, the provider's
login), and the call's result names the user the provider signed in.

Its stderr is a pseudo-terminal: the CLI asks for a TTY before an interactive sign-in,
and with ``MCP_AUTO_OPEN_ENABLED=false`` it prints the URL without opening a browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pty
import re
import signal
from pathlib import Path

import httpx

from mcpkit import Context, MCPServer
from mcpkit.auth.server import OAuthProxy, OIDCProvider
from mcpkit.cli.dev import INSPECTOR
from tests.auth.server.browser import FormBrowser
from tests.auth.server.upstream import Upstream
from tests.client.http_servers import free_socket, serve, unused_port
from tests.interop.fixtures.peers import _conformance_runner

# The first npx run downloads the Inspector (~1 min on a slow link); later ones take ~15 s.
TIMEOUT_S = 240.0
_URL = re.compile(rb"Please navigate to: (\S+)")


def _read(terminal: int) -> bytes:
    try:
        return os.read(terminal, 4096)
    except OSError:  # EIO: the other end closed (the CLI exited)
        return b""


async def _prompted_url(terminal: int, seen: bytearray) -> str:
    """The authorization URL the CLI prints on its terminal."""
    loop = asyncio.get_running_loop()
    while (found := _URL.search(seen)) is None or not seen[found.end() :].strip(b" ").startswith(
        (b"\r", b"\n")
    ):
        chunk = await loop.run_in_executor(None, _read, terminal)
        if not chunk:
            raise AssertionError(f"the Inspector printed no URL: {bytes(seen)!r}")
        seen += chunk
    return found.group(1).decode()


async def test_the_inspector_cli_signs_in_and_its_tool_call_shows_the_user(
    upstream: tuple[Upstream, int], tmp_path: Path
) -> None:
    up, port = upstream
    base = f"http://127.0.0.1:{port}"
    provider = OIDCProvider(issuer=up.issuer, client_id=up.client_id,
                            client_secret=up.client_secret)  # fmt: skip
    proxy = OAuthProxy(upstream=provider, base_url=base)
    server = MCPServer(name="who", version="1")

    @server.tool
    def whoami(ctx: Context) -> str:
        """Who is calling."""
        auth = ctx.auth
        return "nobody" if auth is None else f"{auth.subject} <{auth.claims.get('email')}>"

    callback = f"http://127.0.0.1:{unused_port()}/oauth/callback"
    node_bin = Path(str(_conformance_runner().install().node)).parent
    env = {
        **os.environ,
        "PATH": f"{node_bin}{os.pathsep}{os.environ['PATH']}",
        "MCP_AUTO_OPEN_ENABLED": "false",  # print the URL, open no browser
        "NO_COLOR": "1",  # the URL as plain text, not an OSC 8 hyperlink
        "MCP_STORAGE_DIR": str(tmp_path / "storage"),  # no registration from an earlier run
        "MCP_CATALOG_PATH": str(tmp_path / "mcp.json"),
        "MCP_CLIENT_CONFIG_PATH": str(tmp_path / "client.json"),
        "MCP_INSPECTOR_SECRET_STORE": "memory",
    }
    terminal, their_end = pty.openpty()
    browser = FormBrowser(callback, login="alice")
    app = server.http_app(auth=proxy.protected_resource())
    process: asyncio.subprocess.Process | None = None
    seen = bytearray()
    try:
        async with serve(app, free_socket(port)) as url, asyncio.timeout(TIMEOUT_S):
            process = await asyncio.create_subprocess_exec(
                "npx", "-y", INSPECTOR, "--cli", url, "--method", "tools/call",
                "--tool-name", "whoami", "--callback-url", callback, "--format", "json",
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=their_end, env=env, cwd=tmp_path, start_new_session=True,
            )  # fmt: skip
            os.close(their_end)
            their_end = -1
            authorize = await _prompted_url(terminal, seen)
            assert authorize.startswith(f"{base}/authorize?")
            back = await browser.authorize(authorize)  # consent here, login upstream
            async with httpx.AsyncClient() as http:
                done = await http.get(back)  # the browser lands on the CLI's callback
            assert done.status_code == 200
            out, _ = await process.communicate()
    finally:
        await browser.aclose()
        await provider.aclose()
        if their_end >= 0:
            os.close(their_end)
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        os.close(terminal)
    assert process.returncode == 0, bytes(seen).decode(errors="replace")
    result = json.loads(out)["result"]
    assert result["content"][0]["text"] == "alice <alice@example.com>"
    # It registered itself (RFC 7591) and the user saw mcpkit's consent page for it.
    assert browser.pages[0].url.startswith(f"{base}/authorize?")
