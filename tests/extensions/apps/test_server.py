"""mcpkit.extensions.apps.server: declaration, serving and checks of MCP App resources."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mcpkit import MCPServer
from mcpkit.client import Client
from mcpkit.errors import LifespanError, RegistrationError
from mcpkit.extensions import EXTENSIONS
from mcpkit.extensions.apps import (
    EXTENSION_ID,
    LEGACY_RESOURCE_URI_KEY,
    MIME_TYPE,
    Csp,
    Permissions,
    UiResource,
    add_apps,
    ui_tool_meta,
)

ERAS = ["2025-11-25", "2026-07-28"]
URI = "ui://demo/app.html"
HTML = "<!doctype html><p>demo</p>"


def check(schema: dict[str, Any], definition: str, value: object) -> None:
    """``value`` is valid against ``definition`` of the extension's schema.json."""
    Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": schema["$defs"]}).validate(
        value
    )


def demo_server() -> MCPServer:
    server = MCPServer(name="apps-test", version="1.0.0")

    @server.tool(meta=ui_tool_meta(URI, visibility=["model", "app"]))
    def show(item: str) -> str:
        return f"showing {item}"

    @server.tool
    def plain() -> str:
        return "no ui"

    add_apps(
        server,
        [
            UiResource(
                uri=URI,
                html=HTML,
                title="Demo",
                csp=Csp(connect_domains=("https://api.example.com",)),
                permissions=Permissions(clipboard_write=True),
                prefers_border=False,
            )
        ],
    )
    return server


def test_the_extension_is_registered_under_its_identifier() -> None:
    assert EXTENSION_ID == "io.modelcontextprotocol/ui"
    assert EXTENSIONS[EXTENSION_ID] == "mcpkit.extensions.apps"
    assert MIME_TYPE == "text/html;profile=mcp-app"


