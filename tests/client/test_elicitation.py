"""Client-side completion of elicitation answers (2025-11-25, SEP-1034 defaults)."""

from __future__ import annotations

import pytest

from mcpkit.client.elicitation import apply_defaults, normalize_elicit_result

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "tags": {"type": "array", "items": {"type": "string"}, "default": ["a"]},
        "note": {"type": "string"},
    },
}


def test_defaults_fill_only_missing_fields() -> None:
    assert apply_defaults(SCHEMA, {"name": "Ada"}) == {"name": "Ada", "tags": ["a"]}
    assert apply_defaults(SCHEMA, None) == {"name": "John Doe", "tags": ["a"]}
    filled = apply_defaults(SCHEMA, {})
    filled["tags"].append("b")
    assert SCHEMA["properties"]["tags"]["default"] == ["a"]  # type: ignore[index]


def test_non_accept_and_url_mode_carry_no_content() -> None:
    params = {"message": "?", "requestedSchema": SCHEMA}
    assert normalize_elicit_result(params, {"action": "cancel", "content": {"x": 1}}) == {
        "action": "cancel"
    }
    url = {"mode": "url", "message": "?", "url": "https://x", "elicitationId": "1"}
    assert normalize_elicit_result(url, {"action": "accept"}) == {"action": "accept"}
    assert normalize_elicit_result(params, {"action": "accept"})["content"]["name"] == "John Doe"


def test_bad_handler_answers_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown action"):
        normalize_elicit_result({}, {"action": "maybe"})
    with pytest.raises(TypeError, match="must return a dict"):
        normalize_elicit_result({}, "accept")
