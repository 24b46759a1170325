"""A task's record (:class:`TaskRecord`), its stored form and its wire forms (SEP-2663).

The record is what a :class:`~.store.TaskStore` keeps: the fields of the spec's ``Task``
plus what only the server knows (who may see the task, which node runs it) and the
status-specific payload of ``DetailedTask`` (outstanding ``inputRequests``, the final
``result`` or JSON-RPC ``error``). Records are frozen; a change makes a new one
(:meth:`TaskRecord.moved`), checked against the lifecycle table (:mod:`.states`).

Two plain-dict forms, kept apart on purpose:

* :meth:`TaskRecord.to_json` / :meth:`TaskRecord.from_json`: the stored form, every
  field, times as Unix seconds (floats round-trip exactly through JSON);
* :func:`task_wire`, :func:`detailed_task_wire`, :func:`create_task_result`,
  :func:`get_task_result`: the wire forms of ext-tasks ``schema/draft/schema.json``
  (``Task``, ``DetailedTask``, ``CreateTaskResult``, ``GetTaskResult``; the
  ``notifications/tasks`` params are a ``DetailedTask``). They never carry the owner or
  the node: those are the server's business.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import EllipsisType
from typing import Any, Final

from .states import INITIAL, TERMINAL, TaskStatus, check_transition

__all__ = [
    "EXTENSION_ID",
    "TaskRecord",
    "create_task_result",
    "detailed_task_wire",
    "get_task_result",
    "iso_time",
    "new_task_id",
    "task_wire",
]

#: The extension's identifier (its ``capabilities.extensions`` key).
EXTENSION_ID: Final = "io.modelcontextprotocol/tasks"

#: Bytes of randomness in a task id: the id may serve as a bearer token for the task's
#: state, so it "MUST" be unguessable (ext-tasks, Security Considerations); 144 bits.
TASK_ID_BYTES: Final = 18

#: The largest integer the schema allows for ``ttlMs`` and ``pollIntervalMs``
#: (``Number.MAX_SAFE_INTEGER``).
_MAX_INT: Final = 2**53 - 1


def new_task_id() -> str:
    """A fresh task id: 24 URL-safe characters from the system's CSPRNG."""
    return secrets.token_urlsafe(TASK_ID_BYTES)


