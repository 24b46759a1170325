"""An OpenAPI 3.0 document, written by hand, against the real echo app: styles on the wire."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mcpkit import MCPServer
from mcpkit.compose.openapi import from_openapi
from mcpkit.testing import connect

from .app import app

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Echo 3.0", "version": "1"},
    "paths": {
        "/echo/{value}": {
            "get": {
                "operationId": "echo",
                "deprecated": True,
                "summary": "Echo the request",
                "parameters": [
                    {"name": "value", "in": "path", "required": True, "style": "label",
                     "explode": True, "schema": {"type": "array", "items": {"type": "string"}}},
                    {"name": "filter", "in": "query", "style": "deepObject", "explode": True,
                     "schema": {"$ref": "#/components/schemas/Filter"}},
                    {"name": "ids", "in": "query", "style": "pipeDelimited", "explode": False,
                     "schema": {"type": "array", "items": {"type": "integer"}}},
                    {"name": "X-Mode", "in": "header",
                     "schema": {"type": "string", "enum": ["fast", "slow"], "nullable": True}},
                    {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                    # Ignored by the rules of OpenAPI: credentials go through headers=.
                    {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Echo"}}},
                    }
                },
            }
        }
    },
    "components": {
        "schemas": {
            "Filter": {
                "type": "object",
                "properties": {
                    "min": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
                    "name": {"type": "string"},
                },
            },
            "Echo": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "query": {"type": "string"},
                    "mode": {"type": "string", "nullable": True},
                    "cookie": {"type": "string", "nullable": True},
                    "authorization": {"type": "string", "nullable": True},
                },
            },
        }
    },
}  # fmt: skip


@pytest.fixture
def server() -> MCPServer:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://echo")
    return from_openapi(DOCUMENT, client=client, headers={"Authorization": "Bearer static"})


def test_the_tool_is_described_in_json_schema_terms(server: MCPServer) -> None:
    (tool,) = (t.describe() for t in server.tools)
    assert tool["description"] == "Deprecated. Echo the request"
    schema = tool["inputSchema"]
    assert list(schema["properties"]) == ["value", "filter", "ids", "X-Mode", "session"]
    assert schema["properties"]["X-Mode"] == {"type": ["string", "null"],
                                              "enum": ["fast", "slow", None]}  # fmt: skip
    assert schema["$defs"]["Filter"]["properties"]["min"] == {
        "type": "integer",
        "exclusiveMinimum": 0,
    }
    assert tool["outputSchema"]["properties"]["mode"] == {"type": ["string", "null"]}


async def test_each_style_reaches_the_app_as_openapi_writes_it(server: MCPServer) -> None:
    async with connect(server) as client:
        result = await client.call_tool(
            "echo",
            {
                "value": ["a b", "c&d"],
                "filter": {"min": 1, "name": "x"},
                "ids": [3, 4],
                "X-Mode": "fast",
                "session": "s1",
            },
        )
        refused = await client.call_tool("echo", {"value": ["a"], "filter": {"min": 0}})
    assert result["structuredContent"] == {
        "path": "/echo/.a%20b.c%26d",
        "query": "filter%5Bmin%5D=1&filter%5Bname%5D=x&ids=3%7C4",
        "mode": "fast",
        "cookie": "session=s1",
        "authorization": "Bearer static",
    }
    assert refused["isError"] is True  # exclusiveMinimum 0, checked before any request
