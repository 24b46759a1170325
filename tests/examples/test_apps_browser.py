"""examples/apps_server.py in a real browser: the App SDK app, hosted by the package's AppBridge.

Headless Chromium (Debian's ``chromium``, driven by Playwright) opens a minimal
host page built from ``@modelcontextprotocol/ext-apps/app-bridge``
(``tests/examples/apps_host/host.js``). The host renders the HTML that
:func:`ui_for_tool` returned in a sandboxed iframe and relays the app's
``tools/call`` requests to the mcpkit server through an mcpkit ``Client``. The
test clicks the app's button and sees the call reach the server and its result
rendered in the app.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from playwright.async_api import async_playwright, expect

from mcpkit import MCPServer
from mcpkit.client import Client
from mcpkit.extensions.apps import ui_client_capabilities, ui_for_tool
from tests import ext_apps_sdk
from tests.examples.test_apps_server import example, sdk_bundle

__all__ = ["example", "sdk_bundle"]  # the fixtures, shared with the in-memory tests

HOST_JS = Path(__file__).resolve().parent / "apps_host" / "host.js"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def host_bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield ext_apps_sdk.build_host(tmp_path_factory.mktemp("apps-host"), HOST_JS)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_a_click_in_the_app_calls_the_tool_and_renders_its_result(
    example: ModuleType, host_bundle: str, version: str
) -> None:
    server: MCPServer = example.server
    calls: list[dict[str, Any]] = []
    async with (
        Client(
            server=server, protocol_version=version, capabilities=ui_client_capabilities()
        ) as client,
        async_playwright() as playwright,
    ):
        browser = await playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            page = await browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))

            async def call_tool(params: dict[str, Any]) -> dict[str, Any]:
                calls.append(params)  # what the app asked the host for
                return await client.call_tool(params["name"], params.get("arguments") or {})

            await page.expose_function("mcpkitCallTool", call_tool)
            await page.set_content("<!doctype html><html><body></body></html>")
            await page.add_script_tag(content=host_bundle, type="module")
            await page.wait_for_function("typeof window.openApp === 'function'")

            # The agent calls the tool; the host shows its app with the result.
            result = await client.call_tool("increment", {"by": 5})
            ui = await ui_for_tool(client, "increment")
            assert ui is not None
            await page.evaluate(
                "([html, input, result]) => window.openApp(html, input, result)",
                [ui.html, {"by": 5}, result],
            )
            app = page.frame_locator("iframe")
            await expect(app.locator("#status")).to_have_text("connected")
            await expect(app.locator("#count")).to_have_text("5")

            await app.locator("#increment").click()  # the user, in the app
            await expect(app.locator("#status")).to_have_text("incremented")
            await expect(app.locator("#count")).to_have_text("6")
            assert errors == []
        finally:
            await browser.close()
    assert [(c["name"], c.get("arguments")) for c in calls] == [("increment", {"by": 1})]
    assert example.state["count"] == 6  # the call reached the server
