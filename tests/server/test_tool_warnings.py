"""Warnings at registration for a tool without a description or with untyped parameters."""

from __future__ import annotations

import logging

import pytest

from mcpkit import MCPServer
from mcpkit.server.tool_warnings import LOGGER, unclear_parts
from mcpkit.server.tools import create_tool


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_an_undescribed_tool_with_untyped_parameters_gets_one_line_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    server = MCPServer(name="w", version="1")

    @server.tool
    def add(a, b: int, c=3) -> int:  # type: ignore[no-untyped-def]
        return b

    assert _messages(caplog) == [
        "tool 'add' has no description: models choose tools by it "
        "(add a docstring or description=...)",
        "tool 'add' has untyped parameter(s) a, c: models guess their values "
        "(annotate them, e.g. city: str)",
    ]
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_a_described_typed_tool_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)

    def forecast(city: str, days: int = 3, tags: list[str] | None = None) -> str:
        """The weather in a city."""
        return city

    MCPServer(name="w", version="1", tools=[forecast])
    assert _messages(caplog) == []


def test_tools_given_to_the_constructor_are_checked_too(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)

    def bare(x: int) -> int:
        return x

    MCPServer(name="w", version="1", tools=[bare])
    assert _messages(caplog) == [
        "tool 'bare' has no description: models choose tools by it "
        "(add a docstring or description=...)"
    ]


def test_a_mounted_copy_of_a_tool_is_not_warned_about_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    child = MCPServer(name="child", version="1")

    @child.tool
    def ping(x: int) -> int:
        return x

    parent = MCPServer(name="parent", version="1")
    parent.mount(child, namespace="kid")
    assert len(parent.tools) == 1  # the copy is there, under its new name
    assert len(_messages(caplog)) == 1


def test_the_logger_level_silences_them(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger=LOGGER)
    server = MCPServer(name="w", version="1")

    @server.tool
    def quiet(a):  # type: ignore[no-untyped-def]
        return a

    assert _messages(caplog) == []


def test_a_json_schema_tool_is_checked_by_its_schema() -> None:
    async def run(**_: object) -> str:
        return ""

    loose = create_tool(
        id="loose",
        description="Loose.",
        input_schema={"type": "object", "properties": {"q": {"description": "a query"}}},
        execute=run,
    )
    assert unclear_parts(loose) == [
        "tool 'loose' has untyped parameter(s) q: models guess their values "
        "(annotate them, e.g. city: str)"
    ]
    typed = create_tool(
        id="typed",
        description="Typed.",
        input_schema={
            "type": "object",
            "properties": {"q": {"type": "string"}, "mode": {"enum": ["a", "b"]}},
        },
        execute=run,
    )
    assert unclear_parts(typed) == []
