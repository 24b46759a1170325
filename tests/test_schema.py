"""The schema harness itself: it must catch what it promises to catch."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit.protocol.versions import REVISIONS
from tests.schema import (
    SchemaViolation,
    assert_valid_conversation,
    definition_for,
    revisions,
    validate_message,
)

TOOL = {"name": "t", "inputSchema": {"type": "object"}}


def tools_list(*tools: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": {"tools": list(tools)}}


@pytest.mark.parametrize(
    ("msg", "revision", "method", "definitions"),
    [
        (
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}},
            "2025-11-25",
            None,
            ["JSONRPCRequest", "CallToolRequest"],
        ),
        (
            {"jsonrpc": "2.0", "method": "notifications/progress"},
            "2024-11-05",
            None,
            ["JSONRPCNotification", "ProgressNotification"],
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "result": {}},
            "2025-06-18",
            "ping",
            ["JSONRPCResponse", "result:EmptyResult"],
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "result": {}},
            "2025-11-25",
            "tools/list",
            ["JSONRPCResultResponse", "result:ListToolsResult"],
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m"}},
            "2025-06-18",
            None,
            ["JSONRPCError"],
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m"}},
            "2025-11-25",
            None,
            ["JSONRPCErrorResponse"],
        ),
    ],
)
def test_messages_map_to_their_definitions(
    msg: Any, revision: str, method: str | None, definitions: list[str]
) -> None:
    assert definition_for(msg, revision, request_method=method) == definitions


def test_newer_fields_are_refused_in_older_revisions() -> None:
    leaky = {**TOOL, "title": "T", "outputSchema": {"type": "object"}}
    validate_message(tools_list(leaky), "2025-06-18", request_method="tools/list")
    with pytest.raises(SchemaViolation, match=r"outputSchema|title"):
        validate_message(tools_list(leaky), "2024-11-05", request_method="tools/list")
    with pytest.raises(SchemaViolation, match="icons"):
        validate_message(
            tools_list({**TOOL, "icons": []}), "2025-06-18", request_method="tools/list"
        )


def test_unknown_extension_fields_stay_allowed() -> None:
    prompt = {"jsonrpc": "2.0", "id": 1, "result": {"prompts": [{"name": "p", "version": "v2"}]}}
    validate_message(prompt, "2024-11-05", request_method="prompts/list")


def test_results_are_checked_against_the_request_method() -> None:
    bad = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text"}]}}
    validate_message(bad, "2025-11-25")  # as a generic result it is fine
    with pytest.raises(SchemaViolation, match="CallToolResult"):
        validate_message(bad, "2025-11-25", request_method="tools/call")


def test_unknown_methods_are_refused() -> None:
    with pytest.raises(SchemaViolation, match="no request method"):
        validate_message(
            {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {}}, "2025-03-26"
        )
    with pytest.raises(SchemaViolation, match="no notification method"):
        validate_message({"jsonrpc": "2.0", "method": "notifications/nope"}, "2025-11-25")


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_error_with_null_id_is_accepted_but_still_checked(revision: str) -> None:
    validate_message(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}, revision
    )
    with pytest.raises(SchemaViolation):
        validate_message(
            {"jsonrpc": "2.0", "id": None, "error": {"code": "x", "message": "x"}}, revision
        )
    with pytest.raises(SchemaViolation):
        validate_message(
            {"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "x"}, "extra": 1},
            revision,
        )


def test_conversations_pair_responses_with_requests_by_direction() -> None:
    traffic = [
        ("sent", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, True),
        ("received", {"jsonrpc": "2.0", "id": 1, "method": "roots/list"}, True),
        ("sent", {"jsonrpc": "2.0", "id": 1, "result": {"roots": []}}, True),
        ("received", tools_list(TOOL), True),
    ]
    assert assert_valid_conversation(traffic, "2025-11-25") == 4
    # The same answers swapped: each is now checked against the other result type.
    swapped = [
        traffic[0],
        traffic[1],
        ("sent", tools_list(TOOL), True),
        ("received", traffic[2][1], True),
    ]
    with pytest.raises(SchemaViolation) as info:
        assert_valid_conversation(swapped, "2025-11-25")
    assert "2 message(s)" in str(info.value)


def test_unchecked_messages_are_skipped_but_still_paired() -> None:
    traffic = [
        ("sent", {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": 5}}, False),
        ("received", {"jsonrpc": "2.0", "id": 7, "result": {"content": "nope"}}, True),
    ]
    with pytest.raises(SchemaViolation, match="CallToolResult"):
        assert_valid_conversation(traffic, "2025-11-25")


def test_the_suite_carries_a_schema_for_every_revision_mcpkit_speaks() -> None:
    assert set(REVISIONS) <= set(revisions())