def iso_time(t: float) -> str:
    """``t`` (Unix seconds) as the ISO 8601 UTC timestamp of ``createdAt`` and
    ``lastUpdatedAt``, to the millisecond: ``2025-11-25T10:30:00.123Z``."""
    moment = datetime.fromtimestamp(t, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _positive_ms(name: str, value: object, *, nullable: bool) -> None:
    if value is None and nullable:
        return
    if type(value) is not int or not 0 < value <= _MAX_INT:
        raise ValueError(f"{name} must be a positive integer of milliseconds, not {value!r}")


def _json_error(error: Mapping[str, Any]) -> None:
    """A JSON-RPC error object: an integer ``code`` and a string ``message``."""
    if type(error.get("code")) is not int or not isinstance(error.get("message"), str):
        raise ValueError(
            "a failed task's error must be a JSON-RPC error (integer code, string message), "
            f"not {dict(error)!r}; a tool result with isError is a completed task's result"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    """One task as stored. Times are Unix seconds (``time.time()``).

    ``owner``
        Who may read and steer the task, as the server decides it: the authenticated
        principal when there is one, else the session; None when the (unguessable) id
        alone is the bearer token. The spec requires an authorization check on every
        task request ("Auth binding"); the store keeps the key, the extension checks it.
    ``node_id``
        The node running the task. Its liveness is a stamp per node, not per task (one
        write per node and period whatever the number of tasks): a store's
        ``heartbeat`` / ``sweep`` fail the tasks of a node that stopped beating.
    ``input_requests``, ``result``, ``error``
        The payload of the status, present exactly when the status is
        ``input_required`` (non-empty), ``completed`` and ``failed`` respectively.
        Treat them as immutable: records are shared.
    """

    task_id: str
    status: TaskStatus = INITIAL
    created_at: float
    updated_at: float
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    status_message: str | None = None
    owner: str | None = None
    node_id: str | None = None
    input_requests: Mapping[str, Any] | None = None
    result: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.task_id, str) or not self.task_id:
            raise ValueError(f"task_id must be a non-empty string, not {self.task_id!r}")
        if not isinstance(self.status, TaskStatus):
            object.__setattr__(self, "status", TaskStatus(self.status))
        _positive_ms("ttl_ms", self.ttl_ms, nullable=True)
        _positive_ms("poll_interval_ms", self.poll_interval_ms, nullable=True)
        status = self.status
        if (status is TaskStatus.INPUT_REQUIRED) != bool(self.input_requests):
            raise ValueError(
                "input_requests (non-empty) belong to an input_required task, and only to it"
            )
        if (status is TaskStatus.COMPLETED) != (self.result is not None):
            raise ValueError("a result belongs to a completed task, and only to it")
        if (status is TaskStatus.FAILED) != (self.error is not None):
            raise ValueError("an error belongs to a failed task, and only to it")
        if self.error is not None:
            _json_error(self.error)

    @classmethod
    def new(
        cls,
        *,
        ttl_ms: int | None,
        poll_interval_ms: int | None = None,
        owner: str | None = None,
        node_id: str | None = None,
        status_message: str | None = None,
        task_id: str | None = None,
        now: float | None = None,
    ) -> TaskRecord:
        """A fresh ``working`` task with a new unguessable id (:func:`new_task_id`)."""
        t = time.time() if now is None else now
        return cls(
            task_id=new_task_id() if task_id is None else task_id,
            created_at=t,
            updated_at=t,
            ttl_ms=ttl_ms,
            poll_interval_ms=poll_interval_ms,
            status_message=status_message,
            owner=owner,
            node_id=node_id,
        )

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def expires_at(self) -> float | None:
        """When the TTL (counted from creation, as the spec says) runs out; None: never."""
        return None if self.ttl_ms is None else self.created_at + self.ttl_ms / 1000

    def expired(self, now: float) -> bool:
        expires_at = self.expires_at
        return expires_at is not None and now >= expires_at

    def moved(
        self,
        target: TaskStatus,
        *,
        now: float,
        status_message: str | EllipsisType | None = ...,
        input_requests: Mapping[str, Any] | None = None,
        result: Mapping[str, Any] | None = None,
        error: Mapping[str, Any] | None = None,
        expected: TaskStatus | None = None,
    ) -> TaskRecord:
        """This task moved to ``target`` at ``now``: a new record, or
        :class:`~.states.IllegalTransition` when the table (or ``expected``) refuses.

        ``status_message``: the new message; left out (``...``), the old one is kept
        when the status stays the same and dropped when it changes (a progress line of
        ``working`` says nothing about ``completed``). The payload arguments are those
        of ``target`` (the record checks they match it)."""
        check_transition(self.status, target, expected=expected, task_id=self.task_id)
        if status_message is ...:
            message = self.status_message if target is self.status else None
        else:
            message = status_message
        return replace(
            self,
            status=target,
            updated_at=max(now, self.updated_at),
            status_message=message,
            input_requests=input_requests,
            result=result,
            error=error,
        )

    # -- the stored form ---------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Every field, as JSON types (the stored form; not the wire form)."""
        data: dict[str, Any] = {
            "task_id": self.task_id,
            "status": self.status.value,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "ttl_ms": self.ttl_ms,
        }
        for name in ("poll_interval_ms", "status_message", "owner", "node_id"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        for name in ("input_requests", "result", "error"):
            payload = getattr(self, name)
            if payload is not None:
                data[name] = dict(payload)
        return data

    @classmethod
    def from_json(cls, data: object) -> TaskRecord:
        """The record of :meth:`to_json`'s form; ``ValueError`` when it is not one."""
        if not isinstance(data, dict):
            raise ValueError(f"a task record is a JSON object, not {type(data).__name__}")
        try:
            kwargs: dict[str, Any] = {
                "task_id": data["task_id"],
                "status": TaskStatus(data["status"]),
                "created_at": data["created_at"],
                "updated_at": data["updated_at"],
                "ttl_ms": data["ttl_ms"],
            }
        except KeyError as exc:
            raise ValueError(f"a task record lacks {exc.args[0]!r}") from None
        for name in ("created_at", "updated_at"):
            if type(kwargs[name]) not in (int, float):
                raise ValueError(f"{name} must be a number, not {kwargs[name]!r}")
            kwargs[name] = float(kwargs[name])
        for name in ("status_message", "owner", "node_id"):
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a string, not {value!r}")
            kwargs[name] = value
        kwargs["poll_interval_ms"] = data.get("poll_interval_ms")
        for name in ("input_requests", "result", "error"):
            payload = data.get(name)
            if payload is not None and not isinstance(payload, dict):
                raise ValueError(f"{name} must be a JSON object, not {payload!r}")
            kwargs[name] = payload
        return cls(**kwargs)


# -- the wire forms (ext-tasks schema/draft/schema.json) ---------------------------------------


def task_wire(record: TaskRecord) -> dict[str, Any]:
    """The spec's ``Task``: ``taskId``, ``status``, ``statusMessage``?, ``createdAt``,
    ``lastUpdatedAt``, ``ttlMs`` (null: unlimited), ``pollIntervalMs``?."""
    task: dict[str, Any] = {"taskId": record.task_id, "status": record.status.value}
    if record.status_message is not None:
        task["statusMessage"] = record.status_message
    task["createdAt"] = iso_time(record.created_at)
    task["lastUpdatedAt"] = iso_time(record.updated_at)
    task["ttlMs"] = record.ttl_ms
    if record.poll_interval_ms is not None:
        task["pollIntervalMs"] = record.poll_interval_ms
    return task


def detailed_task_wire(record: TaskRecord) -> dict[str, Any]:
    """The spec's ``DetailedTask``: the ``Task`` with its status's payload inlined
    (``inputRequests``, ``result`` or ``error``). Also the ``notifications/tasks``
    params, which are "identical to what ``tasks/get`` would have returned"."""
    task = task_wire(record)
    if record.input_requests is not None:
        task["inputRequests"] = dict(record.input_requests)
    if record.result is not None:
        task["result"] = dict(record.result)
    if record.error is not None:
        task["error"] = dict(record.error)
    return task


def create_task_result(record: TaskRecord) -> dict[str, Any]:
    """The spec's ``CreateTaskResult``: flat, ``resultType: "task"`` and the ``Task``,
    never a payload (the conformance suite's ``tasks-wire-fields``)."""
    return {"resultType": "task", **task_wire(record)}


def get_task_result(record: TaskRecord) -> dict[str, Any]:
    """The spec's ``GetTaskResult``: ``resultType: "complete"`` and the ``DetailedTask``."""
    return {"resultType": "complete", **detailed_task_wire(record)}
