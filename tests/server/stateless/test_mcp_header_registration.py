"""x-mcp-header annotations are checked when a tool is registered (2026-07-28, SEP-2243).

A client drops a tool whose annotations break the revision's rules, so the server
refuses it at decoration time with a ConfigurationError naming the tool, the
parameter and the rule.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from mcpkit import McpHeader, MCPServer, create_tool
from mcpkit.errors import ConfigurationError, RegistrationError
from mcpkit.server.stateless.mcp_header import header_problems


def raw_tool(schema: dict[str, Any], name: str = "raw") -> Any:
    return create_tool(
        id=name, description="A raw schema.", execute=lambda **kw: "ok", input_schema=schema
    )


def props(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


# -- what is accepted --------------------------------------------------------------------------


def test_string_integer_and_boolean_parameters_may_carry_headers() -> None:
    server = MCPServer(name="h", version="1")

    @server.tool
    async def deploy(
        region: Annotated[str, McpHeader("Region")],
        replicas: Annotated[int, McpHeader("Replicas")] = 1,
        dry_run: Annotated[bool, McpHeader("Dry-Run")] = False,
        note: str = "",
    ) -> str:
        return region

    assert "deploy" in server.tools


def test_nested_properties_chains_and_data_keywords_are_fine_in_raw_schemas() -> None:
    schema = props(
        opts={
            "type": "object",
            "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
            # An instance that happens to hold the key is data, not an annotation.
            "default": {"x-mcp-header": "not-an-annotation"},
        },
        kind={"type": "string", "enum": ["a", "b"], "x-mcp-header": "Kind"},
    )
    tool = raw_tool(schema)
    assert tool.input_schema["properties"]["opts"]["properties"]["zone"]["x-mcp-header"] == "Zone"
    assert header_problems("raw", schema) == []


# -- the rules, one by one -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("", "non-empty"),
        (5, "non-empty string"),
        ("Two Words", "HTTP field-name token"),
        ("Line\r\nBreak", "HTTP field-name token"),
        ("Tab\there", "HTTP field-name token"),
        ("Région", "HTTP field-name token"),
        ("a:b", "HTTP field-name token"),
    ],
)
def test_the_name_must_be_a_non_empty_http_token(name: Any, rule: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        raw_tool(props(region={"type": "string", "x-mcp-header": name}), name="deploy")
    message = str(info.value)
    assert "tool 'deploy', parameter 'region'" in message and rule in message


def test_names_must_be_unique_ignoring_case() -> None:
    server = MCPServer(name="h", version="1")
    with pytest.raises(ConfigurationError) as info:

        @server.tool
        async def route(
            region: Annotated[str, McpHeader("Region")],
            backup: Annotated[str, McpHeader("REGION")],
        ) -> str:
            return region

    message = str(info.value)
    assert "tool 'route', parameter 'backup'" in message
    assert "already used by parameter 'region'" in message and "ignoring case" in message
    assert "route" not in server.tools  # refused at decoration time, not at call time


def test_duplicates_across_nesting_levels_are_caught_too() -> None:
    schema = props(
        region={"type": "string", "x-mcp-header": "Region"},
        opts={"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "region"}}},
    )
    with pytest.raises(ConfigurationError, match=r"'opts\.r'.*already used by parameter 'region'"):
        raw_tool(schema)


@pytest.mark.parametrize(
    ("annotation", "kind"),
    [
        (Annotated[float, McpHeader("Score")], "'number'"),
        (Annotated[list[str], McpHeader("Tags")], "'array'"),
        (Annotated[dict[str, int], McpHeader("Map")], "'object'"),
    ],
)
def test_only_string_integer_or_boolean_may_carry_a_header(annotation: Any, kind: str) -> None:
    server = MCPServer(name="h", version="1")

    async def typed(value: Any) -> str:
        return "ok"

    typed.__annotations__["value"] = annotation
    with pytest.raises(ConfigurationError) as info:
        server.tool(typed)
    message = str(info.value)
    assert "tool 'typed', parameter 'value'" in message
    assert f"type {kind}" in message and "only string, integer or boolean" in message


def test_an_optional_header_parameter_is_refused_with_a_hint() -> None:
    server = MCPServer(name="h", version="1")
    with pytest.raises(ConfigurationError) as info:

        @server.tool
        async def maybe(region: Annotated[str | None, McpHeader("Region")] = None) -> str:
            return region or ""

    message = str(info.value)
    assert "tool 'maybe', parameter 'region'" in message
    assert "not a union" in message and "give it a default" in message


def test_a_missing_type_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="type None"):
        raw_tool(props(kind={"enum": ["a", "b"], "x-mcp-header": "Kind"}))


def test_integers_must_stay_in_the_ieee754_safe_range() -> None:
    big = 2**53
    with pytest.raises(ConfigurationError, match=f"integer {big}, outside the safe range"):
        raw_tool(props(n={"type": "integer", "default": big, "x-mcp-header": "N"}))
    assert (
        header_problems("t", props(n={"type": "integer", "default": big - 1, "x-mcp-header": "N"}))
        == []
    )


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "object", "x-mcp-header": "Root", "properties": {}}, "'/'"),
        (props(xs={"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}), "items"),
        (
            props(x={"anyOf": [{"type": "string", "x-mcp-header": "X"}, {"type": "integer"}]}),
            "anyOf",
        ),
        (props(x={"oneOf": [{"type": "string", "x-mcp-header": "X"}]}), "oneOf"),
        (props(x={"allOf": [{"type": "string", "x-mcp-header": "X"}]}), "allOf"),
        (props(x={"not": {"type": "string", "x-mcp-header": "X"}}), "not"),
        (
            props(x={"if": {"type": "string"}, "then": {"type": "string", "x-mcp-header": "X"}}),
            "then",
        ),
        (
            {
                "type": "object",
                "$defs": {"Z": {"type": "string", "x-mcp-header": "Z"}},
                "properties": {"z": {"$ref": "#/$defs/Z"}},
            },
            "$defs",
        ),
    ],
)
def test_annotations_off_the_properties_chain_are_refused(
    schema: dict[str, Any], where: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        raw_tool(schema, name="nested")
    message = str(info.value)
    assert message.startswith("tool 'nested', parameter at '")
    assert where in message and "reachable from the root through 'properties' keys only" in message


class Location(BaseModel):
    zone: Annotated[str, McpHeader("Zone")]


def test_a_header_inside_a_nested_model_explains_the_ref() -> None:
    server = MCPServer(name="h", version="1")
    with pytest.raises(ConfigurationError) as info:

        @server.tool
        async def place(where: Location) -> str:
            return where.zone

    message = str(info.value)
    assert "tool 'place', parameter at '/$defs/Location/properties/zone'" in message
    assert "nested pydantic model is emitted as a $ref" in message


def test_a_field_json_schema_extra_is_checked_like_mcp_header() -> None:
    with pytest.raises(ConfigurationError, match="HTTP field-name token"):

        @MCPServer(name="h", version="1").tool
        async def bad(x: Annotated[str, Field(json_schema_extra={"x-mcp-header": "A B"})]) -> str:
            return x


def test_every_problem_of_a_tool_is_reported_at_once() -> None:
    schema = props(
        a={"type": "number", "x-mcp-header": "A"},
        b={"type": "string", "x-mcp-header": "a"},
        c={"type": "array", "items": {"x-mcp-header": "C"}},
    )
    problems = header_problems("many", schema)
    assert len(problems) == 3, problems
    with pytest.raises(ConfigurationError) as info:
        raw_tool(schema, name="many")
    assert all(p in str(info.value) for p in problems)


def test_the_server_constructor_collects_bad_tools_with_the_others() -> None:
    async def fine(x: str) -> str:
        return x

    async def clash(
        a: Annotated[str, McpHeader("Same")], b: Annotated[str, McpHeader("same")]
    ) -> str:
        return a

    with pytest.raises(RegistrationError) as info:
        MCPServer(name="h", version="1", tools={"fine": fine, "clash": clash})
    assert "tool 'clash', parameter 'b'" in str(info.value)
    assert "fine" not in str(info.value)
