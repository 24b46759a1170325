"""The loopback redirect receiver: a real browser stand-in delivers the redirect."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx
import pytest

from mcpkit.auth.client import LoopbackAuthorizer
from tests.auth.client.world import world

# A "browser" for webbrowser.open: follows the authorization URL and its redirect to
# the loopback receiver, as a person's browser would after consent.
BROWSER = """
import sys, httpx
httpx.get(sys.argv[1], follow_redirects=True, timeout=10)
"""


async def test_the_url_is_printed_when_no_browser_opens_and_the_redirect_is_received() -> None:
    shown: list[str] = []

    def announce(url: str) -> None:
        shown.append(url)
        # The user opens it by hand: here, a request that follows the redirects.
        asyncio.get_running_loop().create_task(httpx.AsyncClient(follow_redirects=True).get(url))

    authorizer = LoopbackAuthorizer(open_browser=False, announce=announce)
    assert authorizer.redirect_uri.startswith("http://127.0.0.1:")
    async with world() as w:
        async with w.client(w.oauth(authorizer=authorizer)) as client:
            await client.list_tools()
        assert len(shown) == 1 and shown[0].startswith(w.auth_server.issuer + "/authorize?")
        (authorize,) = w.auth_server.authorizations
        assert authorize["redirect_uri"] == authorizer.redirect_uri
        assert w.auth_server.token_requests[0]["redirect_uri"] == authorizer.redirect_uri


async def test_the_browser_is_opened_with_the_authorization_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "browser.py"
    script.write_text(BROWSER)
    monkeypatch.setenv("BROWSER", f"{sys.executable} {script} %s")
    import webbrowser

    monkeypatch.setattr(webbrowser, "_tryorder", None)  # re-read $BROWSER
    monkeypatch.setattr(webbrowser, "_browsers", {})
    printed: list[str] = []
    authorizer = LoopbackAuthorizer(announce=printed.append, timeout=20)
    async with world() as w:
        async with w.client(w.oauth(authorizer=authorizer)) as client:
            await client.list_tools()
        assert printed == []  # the browser took it
        assert len(w.auth_server.token_requests) == 1


async def test_no_answer_in_time_is_an_authorization_failure() -> None:
    from mcpkit.errors import AuthorizationFailed

    authorizer = LoopbackAuthorizer(open_browser=False, announce=lambda url: None, timeout=0.3)
    async with world() as w:
        with pytest.raises(AuthorizationFailed) as caught:
            async with w.client(w.oauth(authorizer=authorizer)) as client:
                await client.list_tools()
        assert caught.value.error == "authorization_timeout"
