"""examples/apps_server.py: the counter app, in memory on both eras and over stdio."""

from __future__ import annotations

import base64
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from mcpkit import MCPServer
from mcpkit.client import Client
from mcpkit.extensions.apps import EXTENSION_ID, MIME_TYPE, ui_for_tool
from tests import ext_apps_sdk
from tests.examples.fresh import fresh_example

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "apps_server.py"
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def sdk_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The App SDK's browser bundle, from the npm package installed for this test."""
    package = ext_apps_sdk.install(tmp_path_factory.mktemp("ext-apps"))
    return package / "dist" / "src" / "app-with-deps.js"


@pytest.fixture
def example(sdk_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """A fresh copy of the example (its counter keeps state), told where the SDK is."""
    monkeypatch.setenv("MCPKIT_EXT_APPS_SDK", str(sdk_bundle))
    with fresh_example(EXAMPLE) as module:
        yield module


def inlined_sdk(html: str) -> bytes:
    """The module the page's import map gives for the SDK's bare specifier."""
    found = re.search(r'<script type="importmap">(.*?)</script>', html)
    assert found is not None
    url = json.loads(found.group(1))["imports"]["@modelcontextprotocol/ext-apps"]
    return base64.b64decode(url.removeprefix("data:text/javascript;base64,"))


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_the_counter_app_on_both_eras(
    example: ModuleType, sdk_bundle: Path, version: str
) -> None:
    server: MCPServer = example.server
    async with Client(server=server, protocol_version=version) as client:
        assert EXTENSION_ID in client.server_capabilities["extensions"]
        ui = await ui_for_tool(client, "increment")
        app_only = await ui_for_tool(client, "get_count")
        result = await client.call_tool("increment", {"by": 3})
        count = await client.call_tool("get_count", {})
    assert ui is not None and app_only is not None
    assert ui.resource_uri == app_only.resource_uri == "ui://counter/app.html"
    assert ui.mime_type == MIME_TYPE and ui.meta.prefers_border is True
    assert ui.visibility == ("model", "app") and app_only.visibility == ("app",)
    # The page is the example's HTML with the package's own bundle inlined, byte for byte.
    assert inlined_sdk(ui.html) == sdk_bundle.read_bytes()
    assert 'import { App } from "@modelcontextprotocol/ext-apps"' in ui.html
    assert 'id="increment"' in ui.html
    assert result["structuredContent"] == {"count": 3}
    assert json.loads(result["content"][0]["text"]) == {"count": 3}  # for hosts without apps
    assert count["structuredContent"] == {"count": 3}


def test_without_the_sdk_reading_the_app_says_how_to_install_it(
    example: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("MCPKIT_EXT_APPS_SDK")
    monkeypatch.setattr(example, "HERE", tmp_path)  # no examples/apps/node_modules
    monkeypatch.chdir(tmp_path)  # and none above the working directory
    with pytest.raises(FileNotFoundError, match="npm install --prefix"):
        example.sdk_bundle()


async def test_run_with_one_command_over_stdio(sdk_bundle: Path) -> None:
    """``mcpkit run examples/apps_server.py``, driven by mcpkit's own client."""
    async with Client(
        command=sys.executable,
        args=["-m", "mcpkit", "run", str(EXAMPLE)],
        cwd=REPO,
        env={**os.environ, "MCPKIT_EXT_APPS_SDK": str(sdk_bundle)},
        timeout=TIMEOUT,
    ) as client:
        assert client.server_capabilities["extensions"][EXTENSION_ID] == {}
        ui = await ui_for_tool(client, "increment")
        assert ui is not None and inlined_sdk(ui.html) == sdk_bundle.read_bytes()
        result = await client.call_tool("increment", {})
        assert result["structuredContent"] == {"count": 1}
