"""from_fastapi / from_openapi against a real FastAPI app, called in process."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import httpx
import pytest

from mcpkit import MCPServer
from mcpkit.auth import AuthInfo
from mcpkit.compose.openapi import RESOURCE_ROUTES, RouteMap, from_openapi
from mcpkit.errors import RESOURCE_NOT_FOUND, ConfigurationError, MCPError
from mcpkit.testing import connect

from .app import PIXEL, app


def _tools(server: MCPServer) -> dict[str, dict[str, Any]]:
    return {t.name: t.describe() for t in server.tools}


async def _call(server: MCPServer, name: str, args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    async with connect(server, **kw) as client:
        result: dict[str, Any] = await client.call_tool(name, args)
        return result


def test_every_operation_becomes_a_tool_named_by_its_operation_id() -> None:
    server = MCPServer.from_fastapi(app)
    assert server.name == "Echo" and server.version == "2.5.0"
    assert set(_tools(server)) == {
        "get_item", "list_items", "add_person", "replace_tags", "login",
        "whoami", "slow", "fail", "delete_item", "echo_raw", "pixel",
    }  # fmt: skip


def test_the_input_schema_merges_path_query_and_body_properties() -> None:
    schema = _tools(MCPServer.from_fastapi(app))["add_person"]["inputSchema"]
    assert list(schema["properties"]) == [
        "group", "notify", "name", "favourite", "address", "friends",
    ]  # fmt: skip
    assert schema["required"] == ["group", "name", "address"]
    assert schema["properties"]["address"] == {"$ref": "#/$defs/Address"}
    # Person is recursive (friends: list[Person]): it is in $defs once, by reference
    # (FastAPI names a model's input form "-Input").
    assert schema["properties"]["friends"]["items"] == {"$ref": "#/$defs/Person-Input"}
    assert set(schema["$defs"]) == {"Address", "Person-Input", "Color"}
    assert schema["$defs"]["Color"]["enum"] == ["red", "green"]


def test_descriptions_come_from_summary_and_description() -> None:
    tools = _tools(MCPServer.from_fastapi(app))
    assert tools["get_item"]["description"] == "One item"
    assert tools["add_person"]["description"] == "Add Person\n\nAdds someone."
    assert tools["get_item"]["annotations"]["readOnlyHint"] is True
    assert tools["delete_item"]["annotations"]["destructiveHint"] is True


async def test_a_call_sends_path_query_and_nested_body() -> None:
    server = MCPServer.from_fastapi(app)
    person = {"name": "Ann", "address": {"street": "Main", "city": "Oslo"}}
    friend = {**person, "name": "Bo", "favourite": "green"}
    result = await _call(
        server, "add_person", {"group": "t 1", "notify": True, **person, "friends": [friend]}
    )
    assert not result.get("isError"), result
    assert result["structuredContent"]["name"] == "t 1:Ann:True"
    assert result["structuredContent"]["friends"][0]["favourite"] == "green"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


async def test_enum_and_array_query_parameters_arrive() -> None:
    server = MCPServer.from_fastapi(app)
    result = await _call(server, "get_item", {"item_id": 3, "color": "green", "tags": ["a", "b"]})
    assert result["structuredContent"] == {"id": 3, "color": "green", "tags": ["a", "b"]}


async def test_arguments_outside_the_schema_are_refused_before_any_request() -> None:
    server = MCPServer.from_fastapi(app)
    result = await _call(server, "get_item", {"item_id": 3, "color": "blue"})
    assert result["isError"] is True
    # mcpkit's own check against the schema, not the API's 422.
    assert result["content"][0]["text"] == (
        "Invalid arguments for tool 'get_item': color: 'blue' is not valid under any of "
        "the given schemas"
    )


async def test_a_body_that_is_not_an_object_is_the_body_argument() -> None:
    server = MCPServer.from_fastapi(app)
    schema = _tools(server)["replace_tags"]["inputSchema"]
    assert schema["required"] == ["body"]
    result = await _call(server, "replace_tags", {"body": ["x", "y"]})
    assert result["structuredContent"] == {"tags": ["x", "y"]}


async def test_a_form_body_is_sent_form_encoded() -> None:
    server = MCPServer.from_fastapi(app)
    assert set(_tools(server)["login"]["inputSchema"]["properties"]) == {"username", "remember"}
    result = await _call(server, "login", {"username": "ann", "remember": True})
    assert result["structuredContent"] == {"result": "ann/True"}


async def test_an_array_response_is_wrapped_to_fit_the_object_only_output_schema() -> None:
    server = MCPServer.from_fastapi(app)
    output = _tools(server)["list_items"]["outputSchema"]
    assert output["type"] == "object" and output["required"] == ["result"]
    assert output["properties"]["result"]["items"] == {"$ref": "#/$defs/Item"}
    result = await _call(server, "list_items", {})
    assert result["structuredContent"]["result"][1] == {"id": 2, "label": "two"}


async def test_an_http_error_is_a_tool_error_with_the_status_and_a_bounded_body() -> None:
    server = MCPServer.from_fastapi(app, max_error_body=50)
    result = await _call(server, "fail", {"status": 418, "size": 10_000})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith('GET /fail/{status}: HTTP 418 I\'m a teapot: {"detail":"xxx')
    assert len(text) < 200 and "bytes in all" in text


async def test_a_call_that_outlasts_the_timeout_is_a_tool_error() -> None:
    server = MCPServer.from_fastapi(app, timeout=0.05)
    started = time.monotonic()
    result = await _call(server, "slow", {"seconds": 5})
    assert time.monotonic() - started < 2
    assert result["isError"] is True
    assert result["content"][0]["text"] == "GET /slow timed out after 0.05 s"


async def test_static_headers_header_and_cookie_parameters_reach_the_api() -> None:
    server = MCPServer.from_fastapi(app, headers={"X-API-Key": "k1"})
    result = await _call(server, "whoami", {"x-trace": "t-9", "session": "s1"})
    assert result["structuredContent"] == {
        "authorization": None,
        "x_api_key": "k1",
        "trace": "t-9",
        "session": "s1",
    }


async def test_the_callers_bearer_token_is_forwarded_only_when_asked() -> None:
    caller = AuthInfo(token="caller-token", scopes=frozenset())
    kept = MCPServer.from_fastapi(app, headers={"Authorization": "Bearer static"})
    result = await _call(kept, "whoami", {}, auth_info=caller)
    assert result["structuredContent"]["authorization"] == "Bearer static"
    forwarded = MCPServer.from_fastapi(app, forward_bearer_token=True)
    result = await _call(forwarded, "whoami", {}, auth_info=caller)
    assert result["structuredContent"]["authorization"] == "Bearer caller-token"
    result = await _call(forwarded, "whoami", {})  # an unauthenticated caller: none sent
    assert result["structuredContent"]["authorization"] is None


async def test_resource_routes_serve_gets_as_resources_and_templates() -> None:
    server = MCPServer.from_fastapi(app, route_maps=RESOURCE_ROUTES)
    tools = _tools(server)
    assert "list_items" not in tools and "get_item" not in tools
    assert "add_person" in tools and "login" in tools
    async with connect(server) as client:
        listed = {r["uri"]: r for r in await client.list_resources()}
        assert listed["api://items"]["mimeType"] == "application/json"
        templates = {t["uriTemplate"] for t in await client.list_resource_templates()}
        # Optional scalar query parameters join a template (RFC 6570 form-style query);
        # an array one (tags) has no single value to carry and is left out.
        assert {"api://items/{item_id}{?color}", "api://fail/{status}{?size}"} <= templates
        read = await client.read_resource("api://items")
        assert json.loads(read["contents"][0]["text"])[0]["label"] == "one"
        read = await client.read_resource("api://items/7")
        assert json.loads(read["contents"][0]["text"]) == {"id": 7, "color": None, "tags": []}
        read = await client.read_resource("api://items/7?color=green")
        assert json.loads(read["contents"][0]["text"])["color"] == "green"
        with pytest.raises(MCPError) as missing:
            await client.read_resource("api://fail/404")
        assert missing.value.code == RESOURCE_NOT_FOUND
        assert missing.value.data == {"uri": "api://fail/404"}
        with pytest.raises(MCPError) as failed:
            await client.read_resource("api://fail/500")
        assert "HTTP 500" in failed.value.message


async def test_route_maps_exclude_by_tag_path_pattern_and_method() -> None:
    server = MCPServer.from_fastapi(
        app,
        route_maps=[
            RouteMap("exclude", tags=["items"]),
            RouteMap("exclude", pattern=r"^/(slow|fail|echo|pixel)"),
            RouteMap("exclude", methods=["POST", "PUT"]),
        ],
    )
    assert set(_tools(server)) == {"whoami", "delete_item"}


async def test_from_openapi_uses_the_documents_server_when_the_client_has_no_base_url() -> None:
    document = app.openapi()
    document["servers"] = [{"url": "http://{host}/v1", "variables": {"host": {"default": "h"}}}]
    seen: list[str] = []

    async def echo(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json=[])

    async with httpx.AsyncClient(transport=httpx.MockTransport(echo)) as client:
        server = from_openapi(document, client=client, name="echo")
        await _call(server, "list_items", {})
    assert seen == ["http://h/v1/items"]


async def test_output_schemas_can_be_left_out() -> None:
    server = MCPServer.from_fastapi(app, output_schemas=False)
    assert "outputSchema" not in _tools(server)["get_item"]
    result = await _call(server, "get_item", {"item_id": 1})
    assert "structuredContent" not in result
    assert json.loads(result["content"][0]["text"])["id"] == 1


async def test_a_name_used_in_two_places_is_told_apart_by_its_location() -> None:
    document = {
        "openapi": "3.1.0",
        "info": {"title": "T", "version": "1"},
        "paths": {
            "/things/{id}": {
                "put": {
                    "parameters": [
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
                        {"name": "id", "in": "header", "schema": {"type": "string"}},
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {
                            "type": "object",
                            "properties": {"id": {"type": "string"}, "body": {"type": "string"}},
                            "required": ["id"],
                        }}},
                    },
                    "responses": {"204": {"description": "done"}},
                }
            }
        },
    }  # fmt: skip
    sent: list[httpx.Request] = []

    async def api(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(204)

    async with httpx.AsyncClient(transport=httpx.MockTransport(api), base_url="http://t") as c:
        server = from_openapi(document, client=c)
        (tool,) = _tools(server).values()
        # No operationId: method and path; the body's "id" and the header's are renamed.
        assert tool["name"] == "put_things_id"
        assert list(tool["inputSchema"]["properties"]) == ["id", "id__header", "id__body", "body"]
        assert tool["inputSchema"]["required"] == ["id", "id__body"]
        result = await _call(
            server, "put_things_id", {"id": 7, "id__header": "h", "id__body": "b", "body": "x"}
        )
    assert result["content"][0]["text"] == "HTTP 204 No Content"
    (request,) = sent
    assert (request.method, request.url.path, request.headers["id"]) == ("PUT", "/things/7", "h")
    assert json.loads(request.content) == {"id": "b", "body": "x"}


async def test_an_image_response_is_image_content_and_a_binary_resource_a_blob() -> None:
    result = await _call(MCPServer.from_fastapi(app), "pixel", {})
    assert result["content"] == [
        {"type": "image", "data": base64.b64encode(PIXEL).decode(), "mimeType": "image/png"}
    ]
    server = MCPServer.from_fastapi(app, route_maps=RESOURCE_ROUTES)
    async with connect(server) as client:
        read = await client.read_resource("api://pixel")
    assert base64.b64decode(read["contents"][0]["blob"]) == PIXEL


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"client": "http://api"}, "client must be an httpx.AsyncClient, not str"),
        ({"timeout": 0}, "timeout must be a positive number of seconds, not 0"),
        ({"max_error_body": -1}, "max_error_body must be an int >= 0, not -1"),
    ],
)
def test_options_are_checked_when_the_server_is_built(
    options: dict[str, Any], message: str
) -> None:
    given: dict[str, Any] = {"client": httpx.AsyncClient(), **options}
    with pytest.raises(ConfigurationError, match=message):
        from_openapi(app.openapi(), **given)


async def test_an_openapi_server_mounts_like_any_other() -> None:
    hub = MCPServer(name="hub", version="1.0.0")
    hub.mount(MCPServer.from_fastapi(app, route_maps=RESOURCE_ROUTES), namespace="echo")
    async with connect(hub) as client:
        result = await client.call_tool("echo_add_person", {
            "group": "g", "name": "Ann", "address": {"street": "s", "city": "c"},
        })  # fmt: skip
        read = await client.read_resource("api://echo/items")
    assert result["structuredContent"]["name"] == "g:Ann:False"
    assert json.loads(read["contents"][0]["text"])[0]["id"] == 1


def test_a_second_operation_on_a_taken_uri_stays_a_tool(caplog: pytest.LogCaptureFixture) -> None:
    responses = {"200": {"description": "ok"}}
    document = {
        "openapi": "3.1.0",
        "info": {"title": "T", "version": "1"},
        "paths": {"/x": {"get": {"operationId": "read_x", "responses": responses},
                         "post": {"operationId": "touch_x", "responses": responses}}},
    }  # fmt: skip
    with caplog.at_level("WARNING", logger="mcpkit.compose.openapi"):
        server = from_openapi(
            document, client=httpx.AsyncClient(), route_maps=[RouteMap("resource")]
        )
    assert list(server.resources.static) == ["api://x"]
    assert set(_tools(server)) == {"touch_x"}
    assert "POST /x: api://x is taken; served as a tool" in caplog.text
