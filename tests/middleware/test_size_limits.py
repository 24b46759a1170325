"""Per-tool size limits on arguments (refused before the tool runs) and results."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit.errors import ConfigurationError, RemoteError
from mcpkit.middleware import size_limits
from mcpkit.testing import connect
from tests.middleware.conftest import STATELESS, demo


def limited_server(**options: Any) -> Any:
    server = demo(middleware=[size_limits(**options)])
    ran: list[str] = []
    server.ran = ran

    @server.tool
    async def big(n: int) -> str:
        """Return n bytes."""
        ran.append("big")
        return "x" * n

    return server


@pytest.mark.parametrize("options", [{}, STATELESS])
async def test_arguments_over_the_limit_are_refused_before_the_tool_runs(
    options: dict[str, Any],
) -> None:
    server = limited_server(max_arguments=50)
    async with connect(server, **options) as client:
        await client.call_tool("echo", {"text": "x" * 30})
        with pytest.raises(RemoteError) as caught:
            await client.call_tool("echo", {"text": "x" * 60})
    error = caught.value
    assert error.code == -32602
    assert "over its limit of 50" in error.message and "'echo'" in error.message
    assert error.data == {"tool": "echo", "size": 71, "limit": 50}  # {"text":"x…x"}


async def test_a_result_over_the_limit_becomes_a_tool_error_after_the_tool_ran() -> None:
    server = limited_server(max_result=200)
    async with connect(server) as client:
        small = await client.call_tool("big", {"n": 10})
        assert "isError" not in small
        result = await client.call_tool("big", {"n": 500})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "over its limit of 200" in text and "ask for less" in text
    assert server.ran == ["big", "big"]


async def test_per_tool_limits_override_the_defaults() -> None:
    server = limited_server(max_result=100, per_tool={"big": (None, 10_000), "other": (1, None)})
    async with connect(server) as client:
        assert "isError" not in await client.call_tool("big", {"n": 5000})
        with pytest.raises(RemoteError):
            await client.call_tool("other", {"unused": 1})
        await client.list_tools()  # other methods are not limited


def test_options_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="max_arguments"):
        size_limits(max_arguments=0)
    with pytest.raises(ConfigurationError, match="per_tool"):
        size_limits(per_tool={"x": 5})  # type: ignore[dict-item]
