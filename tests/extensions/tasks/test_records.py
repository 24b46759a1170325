"""Task records: their invariants, their stored form, and their wire forms checked against
the ext-tasks JSON schema (tests/extensions/tasks/schema/)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mcpkit.extensions.tasks.records import (
    TaskRecord,
    create_task_result,
    detailed_task_wire,
    get_task_result,
    iso_time,
    new_task_id,
    task_wire,
)
from mcpkit.extensions.tasks.states import IllegalTransition, TaskStatus
from tests.extensions.tasks.conformance import ASK, ERROR, RESULT

SCHEMA = Path(__file__).parent / "schema" / "schema.json"


@functools.cache
def validator(definition: str) -> Draft202012Validator:
    defs = json.loads(SCHEMA.read_text())["$defs"]
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": defs})


def valid(definition: str, instance: dict[str, Any]) -> None:
    errors = [e.message for e in validator(definition).iter_errors(instance)]
    assert not errors, (definition, instance, errors)


def payload(target: TaskStatus) -> dict[str, Any]:
    return {
        "input_requests": ASK if target is TaskStatus.INPUT_REQUIRED else None,
        "result": RESULT if target is TaskStatus.COMPLETED else None,
        "error": ERROR if target is TaskStatus.FAILED else None,
    }


def test_the_create_result_is_flat_and_carries_no_payload() -> None:
    record = TaskRecord.new(ttl_ms=60_000, poll_interval_ms=500, owner="alice", node_id="n1")
    wire = create_task_result(record)
    valid("CreateTaskResult", wire)
    assert wire["resultType"] == "task" and wire["taskId"] == record.task_id
    assert set(wire) == {
        "resultType",
        "taskId",
        "status",
        "createdAt",
        "lastUpdatedAt",
        "ttlMs",
        "pollIntervalMs",
    }


def test_a_null_ttl_is_on_the_wire_and_an_absent_poll_interval_is_not() -> None:
    wire = task_wire(TaskRecord.new(ttl_ms=None))
    valid("Task", wire)
    assert wire["ttlMs"] is None and "pollIntervalMs" not in wire
    assert "statusMessage" not in wire


@pytest.mark.parametrize("target", list(TaskStatus))
def test_each_status_gets_its_detailed_variant_and_validates(target: TaskStatus) -> None:
    record = TaskRecord.new(ttl_ms=60_000, status_message="hello").moved(
        target, now=2e9, **payload(target)
    )
    wire = get_task_result(record)
    valid("GetTaskResult", wire)
    valid("TaskStatusNotificationParams", detailed_task_wire(record))
    variant = {
        TaskStatus.WORKING: "WorkingTask",
        TaskStatus.INPUT_REQUIRED: "InputRequiredTask",
        TaskStatus.COMPLETED: "CompletedTask",
        TaskStatus.FAILED: "FailedTask",
        TaskStatus.CANCELLED: "CancelledTask",
    }[target]
    valid(variant, detailed_task_wire(record))
    assert wire["resultType"] == "complete"
    extras = {"inputRequests", "result", "error"} & set(wire)
    assert extras == {
        TaskStatus.INPUT_REQUIRED: {"inputRequests"},
        TaskStatus.COMPLETED: {"result"},
        TaskStatus.FAILED: {"error"},
    }.get(target, set())
    assert "owner" not in json.dumps(wire) and "node" not in json.dumps(wire)


def test_times_are_iso_8601_utc_to_the_millisecond() -> None:
    assert iso_time(0.0) == "1970-01-01T00:00:00.000Z"
    assert iso_time(1764066600.1234) == "2025-11-25T10:30:00.123Z"
    record = TaskRecord.new(ttl_ms=None, now=1764066600.5)
    assert task_wire(record)["createdAt"] == "2025-11-25T10:30:00.500Z"


def test_task_ids_are_long_random_and_url_safe() -> None:
    ids = {new_task_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{24}", i) for i in ids)


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"status": TaskStatus.COMPLETED}, "result"),
        ({"status": TaskStatus.FAILED}, "error"),
        ({"status": TaskStatus.INPUT_REQUIRED}, "input_requests"),
        ({"status": TaskStatus.INPUT_REQUIRED, "input_requests": {}}, "input_requests"),
        ({"result": RESULT}, "result"),
        ({"status": TaskStatus.FAILED, "error": {"code": "x", "message": "m"}}, "JSON-RPC"),
        ({"status": TaskStatus.FAILED, "error": RESULT}, "isError"),
        ({"ttl_ms": 0}, "ttl_ms"),
        ({"ttl_ms": 1.5}, "ttl_ms"),
        ({"poll_interval_ms": -1}, "poll_interval_ms"),
        ({"task_id": ""}, "task_id"),
    ],
)
def test_a_record_refuses_a_payload_that_does_not_match_its_status(
    changes: dict[str, Any], why: str
) -> None:
    fields: dict[str, Any] = {
        "task_id": "t",
        "created_at": 1.0,
        "updated_at": 1.0,
        "ttl_ms": 1000,
        **changes,
    }
    with pytest.raises(ValueError, match=why):
        TaskRecord(**fields)


def test_a_move_drops_the_old_message_on_a_status_change_and_never_goes_back_in_time() -> None:
    record = TaskRecord.new(ttl_ms=None, status_message="step 3", now=100.0)
    asking = record.moved(TaskStatus.INPUT_REQUIRED, now=50.0, input_requests=ASK)
    assert asking.status_message is None and asking.updated_at == 100.0
    with pytest.raises(IllegalTransition):
        asking.moved(TaskStatus.CANCELLED, now=200.0).moved(TaskStatus.WORKING, now=300.0)


@given(
    st.lists(st.sampled_from(list(TaskStatus)), max_size=12),
    st.one_of(st.none(), st.integers(1, 2**53 - 1)),
    st.one_of(st.none(), st.text(max_size=20)),
)
def test_any_reachable_record_round_trips_and_validates(
    path: list[TaskStatus], ttl_ms: int | None, owner: str | None
) -> None:
    record = TaskRecord.new(ttl_ms=ttl_ms, owner=owner, node_id="n", now=1_700_000_000.25)
    for step, target in enumerate(path):
        try:
            record = record.moved(target, now=1_700_000_001.0 + step, **payload(target))
        except IllegalTransition:
            assert record.terminal
        assert TaskRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
        valid("GetTaskResult", get_task_result(record))


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"task_id": "t"},
        {"task_id": "t", "status": "done", "created_at": 1, "updated_at": 1, "ttl_ms": None},
        {"task_id": "t", "status": "working", "created_at": "1", "updated_at": 1, "ttl_ms": 1},
        {
            "task_id": "t",
            "status": "working",
            "created_at": 1,
            "updated_at": 1,
            "ttl_ms": 1,
            "owner": 5,
        },
        {
            "task_id": "t",
            "status": "completed",
            "created_at": 1,
            "updated_at": 1,
            "ttl_ms": 1,
            "result": [1],
        },
    ],
)
def test_a_stored_form_that_is_not_a_record_is_a_value_error(data: object) -> None:
    with pytest.raises(ValueError):
        TaskRecord.from_json(data)
