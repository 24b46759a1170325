"""Reading and validating OpenAPI documents: versions, references, operations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpkit.compose.openapi import load_document
from mcpkit.errors import ConfigurationError


def doc(paths: dict[str, Any], version: str = "3.0.3", **more: Any) -> dict[str, Any]:
    return {"openapi": version, "info": {"title": "T", "version": "1"}, "paths": paths, **more}


PETS = doc(
    {
        "/pets/{id}": {
            "parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                {"name": "v", "in": "query", "schema": {"type": "string"}},
            ],
            "get": {
                "operationId": "getPet",
                "tags": ["pets"],
                "parameters": [
                    {"$ref": "#/components/parameters/Verbose"},
                    {"name": "v", "in": "query", "schema": {"type": "integer"}},
                ],
                "responses": {"200": {"$ref": "#/components/responses/Pet"}},
            },
            "post": {
                "requestBody": {"$ref": "#/components/requestBodies/Pet"},
                "responses": {"204": {"description": "ok"}},
            },
        }
    },
    components={
        "parameters": {
            "Verbose": {
                "name": "verbose",
                "in": "query",
                "style": "form",
                "explode": False,
                "schema": {"type": "boolean"},
            }
        },
        "responses": {
            "Pet": {
                "description": "a pet",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
            }
        },
        "requestBodies": {
            "Pet": {
                "required": True,
                "content": {
                    "application/xml": {"schema": {"type": "string"}},
                    "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}},
                },
            }
        },
        "schemas": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}},
    },
)


def test_operations_resolve_parameters_bodies_and_responses_through_references() -> None:
    get, post = load_document(PETS).operations()
    assert (get.method, get.path, get.operation_id, get.tags) == (
        "get",
        "/pets/{id}",
        "getPet",
        ("pets",),
    )
    # The operation's own "v" replaces the path item's (same name and location).
    by_name = {p.name: p for p in get.parameters}
    assert list(by_name) == ["id", "v", "verbose"]
    assert by_name["v"].schema == {"type": "integer"}
    assert by_name["id"].required and by_name["id"].style == "simple"
    assert (by_name["verbose"].style, by_name["verbose"].explode) == ("form", False)
    assert get.response_schema == {"$ref": "#/components/schemas/Pet"}
    assert post.body is not None and post.body.media_type == "application/json"
    assert post.body.required and post.response_schema is None


def test_json_and_yaml_text_and_paths_are_read(tmp_path: Path) -> None:
    as_json = json.dumps(PETS)
    path = tmp_path / "api.json"
    path.write_text(as_json)
    yaml_text = "openapi: 3.1.0\ninfo: {title: Y, version: '2'}\npaths: {}\n"
    assert load_document(as_json).title == "T"
    assert load_document(path).api_version == "1"
    assert load_document(yaml_text.encode()).is_31


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"swagger": "2.0", "info": {}}, "OpenAPI 3.0 or 3.1 document is needed"),
        ({"openapi": "3.2.0"}, "not 3.2.0"),
        (
            doc({"/x": {"get": {"responses": {"200": {"description": 5}}}}}),
            "the OpenAPI document is not valid: #/paths/~1x/get/responses/200/Response/"
            "description: Input should be a valid string",
        ),
    ],
)
def test_documents_that_are_not_valid_openapi_3_0_or_3_1_are_refused(
    document: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_document(document)


def test_a_remote_reference_is_refused_without_fetching_it() -> None:
    document = doc(
        {
            "/x": {
                "get": {"parameters": [{"$ref": "https://example.com/p.json#/P"}], "responses": {}}
            }
        }
    )
    with pytest.raises(ConfigurationError, match="points outside the document"):
        list(load_document(document).operations())


def test_a_reference_that_names_nothing_or_loops_is_an_error() -> None:
    missing = doc({"/x": {"get": {"parameters": [{"$ref": "#/nope"}], "responses": {}}}})
    with pytest.raises(ConfigurationError, match="names nothing"):
        list(load_document(missing).operations())
    looping = doc(
        {"/x": {"get": {"parameters": [{"$ref": "#/components/parameters/A"}], "responses": {}}}},
        components={
            "parameters": {
                "A": {"$ref": "#/components/parameters/B"},
                "B": {"$ref": "#/components/parameters/A"},
            }
        },
    )
    with pytest.raises(ConfigurationError, match="refers to itself"):
        list(load_document(looping).operations())


def test_the_first_server_url_has_its_variables_filled() -> None:
    document = doc(
        {},
        servers=[{"url": "https://{env}.x.io/{v}", "variables": {
            "env": {"default": "api"}, "v": {"default": "v2"},
        }}],
    )  # fmt: skip
    assert load_document(document).server_url == "https://api.x.io/v2"


def test_yaml_without_pyyaml_names_the_openapi_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from mcpkit.errors import MissingExtra

    monkeypatch.setitem(sys.modules, "yaml", None)
    with pytest.raises(MissingExtra, match=r"reading YAML OpenAPI documents needs yaml"):
        load_document("openapi: 3.1.0\n")
    assert load_document(json.dumps(PETS)).title == "T"  # JSON needs no YAML


def test_undeclared_path_variables_are_parameters_and_reserved_headers_are_ignored() -> None:
    document = doc(
        {
            "/a/{x}/{y}": {
                "get": {
                    "parameters": [
                        {
                            "name": "x",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer"},
                        },
                        {"name": "Accept", "in": "header", "schema": {"type": "string"}},
                        {"name": "content-type", "in": "header", "schema": {"type": "string"}},
                        {"name": "X-Id", "in": "header", "schema": {"type": "string"}},
                    ],
                    "responses": {},
                }
            }
        }
    )
    (op,) = load_document(document).operations()
    assert [(p.name, p.location, p.required, p.schema) for p in op.parameters] == [
        ("x", "path", True, {"type": "integer"}),
        ("X-Id", "header", False, {"type": "string"}),
        ("y", "path", True, {"type": "string"}),
    ]


def test_references_may_point_anywhere_in_the_document_escaped_or_percent_encoded() -> None:
    document = load_document(PETS)
    assert document.resolve("#/paths/~1pets~1%7Bid%7D/get/operationId") == "getPet"
    assert document.resolve("#/components/parameters/Verbose/in") == "query"
