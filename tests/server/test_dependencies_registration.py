"""Depends(...) mistakes are registration errors naming the component and parameter."""

# No `from __future__ import annotations`: the dependencies below are local functions.

from typing import Annotated, Any

import pytest

from mcpkit import Context, Depends, MCPServer, RegistrationError
from mcpkit.server.dependencies import Dependency


def problems_of(register: Any) -> list[str]:
    with pytest.raises(RegistrationError) as info:
        register()
    return info.value.problems


def test_a_dependency_that_is_not_callable_is_refused() -> None:
    server = MCPServer(name="t", version="1")

    def register() -> None:
        @server.tool
        async def tool(x: Annotated[int, Depends(42)]) -> int:
            return x

    [problem] = problems_of(register)
    assert problem.startswith("tool 'tool': parameter 'x': Depends(42)")
    assert "int is not callable" in problem


def test_a_dependency_cycle_is_refused_and_shown() -> None:
    server = MCPServer(name="t", version="1")

    def first(x: Any = None) -> int:
        return 1

    def second(y: Annotated[int, Depends(first)]) -> int:
        return y

    # Close the loop after both exist: first -> second -> first.
    first.__defaults__ = (Depends(second),)

    def register() -> None:
        @server.tool
        async def tool(v: Annotated[int, Depends(first)]) -> int:
            return v

    [problem] = problems_of(register)
    assert problem.startswith("tool 'tool': parameter 'v'")
    assert "dependency cycle: " in problem
    assert problem.endswith(
        "first -> "
        "test_a_dependency_cycle_is_refused_and_shown.<locals>.second -> "
        "test_a_dependency_cycle_is_refused_and_shown.<locals>.first"
    )


def test_dependency_parameters_must_be_context_depends_or_defaulted() -> None:
    server = MCPServer(name="t", version="1")

    def needs_value(value: int, ctx: Context, region: str = "eu") -> int:
        return value

    def positional(ctx: Context, /) -> int:
        return 1

    def register() -> None:
        @server.prompt
        def prompt(a: Annotated[int, Depends(needs_value)], b: int = Depends(positional)) -> str:
            return "x"

    problems = problems_of(register)
    assert len(problems) == 2
    assert problems[0].startswith("prompt 'prompt': parameter 'a': dependency ")
    assert "needs_value: parameter 'value' has no default" in problems[0]
    assert "positional: parameter 'ctx' is positional-only" in problems[1]


def test_depends_without_a_function_needs_a_class_annotation() -> None:
    server = MCPServer(name="t", version="1")

    def register() -> None:
        @server.tool
        async def tool(x: Annotated[int | None, Depends()]) -> int:
            return 1

    [problem] = problems_of(register)
    assert "Depends() without a dependency needs a class annotation" in problem


def test_a_template_variable_cannot_name_a_dependency_parameter() -> None:
    server = MCPServer(name="t", version="1")

    def token() -> str:
        return "t"

    def register() -> None:
        @server.resource("notes://{note_id}/{token}")
        def note(note_id: str, token: str = Depends(token)) -> str:
            return note_id

    [problem] = problems_of(register)
    assert problem == (
        "resource 'notes://{note_id}/{token}': template variables ['token'] name Depends parameters"
    )


def test_depends_returns_a_marker_that_reads_like_the_call() -> None:
    def get_db() -> None:
        return None

    marker = Depends(get_db, use_cache=False)
    assert isinstance(marker, Dependency)
    assert marker == Dependency(get_db, use_cache=False)
    assert repr(marker).endswith("get_db, use_cache=False)")
    assert repr(Depends()) == "Depends()"


def test_a_sync_tool_on_the_loop_cannot_have_a_dependency_taking_the_context() -> None:
    server = MCPServer(name="t", version="1")

    def caller(ctx: Context) -> str:
        return "x"

    def register() -> None:
        @server.tool(run_in_thread=False)
        def tool(who: Annotated[str, Depends(caller)]) -> str:
            return who

    [problem] = problems_of(register)
    assert "run_in_thread=False cannot be combined with a Context parameter (its own or a" in (
        problem
    )
