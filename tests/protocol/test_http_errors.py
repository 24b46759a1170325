"""The HTTP status and headers of JSON-RPC errors: 429 + Retry-After for a rate limit."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit.protocol.http_errors import TOO_MANY_REQUESTS, error_answer


def error(code: Any, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": "m"}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": 1, "error": err}


@pytest.mark.parametrize(
    ("after", "header"),
    [(0, b"0"), (0.2, b"1"), (2, b"2"), (2.0001, b"3"), (3600, b"3600")],
)
def test_a_rate_limit_is_429_with_retry_after_in_whole_seconds_rounded_up(
    after: float, header: bytes
) -> None:
    status, headers = error_answer(error(TOO_MANY_REQUESTS, {"retryAfter": after}))
    assert status == 429
    assert headers == ((b"retry-after", header),)


@pytest.mark.parametrize("after", [None, -1, "5", True, float("nan"), float("inf"), [1]])
def test_a_rate_limit_without_a_usable_wait_has_no_retry_after(after: Any) -> None:
    data = None if after is None else {"retryAfter": after}
    assert error_answer(error(TOO_MANY_REQUESTS, data)) == (429, ())


@pytest.mark.parametrize("response", [{"result": {}}, error(-32603), error("-31429"), error(None)])
def test_other_answers_keep_the_default_status(response: dict[str, Any]) -> None:
    assert error_answer(response) == (200, ())
    assert error_answer(response, 404) == (404, ())
