"""mcpkit.extensions.apps.client: a tool's app as a host gets it, from Client and MCPClient."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mcpkit import Context, MCPServer
from mcpkit.client import Client, MCPClient
from mcpkit.extensions.apps import (
    EXTENSION_ID,
    LEGACY_RESOURCE_URI_KEY,
    MIME_TYPE,
    AppUi,
    Csp,
    Permissions,
    UiResource,
    add_apps,
    client_renders_apps,
    ui_capability,
    ui_client_capabilities,
    ui_for_tool,
    ui_tool_meta,
)

URI = "ui://demo/app.html"
HTML = "<!doctype html><p>demo</p>"


def demo_server() -> MCPServer:
    server = MCPServer(name="apps-client-test", version="1.0.0")
    server.tool(name="show", meta=ui_tool_meta(URI, visibility=["app"]))(lambda: "shown")
    server.tool(name="plain")(lambda: "no ui")
    add_apps(
        server,
        [
            UiResource(
                uri=URI,
                html=HTML,
                csp=Csp(resource_domains=("https://cdn.example.com",)),
                permissions=Permissions(camera=True, microphone=True),
                domain="demo.example.com",
                prefers_border=True,
            )
        ],
    )
    return server


def expect_demo(ui: AppUi | None) -> None:
    assert ui is not None
    assert (ui.tool_name, ui.resource_uri, ui.html, ui.mime_type) == ("show", URI, HTML, MIME_TYPE)
    assert ui.visibility == ("app",)
    assert ui.meta.csp == Csp(resource_domains=("https://cdn.example.com",))
    assert ui.meta.permissions == Permissions(camera=True, microphone=True)
    assert ui.meta.domain == "demo.example.com" and ui.meta.prefers_border is True
    assert ui.tool["_meta"]["ui"]["resourceUri"] == URI


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_a_client_gets_the_tools_app_and_metadata(version: str) -> None:
    async with Client(server=demo_server(), protocol_version=version) as client:
        expect_demo(await ui_for_tool(client, "show"))
        assert await ui_for_tool(client, "plain") is None
        with pytest.raises(LookupError, match="no tool 'nope'"):
            await ui_for_tool(client, "nope")


async def test_an_mcp_client_finds_the_server_with_the_tool() -> None:
    other = MCPServer(name="other", version="1.0.0")
    other.tool(name="unrelated")(lambda: "x")
    async with MCPClient(
        servers={"other": {"server": other}, "demo": {"server": demo_server()}}
    ) as mcp:
        expect_demo(await ui_for_tool(mcp, "show"))
        expect_demo(await ui_for_tool(mcp, "show", server="demo"))
        with pytest.raises(LookupError):
            await ui_for_tool(mcp, "show", server="other")


async def test_listing_metadata_applies_when_the_contents_carry_none() -> None:
    """A server that puts ``_meta.ui`` on the listing only, and the legacy flat key."""
    server = MCPServer(name="legacy", version="1.0.0")
    server.tool(name="old", meta={LEGACY_RESOURCE_URI_KEY: URI})(lambda: "x")
    blob = base64.b64encode(HTML.encode()).decode()
    server.resource(URI, mime_type=MIME_TYPE, meta={"ui": {"prefersBorder": False}})(
        lambda: {"blob": blob, "mimeType": MIME_TYPE}
    )
    async with Client(server=server) as client:
        ui = await ui_for_tool(client, "old")
    assert ui is not None and ui.html == HTML and ui.meta.prefers_border is False
    assert ui.visibility == ("model", "app")  # the extension's default


async def test_a_resource_that_is_not_an_app_is_refused() -> None:
    server = MCPServer(name="not-an-app", version="1.0.0")
    server.tool(name="t", meta=ui_tool_meta(URI))(lambda: "x")
    server.resource(URI, mime_type="text/html")(lambda: HTML)
    async with Client(server=server) as client:
        with pytest.raises(LookupError, match="no content of type"):
            await ui_for_tool(client, "t")


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_a_host_declares_it_renders_apps_and_the_tool_sees_it(
    version: str, ui_schema: dict[str, Any]
) -> None:
    server = MCPServer(name="degrading", version="1.0.0")

    @server.tool(meta=ui_tool_meta(URI))
    def forecast(ctx: Context) -> str:
        return "see the app" if client_renders_apps(ctx) else "sunny, 21 °C"

    add_apps(server, [UiResource(uri=URI, html=HTML)])
    declared = ui_client_capabilities()
    Draft202012Validator(
        {"$ref": "#/$defs/McpUiClientCapabilities", "$defs": ui_schema["$defs"]}
    ).validate(declared["extensions"][EXTENSION_ID])
    async with Client(server=server, protocol_version=version, capabilities=declared) as host:
        rendered = await host.call_tool("forecast", {})
    async with Client(server=server, protocol_version=version) as plain:
        text_only = await plain.call_tool("forecast", {})
    assert rendered["content"][0]["text"] == "see the app"
    assert text_only["content"][0]["text"] == "sunny, 21 °C"


def test_ui_capability_needs_the_app_mime_type() -> None:
    assert ui_capability(ui_client_capabilities()) == {"mimeTypes": [MIME_TYPE]}
    assert ui_capability(ui_client_capabilities(mime_types=["text/html"])) is None
    assert ui_capability({"extensions": {EXTENSION_ID: {}}}) is None
    assert ui_capability({}) is None and ui_capability(None) is None
