"""The pieces the framework adapters share: sampling results and message roles."""

from __future__ import annotations

import pytest

from mcpkit.errors import InvalidParams
from mcpkit.frameworks.common import message_role, sampling_result


def test_a_known_finish_reason_becomes_the_spec_stop_reason() -> None:
    result = sampling_result("hi", model="m1", provider_reason="length")
    assert result == {
        "role": "assistant",
        "content": {"type": "text", "text": "hi"},
        "model": "m1",
        "stopReason": "maxTokens",
    }


def test_no_finish_reason_leaves_stop_reason_out() -> None:
    assert "stopReason" not in sampling_result("", model="m", provider_reason=None)


@pytest.mark.parametrize("role", ["system", "tool", None])
def test_only_user_and_assistant_messages_are_taken(role: object) -> None:
    with pytest.raises(InvalidParams, match="user or assistant"):
        message_role({"role": role, "content": {"type": "text", "text": "x"}})
    assert message_role({"role": "assistant"}) == "assistant"
