"""The task lifecycle (SEP-2663) as a table: statuses, allowed moves, terminal states.

Rules (ext-tasks ``specification/draft/tasks.md``, "Task Status" and its state diagram):

1. A task starts ``working`` ("the seed state ..., typically (though not necessarily)
   with ``status: "working"``"); mcpkit always seeds ``working``.
2. ``working`` may move to ``input_required`` or to any terminal status.
3. ``input_required`` may move back to ``working`` or to any terminal status.
4. ``completed``, ``failed`` and ``cancelled`` are terminal: "once reached, the task's
   state does not change" (the extension's overview). No move leaves them, not even to
   the same status: a second ``completed`` would replace a result a client may already
   have read.
5. A non-terminal status may "move" to itself: that is an update of the task without a
   change of status (a new ``statusMessage`` while ``working``, new outstanding
   ``inputRequests`` after a partial ``tasks/update`` while ``input_required``), and it
   bumps ``lastUpdatedAt`` as any change does.
6. ``failed`` is only for a JSON-RPC error; a tool result with ``isError: true`` is
   ``completed`` (the spec's "Task Execution Errors"): the table cannot know this, the
   record (:mod:`.records`) checks that a ``failed`` task carries a JSON-RPC error.

Cancellation is cooperative and eventually consistent: ``tasks/cancel`` on a terminal
task is acknowledged and changes nothing, and a task whose work finished first may end
``completed`` after a cancel. That is the extension's decision, made with
:func:`is_terminal`; the table only says which moves exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from ...errors import MCPKitError

__all__ = [
    "INITIAL",
    "TERMINAL",
    "TRANSITIONS",
    "IllegalTransition",
    "TaskStatus",
    "check_transition",
    "is_terminal",
]


class TaskStatus(StrEnum):
    """A task's ``status`` on the wire (ext-tasks ``TaskStatus``)."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: The status every task is created in (rule 1).
INITIAL: Final = TaskStatus.WORKING

#: The statuses no move leaves (rule 4).
TERMINAL: Final[frozenset[TaskStatus]] = frozenset(
    {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}
)

#: From each status, the statuses it may move to (rules 2 to 5).
TRANSITIONS: Final[Mapping[TaskStatus, frozenset[TaskStatus]]] = MappingProxyType(
    {
        TaskStatus.WORKING: frozenset({TaskStatus.WORKING, TaskStatus.INPUT_REQUIRED} | TERMINAL),
        TaskStatus.INPUT_REQUIRED: frozenset(
            {TaskStatus.INPUT_REQUIRED, TaskStatus.WORKING} | TERMINAL
        ),
        TaskStatus.COMPLETED: frozenset(),
        TaskStatus.FAILED: frozenset(),
        TaskStatus.CANCELLED: frozenset(),
    }
)


class IllegalTransition(MCPKitError):
    """A move the lifecycle does not allow (from a terminal status, as a rule).

    ``task_id`` (when known), ``current`` and ``target`` say which. A store raises it
    also when a compare-and-set finds another status than the one expected: another
    node or request moved the task first.
    """

    def __init__(
        self,
        current: TaskStatus,
        target: TaskStatus,
        *,
        task_id: str | None = None,
        expected: TaskStatus | None = None,
    ) -> None:
        self.current = current
        self.target = target
        self.task_id = task_id
        self.expected = expected
        which = f"task {task_id}" if task_id is not None else "a task"
        if expected is not None and expected != current:
            why = f"it is {current.value}, not {expected.value} as expected (moved meanwhile)"
        elif current in TERMINAL:
            why = f"{current.value} is terminal"
        else:
            why = f"{current.value} cannot move to {target.value}"
        super().__init__(f"{which} cannot become {target.value}: {why}")


def is_terminal(status: TaskStatus) -> bool:
    """Whether no move leaves ``status`` (rule 4)."""
    return status in TERMINAL


def check_transition(
    current: TaskStatus,
    target: TaskStatus,
    *,
    expected: TaskStatus | None = None,
    task_id: str | None = None,
) -> TaskStatus:
    """``target`` when the table allows ``current`` -> ``target`` (and ``current`` is
    ``expected``, when given), else :class:`IllegalTransition`. Pure: no clock, no store."""
    if expected is not None and expected != current:
        raise IllegalTransition(current, target, task_id=task_id, expected=expected)
    if target not in TRANSITIONS[current]:
        raise IllegalTransition(current, target, task_id=task_id)
    return target
