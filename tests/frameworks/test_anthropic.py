"""MCP tools as Claude tools, and sampling answered by Claude, through the real ``anthropic`` SDK."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic import AsyncAnthropic
from anthropic.types import Message
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from pydantic import TypeAdapter

from mcpkit import InvalidParams, MCPClient
from mcpkit.frameworks.anthropic import anthropic_sampling_handler, anthropic_tools
from tests.frameworks.conftest import Provider
from tests.frameworks.test_openai import PNG, asking_server

CHECK_REQUEST = TypeAdapter(MessageCreateParamsNonStreaming)


def message(
    content: list[dict[str, Any]], stop: str, model: str = "claude-haiku"
) -> dict[str, Any]:
    """A Messages API response as the API sends it (checked with the SDK's own type)."""
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return Message.model_validate(body).model_dump(mode="json", exclude_none=True)


def client(provider: Provider) -> AsyncAnthropic:
    return AsyncAnthropic(base_url=provider.url.removesuffix("/v1"), api_key="test", max_retries=0)


async def test_a_tool_use_loop_through_the_sdk(mcp: MCPClient, provider: Provider) -> None:
    tools = await anthropic_tools(mcp)
    assert sorted(t["name"] for t in tools.definitions) == [
        "calc_add",
        "calc_files_read",
        "calc_refuse",
        "calc_shout",
    ]
    provider.answers = [
        message(
            [
                {"type": "text", "text": "Let me add."},
                {"type": "tool_use", "id": "tu_1", "name": "calc_add", "input": {"a": 4, "b": 5}},
                {"type": "tool_use", "id": "tu_2", "name": "calc_refuse", "input": {"reason": "x"}},
            ],
            "tool_use",
        ),
        message([{"type": "text", "text": "9"}], "end_turn"),
    ]
    claude = client(provider)
    messages: list[Any] = [{"role": "user", "content": "add 4 and 5"}]
    first = await claude.messages.create(
        model="claude-haiku", max_tokens=100, messages=messages, tools=tools.definitions
    )
    results = await tools.call_all(first.content)
    assert results == [
        {"type": "tool_result", "tool_use_id": "tu_1", "content": '{"sum":9}'},
        {"type": "tool_result", "tool_use_id": "tu_2", "content": "refused: x", "is_error": True},
    ]
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {"role": "user", "content": results},
    ]
    final = await claude.messages.create(
        model="claude-haiku", max_tokens=100, messages=messages, tools=tools.definitions
    )
    assert final.content[0].type == "text" and final.content[0].text == "9"
    for body in provider.requests:
        CHECK_REQUEST.validate_python(body)
    assert provider.requests[1]["messages"][-1] == {"role": "user", "content": results}


async def test_unknown_tools_and_bad_input_are_errors_the_model_reads(mcp: MCPClient) -> None:
    tools = await anthropic_tools(mcp)
    unknown = await tools.call({"type": "tool_use", "id": "a", "name": "calc_x", "input": {}})
    assert unknown["is_error"] is True and "no tool named 'calc_x'" in unknown["content"]
    bad = await tools.call({"type": "tool_use", "id": "b", "name": "calc_add", "input": [1]})
    assert bad == {
        "type": "tool_result",
        "tool_use_id": "b",
        "content": "the input of calc_add must be an object",
        "is_error": True,
    }


async def test_sampling_is_answered_by_claude(provider: Provider) -> None:
    provider.answers = [message([{"type": "text", "text": "A cat."}], "stop_sequence")]
    handler = anthropic_sampling_handler(
        client(provider), model="claude-sonnet", models=["claude-sonnet", "claude-haiku-mini"]
    )
    mcp = MCPClient(servers={"asker": {"server": asking_server(), "sampling_handler": handler}})
    async with mcp:
        result = await mcp.call_tool("asker", "describe", {})
    answer = json.loads(result["content"][0]["text"])
    assert answer == {
        "role": "assistant",
        "content": {"type": "text", "text": "A cat."},
        "model": "claude-haiku",
        "stopReason": "stopSequence",
    }
    (body,) = provider.requests
    CHECK_REQUEST.validate_python(body)
    assert body["model"] == "claude-haiku-mini"  # the hint "mini" picked it
    assert (body["system"], body["max_tokens"]) == ("Be brief.", 50)
    assert body["stop_sequences"] == ["END"]
    assert "temperature" not in body  # the Messages API has none any more
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ],
    }


async def test_an_unsupported_block_is_refused_with_a_clear_error(provider: Provider) -> None:
    handler = anthropic_sampling_handler(client(provider), model="claude-sonnet")
    params = {
        "messages": [
            {"role": "user", "content": {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}}
        ],
        "maxTokens": 5,
    }
    with pytest.raises(InvalidParams, match="cannot send a 'audio' block to Anthropic"):
        await handler(params)
    assert provider.requests == []
