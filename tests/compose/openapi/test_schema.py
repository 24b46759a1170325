"""OpenAPI schemas as JSON Schema 2020-12: 3.0's dialect, references, recursion."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from mcpkit.compose.openapi import load_document
from mcpkit.compose.openapi.schema import SchemaConverter
from mcpkit.errors import ConfigurationError


def converter(schemas: dict[str, Any], version: str = "3.0.3") -> SchemaConverter:
    return SchemaConverter(
        load_document(
            {
                "openapi": version,
                "info": {"title": "T", "version": "1"},
                "paths": {},
                "components": {"schemas": schemas},
            }
        )
    )


def test_openapi_30_keywords_become_json_schema() -> None:
    schema, defs = converter({}).convert(
        {
            "type": "object",
            "properties": {
                "age": {"type": "integer", "minimum": 0, "exclusiveMinimum": True,
                        "maximum": 9, "exclusiveMaximum": False, "example": 3},
                "nick": {"type": "string", "nullable": True, "enum": ["a", "b"]},
                "any": {"nullable": True, "description": "d"},
            },
            "discriminator": {"propertyName": "age"},
            "x-internal": True,
        }
    )  # fmt: skip
    assert defs == {}
    assert schema == {
        "type": "object",
        "properties": {
            "age": {"type": "integer", "exclusiveMinimum": 0, "maximum": 9, "examples": [3]},
            "nick": {"type": ["string", "null"], "enum": ["a", "b", None]},
            "any": {"anyOf": [{"description": "d"}, {"type": "null"}]},
        },
    }
    jsonschema.Draft202012Validator.check_schema(schema)


def test_openapi_31_schemas_keep_their_json_schema_keywords() -> None:
    schema, _ = converter({}, "3.1.0").convert(
        {"type": ["string", "null"], "exclusiveMinimum": 1, "const": "x", "example": "x"}
    )
    assert schema == {"type": ["string", "null"], "exclusiveMinimum": 1, "const": "x",
                      "examples": ["x"]}  # fmt: skip


def test_only_the_components_a_schema_reaches_are_in_its_defs_recursion_included() -> None:
    conv = converter(
        {
            "Node": {
                "type": "object",
                "properties": {
                    "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                    "tag": {"$ref": "#/components/schemas/Tag"},
                },
            },
            "Tag": {"type": "string", "enum": ["a"]},
            "Unused": {"type": "integer"},
        }
    )
    schema, defs = conv.convert({"type": "array", "items": {"$ref": "#/components/schemas/Node"}})
    assert schema == {"type": "array", "items": {"$ref": "#/$defs/Node"}}
    assert set(defs) == {"Node", "Tag"}
    whole = {**schema, "$defs": defs}
    validator = jsonschema.Draft202012Validator(whole)
    assert validator.is_valid([{"children": [{"children": [], "tag": "a"}]}])
    assert not validator.is_valid([{"children": [{"tag": "b"}]}])


def test_a_schema_that_only_names_a_component_is_inlined_on_request() -> None:
    conv = converter(
        {
            "Pet": {"type": "object", "properties": {"owner": {"$ref": "#/components/schemas/P"}}},
            "P": {"type": "object", "properties": {"name": {"type": "string"}}},
        }
    )
    schema, defs = conv.convert_inline({"$ref": "#/components/schemas/Pet"})
    assert schema["type"] == "object" and set(defs) == {"P"}


def test_other_local_references_are_inlined_and_a_loop_among_them_is_cut() -> None:
    conv = converter({"Box": {"type": "object", "properties": {"x": {"type": "integer"}}}})
    schema, defs = conv.convert({"$ref": "#/components/schemas/Box/properties/x"})
    assert schema == {"type": "integer"} and defs == {}
    looping = converter(
        {
            "A": {
                "type": "object",
                "properties": {"me": {"$ref": "#/components/schemas/A/properties/me"}},
            }
        }
    )
    schema, _ = looping.convert({"$ref": "#/components/schemas/A/properties/me"})
    assert schema == {}


def test_reference_siblings_keep_a_description_in_30_and_everything_in_31() -> None:
    node = {"$ref": "#/components/schemas/T", "description": "why", "maxLength": 3}
    in_30, _ = converter({"T": {"type": "string"}}).convert(node)
    assert in_30 == {"description": "why", "allOf": [{"$ref": "#/$defs/T"}]}
    in_31, _ = converter({"T": {"type": "string"}}, "3.1.0").convert(node)
    assert in_31 == {"description": "why", "maxLength": 3, "allOf": [{"$ref": "#/$defs/T"}]}


def test_a_remote_reference_in_a_schema_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="remote references are not fetched"):
        converter({}).convert({"$ref": "other.yaml#/components/schemas/X"})
