"""The consent page in headless Chromium (Debian's ``chromium``, driven by Playwright).

It renders (a screenshot of real size, not a blank page), names the client and the
scopes, loads nothing from elsewhere, refuses to be framed, and its Deny button,
clicked in the browser (the CSRF cookie travelling as a browser sends it), takes the
user back to the client with ``access_denied``.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
from playwright.async_api import Route, async_playwright, expect

from tests.auth.server.asgi_support import make_proxy
from tests.client.http_servers import free_socket, serve

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REDIRECT = "http://127.0.0.1:33418/callback"
CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def test_consent_page_renders_in_chromium_and_deny_goes_back(tmp_path: Path) -> None:
    proxy = make_proxy(scopes_supported=["mcp:tools", "notes:read"])
    async with serve(proxy.app(), free_socket(), path="") as base:
        async with httpx.AsyncClient() as http:
            registered = await http.post(f"{base}/register", json={
                "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
                "client_name": "Claude Test Client"})  # fmt: skip
        client_id = registered.json()["client_id"]
        url = f"{base}/authorize?" + urlencode({
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
            "code_challenge": CHALLENGE, "code_challenge_method": "S256", "state": "st",
            "scope": "mcp:tools notes:read"})  # fmt: skip
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM)
            try:
                page = await browser.new_page()
                loads: list[str] = []
                page.on("request", lambda request: loads.append(request.url))
                back: list[str] = []

                async def at_client(route: Route) -> None:
                    back.append(route.request.url)
                    await route.fulfill(status=200, body="back at the client")

                await page.route(f"{REDIRECT}*", at_client)
                await page.goto(url)
                await expect(page).to_have_title("Authorize Claude Test Client")
                text = await page.inner_text("main")
                assert "Claude Test Client" in text and "Example SSO" in text
                assert "mcp:tools" in text and "notes:read" in text
                await expect(page.get_by_role("button", name="Approve")).to_be_visible()
                shot = await page.screenshot(path=str(tmp_path / "consent.png"), full_page=True)
                width, height = png_size(shot)
                assert width >= 600 and height >= 300
                assert len(shot) > 8_000  # a blank page compresses to far less
                assert loads == [url]  # nothing but the page itself: no external assets

                # Framed by another origin, the page does not load (frame-ancestors 'none').
                framer = await browser.new_page()
                await framer.set_content(f'<iframe src="{url}" width=500 height=500></iframe>')
                await framer.wait_for_timeout(300)
                frame = framer.frames[1]
                assert "Claude Test Client" not in await frame.content()

                await page.get_by_role("button", name="Deny").click()
                await page.wait_for_url(f"{REDIRECT}*")
            finally:
                await browser.close()
    assert len(back) == 1
    answer = parse_qs(urlsplit(back[0]).query)
    assert answer["error"] == ["access_denied"] and answer["state"] == ["st"]
