"""Tool annotations: ToolAnnotations, spec names, snake_case converted, other keys refused."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import MCPServer, ToolAnnotations, create_tool
from mcpkit.errors import RegistrationError
from mcpkit.testing import connect


async def listed_annotations(annotations: Any) -> Any:
    server = MCPServer("ann")

    @server.tool(annotations=annotations)
    def tool() -> str:
        return ""

    async with connect(server) as client:
        (listed,) = await client.list_tools()
    return listed.get("annotations")


async def test_snake_case_hints_are_sent_under_the_spec_names() -> None:
    sent = await listed_annotations(
        {"read_only_hint": True, "destructive_hint": False, "open_world_hint": True, "title": "T"}
    )
    assert sent == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "openWorldHint": True,
        "title": "T",
    }


async def test_spec_names_and_tool_annotations_pass_unchanged() -> None:
    assert await listed_annotations({"idempotentHint": True}) == {"idempotentHint": True}
    assert await listed_annotations(ToolAnnotations(read_only_hint=True)) == {"readOnlyHint": True}


async def test_a_foreign_annotations_model_is_read_as_its_dump() -> None:
    from mcp.types import ToolAnnotations as SDKAnnotations

    sent = await listed_annotations(SDKAnnotations(read_only_hint=True))
    assert sent == {"readOnlyHint": True}


@pytest.mark.parametrize("bad", [{"readonly": True}, {"readOnly": True}, {"x-custom": 1}])
def test_an_unknown_annotation_is_refused_naming_the_tool_and_key(bad: dict[str, Any]) -> None:
    server = MCPServer("ann")
    with pytest.raises(RegistrationError) as info:

        @server.tool(annotations=bad)
        def tool() -> str:
            return ""

    (problem,) = info.value.problems
    assert problem.startswith("tool 'tool': unknown annotation")
    assert repr(next(iter(bad))) in problem and "readOnlyHint" in problem


def test_create_tool_checks_annotations_too() -> None:
    with pytest.raises(RegistrationError, match="unknown annotation 'fast'"):
        create_tool(id="t", description="", execute=lambda: "", annotations={"fast": True})
    tool = create_tool(
        id="t", description="", execute=lambda: "", annotations={"read_only_hint": True}
    )
    assert tool.describe()["annotations"] == {"readOnlyHint": True}
