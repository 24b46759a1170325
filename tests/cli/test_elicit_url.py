"""``mcpkit call`` and URL-mode elicitation: show the URL and host, open it only on consent."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import pytest

from mcpkit.cli import elicit as elicit_module
from mcpkit.cli.elicit import Elicitor
from tests.cli.test_call import REPO, TIMEOUT, server

PARAMS = {"mode": "url", "message": "Link your bank", "url": "https://bank.example/connect?x=1"}


def elicitor(typed: str, *, interactive: bool = True) -> tuple[Elicitor, io.StringIO]:
    err = io.StringIO()
    return Elicitor(None, interactive=interactive, stdin=io.StringIO(typed), stderr=err), err


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    urls: list[str] = []

    def fake_open(url: str, *args: Any, **kwargs: Any) -> bool:
        urls.append(url)
        return True

    monkeypatch.setattr(elicit_module.webbrowser, "open", fake_open)
    return urls


async def test_consent_opens_the_url_and_accepts(opened: list[str]) -> None:
    ask, err = elicitor("y\n")
    assert await ask(PARAMS) == {"action": "accept"}
    assert opened == [PARAMS["url"]]
    shown = err.getvalue()
    assert "a page on bank.example: Link your bank" in shown
    assert PARAMS["url"] in shown and "Open it in your browser? [y/N]" in shown


async def test_no_consent_declines_without_opening(opened: list[str]) -> None:
    ask, _ = elicitor("n\n")
    assert await ask(PARAMS) == {"action": "decline"}
    assert opened == []


async def test_end_of_input_cancels(opened: list[str]) -> None:
    ask, _ = elicitor("")
    assert await ask(PARAMS) == {"action": "cancel"}
    assert opened == []


async def test_without_a_terminal_the_url_is_shown_and_declined(opened: list[str]) -> None:
    ask, err = elicitor("y\n", interactive=False)
    assert await ask(PARAMS) == {"action": "decline"}
    assert opened == []
    assert PARAMS["url"] in err.getvalue()
    assert "declined (stdin is not a terminal)" in err.getvalue()


async def test_no_browser_still_accepts_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elicit_module.webbrowser, "open", lambda url: False)
    ask, err = elicitor("yes\n")
    assert await ask(PARAMS) == {"action": "accept"}
    assert "open the URL yourself" in err.getvalue()


def test_mcpkit_call_declares_url_mode_and_shows_the_url_on_both_eras() -> None:
    for handshake in (True, False):
        proc = subprocess.run(
            [sys.executable, "-m", "mcpkit", "call", "link_bank", *server(handshake=handshake)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
        )
        assert (proc.returncode, proc.stdout) == (0, "link: decline\n"), proc.stderr
        assert proc.stderr.splitlines() == [
            "mcpkit: the server asks you to open a page on bank.example: Link your bank",
            "  https://bank.example/connect?x=1",
            "mcpkit: declined (stdin is not a terminal)",
        ]
