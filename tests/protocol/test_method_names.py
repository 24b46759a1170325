"""The table of the specification's method names matches the published schemas."""

from __future__ import annotations

import json

from mcpkit.protocol.method_names import SPEC_METHODS, reserved_method_problem
from tests import schema


def _schema_methods() -> dict[str, str]:
    """Method constant -> the first revision whose schema defines it."""
    first: dict[str, str] = {}
    for revision in schema.revisions():  # oldest first
        raw = json.loads((schema.schema_dir() / revision / "schema.json").read_text("utf-8"))
        for definition in (raw.get("$defs") or raw["definitions"]).values():
            if not isinstance(definition, dict):
                continue
            const = definition.get("properties", {}).get("method", {}).get("const")
            if isinstance(const, str):
                first.setdefault(const, revision)
    return first


def test_the_table_is_every_method_of_every_schema_with_its_first_revision() -> None:
    assert dict(SPEC_METHODS) == _schema_methods()


def test_spec_names_and_rpc_names_are_refused_and_others_are_not() -> None:
    problem = reserved_method_problem("initialize")
    assert problem is not None and "2024-11-05" in problem
    assert reserved_method_problem("notifications/initialized") is not None
    rpc = reserved_method_problem("rpc.discover")
    assert rpc is not None and "JSON-RPC" in rpc
    assert reserved_method_problem("com.example/echo") is None
    assert reserved_method_problem("tools/describe") is None


def test_a_reserved_prefix_is_allowed_only_to_its_extension() -> None:
    tasks = "io.modelcontextprotocol/tasks"
    for name in ("tasks/get", "tasks/update"):
        problem = reserved_method_problem(name)
        assert problem is not None and tasks in problem
        assert reserved_method_problem(name, claimant="com.example/other") is not None
        assert reserved_method_problem(name, claimant=tasks) is None
    # The owner of a prefix gains nothing outside it.
    assert reserved_method_problem("tools/call", claimant=tasks) is not None
