"""examples/oauth_proxy_server.py run the way a user runs it (``mcpkit run ... -t http``),
with oidc-provider (npm) as the OpenID provider and mcpkit's OAuth client signing in."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpkit.auth.client import OAuth
from mcpkit.client import Client
from tests.auth.server.browser import FormBrowser
from tests.auth.server.upstream import Upstream, running
from tests.client.http_servers import unused_port
from tests.interop.fixtures.peers import stop_group

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "oauth_proxy_server.py"


def _wait_listening(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mcpkit run exited: {log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("mcpkit run did not listen")


@pytest.fixture(scope="module")
def example_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Upstream]]:
    port = unused_port()
    base = f"http://127.0.0.1:{port}"
    logs = tmp_path_factory.mktemp("oauth-proxy-example")
    with running(f"{base}/auth/callback", logs / "oidc.log") as up:
        env = dict(
            os.environ,
            MCPKIT_OIDC_ISSUER=up.issuer,
            MCPKIT_OIDC_CLIENT_ID=up.client_id,
            MCPKIT_OIDC_CLIENT_SECRET=up.client_secret,
            MCPKIT_PUBLIC_URL=base,
        )
        log = logs / "mcpkit.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "mcpkit", "run", str(EXAMPLE), "-t", "http",
                 "--port", str(port)],
                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        try:
            _wait_listening(proc, port, log)
            yield f"{base}/mcp", up
        finally:
            stop_group(proc)


async def test_a_user_signs_in_upstream_and_uses_the_tools(
    example_url: tuple[str, Upstream],
) -> None:
    url, _ = example_url
    browser = FormBrowser(login="bob")
    try:
        auth = OAuth(authorizer=browser, client_name="Example Agent")
        async with Client(url=url, auth=auth, timeout=10.0) as client:
            who = await client.call_tool("whoami", {})
            count = await client.call_tool("add_note", {"text": "hello"})
    finally:
        await browser.aclose()
    assert who["structuredContent"] == {"subject": "bob", "email": "bob@example.com"}
    assert count["content"][0]["text"] == "1"
    assert "Example Agent" in browser.pages[0].text


def test_missing_settings_are_named(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPKIT_OIDC")}
    done = subprocess.run(
        [sys.executable, "-m", "mcpkit", "run", str(EXAMPLE), "-t", "http", "--port", "0"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "MCPKIT_OIDC_ISSUER" in done.stderr
