"""The task lifecycle table: its shape, and (property-based) that no path leaves a
terminal status and every move either applies or raises IllegalTransition."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpkit.extensions.tasks.states import (
    INITIAL,
    TERMINAL,
    TRANSITIONS,
    IllegalTransition,
    TaskStatus,
    check_transition,
    is_terminal,
)

statuses = st.sampled_from(list(TaskStatus))


def test_the_statuses_are_the_specs_five_wire_values() -> None:
    assert {s.value for s in TaskStatus} == {
        "working",
        "input_required",
        "completed",
        "failed",
        "cancelled",
    }
    assert INITIAL is TaskStatus.WORKING


def test_the_table_has_a_row_per_status_and_the_terminal_rows_are_empty() -> None:
    assert set(TRANSITIONS) == set(TaskStatus)
    assert TERMINAL == {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}
    for status, targets in TRANSITIONS.items():
        assert (not targets) == is_terminal(status)


def test_the_diagram_moves_are_allowed() -> None:
    # ext-tasks specification/draft/tasks.md, the state diagram.
    for source in (TaskStatus.WORKING, TaskStatus.INPUT_REQUIRED):
        for target in TaskStatus:
            assert check_transition(source, target) is target


def test_a_terminal_status_refuses_even_itself_with_a_message_saying_why() -> None:
    with pytest.raises(IllegalTransition, match=r"task t1 cannot become completed: completed"):
        check_transition(TaskStatus.COMPLETED, TaskStatus.COMPLETED, task_id="t1")


def test_a_move_from_an_unexpected_status_is_refused_even_when_the_table_allows_it() -> None:
    with pytest.raises(IllegalTransition, match="not working as expected") as caught:
        check_transition(
            TaskStatus.INPUT_REQUIRED, TaskStatus.CANCELLED, expected=TaskStatus.WORKING
        )
    assert caught.value.current is TaskStatus.INPUT_REQUIRED
    assert caught.value.expected is TaskStatus.WORKING


@given(st.lists(statuses, max_size=30))
def test_no_path_leaves_a_terminal_status(path: list[TaskStatus]) -> None:
    current = INITIAL
    reached_terminal = False
    for target in path:
        try:
            current = check_transition(current, target)
        except IllegalTransition as exc:
            assert exc.current is current and exc.target is target
            assert is_terminal(current)  # only terminal rows refuse anything
            continue
        assert not reached_terminal, "a move applied after a terminal status"
        reached_terminal = is_terminal(current)


@given(statuses, statuses, st.one_of(st.none(), statuses))
def test_every_move_applies_as_the_table_says_or_raises(
    current: TaskStatus, target: TaskStatus, expected: TaskStatus | None
) -> None:
    allowed = target in TRANSITIONS[current] and expected in (None, current)
    try:
        got = check_transition(current, target, expected=expected)
    except IllegalTransition:
        assert not allowed
    else:
        assert allowed and got is target
