"""Resources: static, templates, the seeds' callbacks, subscriptions, notifications."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest

from mcpkit import Context, MCPServer, MCPServerResources
from mcpkit.errors import (
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    ConfigurationError,
    RegistrationError,
    RemoteError,
)
from mcpkit.testing import connect


def resource_server() -> MCPServer:
    server = MCPServer(name="res", version="1")

    @server.resource(
        "test://static/text", name="readme", description="Read me", mime_type="text/plain"
    )
    def readme() -> str:
        return "hello"

    @server.resource("test://static/binary", mime_type="image/png")
    async def logo() -> bytes:
        return b"\x89PNG"

    @server.resource("test://static/json")
    def config() -> dict[str, Any]:
        return {"debug": True}

    @server.resource(
        "test://template/{id}/data", mime_type="application/json", description="Data by id"
    )
    def data(id: int) -> dict[str, int]:
        return {"id": id, "double": id * 2}

    @server.resource("test://users/{name}", title="A user")
    async def user(name: str, ctx: Context) -> str:
        return f"user {name} (request {ctx.request_id})"

    return server


async def test_static_resources_are_listed() -> None:
    async with connect(resource_server()) as client:
        listed = (await client.request("resources/list"))["resources"]
    assert {r["uri"]: r for r in listed} == {
        "test://static/text": {
            "uri": "test://static/text",
            "name": "readme",
            "description": "Read me",
            "mimeType": "text/plain",
        },
        "test://static/binary": {
            "uri": "test://static/binary",
            "name": "logo",
            "mimeType": "image/png",
        },
        "test://static/json": {"uri": "test://static/json", "name": "config"},
    }


async def test_templates_are_listed_separately() -> None:
    async with connect(resource_server()) as client:
        templates = (await client.request("resources/templates/list"))["resourceTemplates"]
    assert templates == [
        {
            "uriTemplate": "test://template/{id}/data",
            "name": "data",
            "description": "Data by id",
            "mimeType": "application/json",
        },
        {"uriTemplate": "test://users/{name}", "name": "user", "title": "A user"},
    ]


async def test_read_text_binary_and_json_contents_with_mime_types() -> None:
    async with connect(resource_server()) as client:
        text = (await client.read_resource("test://static/text"))["contents"]
        binary = (await client.read_resource("test://static/binary"))["contents"]
        as_json = (await client.read_resource("test://static/json"))["contents"]
    assert text == [{"uri": "test://static/text", "text": "hello", "mimeType": "text/plain"}]
    assert binary == [
        {
            "uri": "test://static/binary",
            "blob": base64.b64encode(b"\x89PNG").decode(),
            "mimeType": "image/png",
        }
    ]
    assert as_json == [
        {"uri": "test://static/json", "text": '{"debug":true}', "mimeType": "application/json"}
    ]


async def test_read_through_a_template_validates_and_converts_variables() -> None:
    async with connect(resource_server()) as client:
        contents = (await client.read_resource("test://template/21/data"))["contents"]
        assert contents == [
            {
                "uri": "test://template/21/data",
                "text": '{"id":21,"double":42}',
                "mimeType": "application/json",
            }
        ]
        user = (await client.read_resource("test://users/ada"))["contents"][0]
        assert user["text"].startswith("user ada (request ")
        with pytest.raises(RemoteError) as info:
            await client.read_resource("test://template/abc/data")
        assert info.value.code == INVALID_PARAMS


async def test_unknown_resource_is_32002_with_the_uri_in_data() -> None:
    async with connect(resource_server()) as client:
        with pytest.raises(RemoteError) as info:
            await client.read_resource("test://nothing/here")
    assert info.value.code == RESOURCE_NOT_FOUND
    assert info.value.data == {"uri": "test://nothing/here"}


@pytest.mark.parametrize(
    "uri",
    [
        "notes://..%2F..%2Fetc%2Fpasswd",
        "notes://a%00b",
        "notes://..",
        "notes://%2E%2E",
        "notes://x%0Ay",
    ],
)
async def test_a_uri_decoding_to_a_traversal_is_not_found_and_never_reaches_the_handler(
    uri: str,
) -> None:
    server = MCPServer(name="notes", version="1")
    seen: list[str] = []

    @server.resource("notes://{name}")
    def note(name: str) -> str:
        seen.append(name)
        return f"note {name}"

    async with connect(server) as client:
        assert (await client.read_resource("notes://todo"))["contents"][0]["text"] == "note todo"
        with pytest.raises(RemoteError) as info:
            await client.read_resource(uri)
    assert info.value.code == RESOURCE_NOT_FOUND
    assert seen == ["todo"]


def test_registration_mistakes_are_configuration_errors() -> None:
    server = MCPServer(name="x", version="1")
    with pytest.raises(ConfigurationError, match="static"):

        @server.resource("test://static")
        def takes_args(x: int) -> str:
            return ""

    with pytest.raises(ConfigurationError, match="not template variables"):

        @server.resource("test://t/{a}")
        def wrong_name(b: str) -> str:
            return ""


# -- the seeds' callbacks -------------------------------------------------------------------------------

SEED_RESOURCES = [
    {"uri": "file://data/123.txt", "name": "Data File", "mimeType": "text/plain"},
    {"uri": "file://data/logo.png", "name": "Logo", "mimeType": "image/png"},
]
SEED_CONTENTS: dict[str, Any] = {
    "file://data/123.txt": {"text": "This is the content of the data file."},
    "file://data/logo.png": {"blob": b"\x00\x01\x02"},
}
SEED_TEMPLATES = [
    {
        "uriTemplate": "file://data/{id}",
        "name": "Data File",
        "description": "A file.",
        "mimeType": "text/plain",
    }
]


def seed_server() -> MCPServer:
    async def list_resources() -> list[dict[str, Any]]:
        return SEED_RESOURCES

    async def get_resource_content(uri: str) -> Any:
        if uri in SEED_CONTENTS:
            return SEED_CONTENTS[uri]
        raise KeyError(uri)

    def resource_templates() -> list[dict[str, Any]]:
        return SEED_TEMPLATES

    return MCPServer(
        name="Resourceful Server",
        version="1.0.0",
        resources=MCPServerResources(
            list_resources=list_resources,
            get_resource_content=get_resource_content,
            resource_templates=resource_templates,
        ),
    )


async def test_seed_callbacks_list_read_and_template() -> None:
    async with connect(seed_server()) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["capabilities"]["resources"] == {
            "subscribe": True,
            "listChanged": True,
        }
        assert (await client.request("resources/list"))["resources"] == SEED_RESOURCES
        assert (await client.request("resources/templates/list"))[
            "resourceTemplates"
        ] == SEED_TEMPLATES
        text = (await client.read_resource("file://data/123.txt"))["contents"]
        assert text == [
            {
                "uri": "file://data/123.txt",
                "text": "This is the content of the data file.",
                "mimeType": "text/plain",
            }
        ]
        blob = (await client.read_resource("file://data/logo.png"))["contents"]
        assert blob == [{"uri": "file://data/logo.png", "blob": "AAEC", "mimeType": "image/png"}]
        with pytest.raises(RemoteError) as info:
            await client.read_resource("file://data/999.txt")
        assert info.value.code == RESOURCE_NOT_FOUND
        assert info.value.data == {"uri": "file://data/999.txt"}


async def test_templates_callback_alone_declares_resources() -> None:
    server = MCPServer(
        name="x",
        version="1",
        resources=MCPServerResources(resource_templates=lambda: SEED_TEMPLATES),
    )
    async with connect(server) as client:
        assert client.initialize_result is not None
        assert "resources" in client.initialize_result["capabilities"]
        assert "completions" in client.initialize_result["capabilities"]


async def test_no_resources_means_no_capability() -> None:
    async with connect(MCPServer(name="x", version="1")) as client:
        assert client.initialize_result is not None
        assert "resources" not in client.initialize_result["capabilities"]


# -- subscriptions and notifications ------------------------------------------------------------------


def updates(client: Any) -> list[str]:
    return [
        n["params"]["uri"]
        for n in client.notifications
        if n["method"] == "notifications/resources/updated"
    ]


async def test_notify_updated_reaches_only_subscribed_sessions() -> None:
    server = resource_server()
    async with connect(server) as alice, connect(server) as bob:
        assert await alice.request("resources/subscribe", {"uri": "test://static/text"}) == {}
        await bob.request("resources/subscribe", {"uri": "test://static/json"})
        await server.resources.notify_updated("test://static/text")
        await server.resources.notify_updated("test://static/json")
        await server.resources.notify_updated("test://static/binary")
        assert updates(alice) == ["test://static/text"]
        assert updates(bob) == ["test://static/json"]
        assert await alice.request("resources/unsubscribe", {"uri": "test://static/text"}) == {}
        await server.resources.notify_updated("test://static/text")
        assert updates(alice) == ["test://static/text"]


async def test_notify_list_changed_reaches_every_initialized_session() -> None:
    server = resource_server()
    async with (
        connect(server) as one,
        connect(server) as two,
        connect(server, initialize=False) as fresh,
    ):
        await server.resources.notify_list_changed()
        for client in (one, two):
            assert [n["method"] for n in client.notifications] == [
                "notifications/resources/list_changed"
            ]
        assert fresh.notifications == []


async def test_closed_sessions_get_nothing() -> None:
    server = resource_server()
    async with connect(server) as client:
        await client.request("resources/subscribe", {"uri": "test://static/text"})
    assert server.sessions() == []
    await server.resources.notify_updated("test://static/text")
    assert updates(client) == []


async def test_a_failing_subscriber_does_not_stop_the_others() -> None:
    server = resource_server()
    async with connect(server) as good, connect(server) as bad:
        for c in (good, bad):
            await c.request("resources/subscribe", {"uri": "test://static/text"})

        async def broken(message: dict[str, Any]) -> None:
            raise ConnectionResetError("gone")

        bad.session.standalone = broken
        await asyncio.wait_for(server.resources.notify_updated("test://static/text"), 5)
        assert updates(good) == ["test://static/text"]


async def test_resource_listings_are_shaped_for_old_revisions() -> None:
    server = MCPServer(name="x", version="1")
    icons = [{"src": "https://example.com/r.png"}]

    @server.resource("test://a", title="A", icons=icons, meta={"k": 1}, size=3)
    def a() -> str:
        return "aaa"

    @server.resource("test://t/{x}", title="T", icons=icons, meta={"k": 1})
    def t(x: str) -> str:
        return x

    for version, keys in [
        ("2024-11-05", {"uri", "name", "size"}),
        ("2025-06-18", {"uri", "name", "size", "title", "_meta"}),
        ("2025-11-25", {"uri", "name", "size", "title", "_meta", "icons"}),
    ]:
        async with connect(server, protocol_version=version) as client:
            (res,) = (await client.request("resources/list"))["resources"]
            assert set(res) == keys, version
            (tmpl,) = (await client.request("resources/templates/list"))["resourceTemplates"]
            assert set(tmpl) == (keys - {"size", "uri"}) | {"uriTemplate"}, version


def test_an_invalid_uri_template_is_a_configuration_error() -> None:
    server = MCPServer(name="x", version="1")
    with pytest.raises(ConfigurationError, match="test://bad/"):

        @server.resource("test://bad/{unclosed")
        def bad(unclosed: str) -> str:
            return ""


async def test_template_variable_errors_name_the_variable() -> None:
    async with connect(resource_server()) as client:
        with pytest.raises(RemoteError) as info:
            await client.read_resource("test://template/abc/data")
    assert "id:" in info.value.message
    assert "errors.pydantic.dev" not in info.value.message


async def test_a_uri_too_long_for_an_ambiguous_template_says_so() -> None:
    server = MCPServer(name="long", version="1")

    @server.resource("files://{+dir}/{+name}")
    def item(dir: str, name: str) -> str:
        return f"{dir}|{name}"

    async with connect(server) as client:
        ok = await client.read_resource("files://a/b/c")
        assert ok["contents"][0]["text"] == "a/b|c"
        try:
            await client.read_resource("files://" + "a/" * 300 + "c")
        except RemoteError as exc:
            assert exc.code == INVALID_PARAMS
            assert "too long" in exc.message
        else:
            raise AssertionError("expected an error")


def test_a_bare_resource_decorator_is_refused_naming_the_function() -> None:
    server = MCPServer(name="res", version="1")
    with pytest.raises(RegistrationError) as info:

        @server.resource  # type: ignore[arg-type]
        def readme() -> str:
            return "hello"

    assert str(info.value) == (
        "resource 'readme': @server.resource needs the resource's URI, as in "
        '@server.resource("data://readme") (a URI with {variables} makes a template)'
    )
    assert not server.resources.enabled


def test_every_problem_of_a_resource_is_reported_at_once() -> None:
    server = MCPServer(name="res", version="1")
    with pytest.raises(RegistrationError) as info:

        @server.resource("test://items/{id}")
        def item(id: int, /, page: int) -> str:
            return ""

    assert info.value.problems == [
        "resource 'test://items/{id}': parameter 'id' is positional-only (declared before "
        "'/'), but MCP passes arguments by name; remove the '/'",
        "resource 'test://items/{id}': parameters ['page'] are not template variables",
    ]


def test_listeners_hear_each_resource_and_template_added() -> None:
    server = MCPServer(name="s", version="1")
    heard: list[str] = []
    server.resources.add_listener(lambda d: heard.append(d.describe().get("uri", d.name)))

    @server.resource("mem://a")
    def a() -> str:
        return "a"

    @server.resource("mem://items/{id}")
    def item(id: str) -> str:
        return id

    assert heard == ["mem://a", "item"]


async def test_update_listeners_are_awaited_after_the_subscribers_hear() -> None:
    server = MCPServer(name="s", version="1")
    heard: list[str] = []

    @server.resource("mem://a")
    def a() -> str:
        return "a"

    async def listener(uri: str) -> None:
        heard.append(uri)

    server.resources.add_update_listener(listener)
    async with connect(server) as client:
        await client.subscribe_resource("mem://a")
        await server.resources.notify_updated("mem://a")
        updates = [n for n in client.notifications if n["method"].endswith("resources/updated")]
    assert len(updates) == 1
    assert heard == ["mem://a"]