@pytest.mark.parametrize("version", ERAS)
async def test_tool_and_resource_declare_the_app_on_both_eras(
    version: str, ui_schema: dict[str, Any]
) -> None:
    async with Client(server=demo_server(), protocol_version=version) as client:
        assert client.server_capabilities["extensions"][EXTENSION_ID] == {}
        tools = {t["name"]: t for t in await client.list_tools()}
        listed = {r["uri"]: r for r in await client.list_resources()}
        read = await client.read_resource(URI)
    ui = tools["show"]["_meta"]["ui"]
    assert ui == {"resourceUri": URI, "visibility": ["model", "app"]}
    check(ui_schema, "McpUiToolMeta", ui)
    assert "_meta" not in tools["plain"]
    entry = listed[URI]
    assert entry["mimeType"] == MIME_TYPE and entry["title"] == "Demo"
    expected = {
        "csp": {"connectDomains": ["https://api.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": False,
    }
    assert entry["_meta"]["ui"] == expected
    check(ui_schema, "McpUiResourceMeta", entry["_meta"]["ui"])
    [content] = read["contents"]
    assert content == {"uri": URI, "mimeType": MIME_TYPE, "text": HTML, "_meta": {"ui": expected}}


async def test_a_resource_without_metadata_carries_no_meta(ui_schema: dict[str, Any]) -> None:
    server = MCPServer(name="apps-test", version="1.0.0")
    server.tool(name="t", meta=ui_tool_meta(URI))(lambda: "x")
    add_apps(server, [UiResource(uri=URI, html=lambda: HTML)])
    async with Client(server=server) as client:
        [entry] = await client.list_resources()
        [content] = (await client.read_resource(URI))["contents"]
    assert "_meta" not in entry and "_meta" not in content
    assert content["text"] == HTML and content["mimeType"] == MIME_TYPE


async def test_html_from_a_function_is_read_at_each_read() -> None:
    server = MCPServer(name="apps-test", version="1.0.0")
    pages = iter(["<p>one</p>", "<p>two</p>"])
    add_apps(server, [UiResource(uri=URI, html=lambda: next(pages))])
    async with Client(server=server) as client:
        first = (await client.read_resource(URI))["contents"][0]["text"]
        second = (await client.read_resource(URI))["contents"][0]["text"]
    assert (first, second) == ("<p>one</p>", "<p>two</p>")


def test_the_legacy_flat_key_names_a_served_resource() -> None:
    server = MCPServer(name="apps-test", version="1.0.0")
    server.tool(name="t", meta={LEGACY_RESOURCE_URI_KEY: URI})(lambda: "x")
    add_apps(server, [UiResource(uri=URI, html=HTML)])  # no problem raised
    assert EXTENSION_ID in server.extensions


def test_every_problem_is_raised_at_once_and_nothing_is_registered() -> None:
    server = MCPServer(name="apps-test", version="1.0.0")
    server.tool(name="missing", meta=ui_tool_meta("ui://demo/nowhere.html"))(lambda: "x")
    server.tool(name="http", meta=ui_tool_meta("https://example.com/app.html"))(lambda: "x")
    server.tool(
        name="csp_on_tool", meta={"ui": {"resourceUri": URI, "csp": {"connectDomains": []}}}
    )(lambda: "x")
    server.tool(name="bad_visibility", meta=ui_tool_meta(URI, visibility=["user"]))(  # type: ignore[list-item]
        lambda: "x"
    )
    server.tool(name="no_uri", meta={"ui": {"visibility": ["app"]}})(lambda: "x")
    with pytest.raises(RegistrationError) as caught:
        add_apps(
            server,
            [
                UiResource(uri=URI, html=HTML),
                UiResource(uri=URI, html=HTML),
                UiResource(uri="ui://demo/{page}", html=HTML),
                UiResource(uri="file:///app.html", html=HTML),
                UiResource(uri="ui://demo/empty.html", html="  "),
                UiResource(uri="ui://demo/csp.html", html=HTML, csp=Csp(connect_domains=("a b",))),
            ],
        )
    problems = caught.value.problems
    expected = [
        "tool 'missing': names UI resource 'ui://demo/nowhere.html', which is not served",
        "tool 'http': UI resource URI 'https://example.com/app.html' must be 'ui://",
        "tool 'csp_on_tool': _meta.ui.csp belongs on the UI resource, not on the tool",
        "tool 'bad_visibility': _meta.ui.visibility must list 'model' and/or 'app'",
        "tool 'no_uri': _meta.ui names no resourceUri",
        f"UI resource {URI!r} is declared twice",
        "UI resource URI 'ui://demo/{page}' must be 'ui://",
        "UI resource URI 'file:///app.html' must be 'ui://",
        "UI resource 'ui://demo/empty.html': the HTML is empty",
        "UI resource 'ui://demo/csp.html': csp.connectDomains origin 'a b' has whitespace",
    ]
    for start in expected:
        assert any(p.startswith(start) for p in problems), (start, problems)
    assert len(problems) == len(expected)
    assert server.resources.static == {} and EXTENSION_ID not in server.extensions


def test_a_uri_the_server_already_serves_is_refused() -> None:
    server = MCPServer(name="apps-test", version="1.0.0")
    server.resource(URI)(lambda: "taken")
    with pytest.raises(RegistrationError, match="already served"):
        add_apps(server, [UiResource(uri=URI, html=HTML)])


def test_adding_the_apps_twice_is_refused() -> None:
    server = demo_server()
    with pytest.raises(RegistrationError, match="added twice"):
        add_apps(server, [UiResource(uri="ui://demo/other.html", html=HTML)])


async def test_a_tool_added_later_naming_no_served_ui_fails_at_start_up() -> None:
    server = demo_server()
    server.tool(name="late", meta=ui_tool_meta("ui://demo/late.html"))(lambda: "x")
    with pytest.raises(LifespanError, match="'late': names UI resource") as caught:
        async with Client(server=server):
            pass
    assert isinstance(caught.value.__cause__, RegistrationError)
