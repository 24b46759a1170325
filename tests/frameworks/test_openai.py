"""MCP tools in OpenAI function calling, and sampling answered by OpenAI, through the real ``openai`` SDK."""

from __future__ import annotations

import base64
import json
from typing import Any

from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import TypeAdapter

from mcpkit import Context, MCPClient, MCPServer
from mcpkit.frameworks.openai import openai_sampling_handler, openai_tools
from tests.frameworks.conftest import Provider

CHECK_REQUEST = TypeAdapter(CompletionCreateParamsNonStreaming)
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


def completion(message: dict[str, Any], finish: str, model: str = "gpt-4o-mini") -> dict[str, Any]:
    """A chat completion as the API sends it (checked with the SDK's own type)."""
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish, "message": message, "logprobs": None}],
    }
    return ChatCompletion.model_validate(body).model_dump(mode="json", exclude_none=True)


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


async def test_definitions_name_every_tool_as_openai_accepts(mcp: MCPClient) -> None:
    tools = await openai_tools(mcp)
    names = [d["function"]["name"] for d in tools.definitions]
    assert sorted(names) == ["calc_add", "calc_files_read", "calc_refuse", "calc_shout"]
    add = next(d for d in tools.definitions if d["function"]["name"] == "calc_add")
    assert add["function"]["description"] == "Add two numbers."
    assert add["function"]["parameters"]["required"] == ["a", "b"]
    assert tools.tool("calc_files_read") is not None
    assert [d["name"] for d in tools.responses_definitions] == names


async def test_a_function_calling_loop_through_the_sdk(mcp: MCPClient, provider: Provider) -> None:
    tools = await openai_tools(mcp)
    provider.answers = [
        completion(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    tool_call("call_1", "calc_add", '{"a": 2, "b": 3}'),
                    tool_call("call_2", "calc_refuse", '{"reason": "no"}'),
                    tool_call("call_3", "calc_files_read", '{"path": "a.txt"}'),
                ],
            },
            "tool_calls",
        ),
        completion({"role": "assistant", "content": "5, and it refused"}, "stop"),
    ]
    client = AsyncOpenAI(base_url=provider.url, api_key="test", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "add 2 and 3"}]
    first = await client.chat.completions.create(
        model="gpt-4o-mini", messages=messages, tools=tools.definitions
    )
    reply = first.choices[0].message
    assert reply.tool_calls is not None
    answers = await tools.call_all(reply.tool_calls)
    messages += [reply.model_dump(exclude_none=True), *answers]
    final = await client.chat.completions.create(
        model="gpt-4o-mini", messages=messages, tools=tools.definitions
    )
    assert final.choices[0].message.content == "5, and it refused"
    assert answers == [
        {"role": "tool", "tool_call_id": "call_1", "content": '{"sum":5}'},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: refused: no"},
        {"role": "tool", "tool_call_id": "call_3", "content": "contents of a.txt"},
    ]
    for body in provider.requests:
        CHECK_REQUEST.validate_python(body)
    assert provider.requests[1]["messages"][-3:] == answers


async def test_bad_arguments_and_unknown_tools_are_answered_for_the_model(mcp: MCPClient) -> None:
    tools = await openai_tools(mcp)
    bad_json = await tools.call(tool_call("c1", "calc_add", "{not json"))
    assert bad_json["content"].startswith("Error: the arguments of calc_add are not valid JSON")
    not_object = await tools.call(tool_call("c2", "calc_add", "[1, 2]"))
    assert not_object["content"] == "Error: the arguments of calc_add must be a JSON object"
    unknown = await tools.call(tool_call("c3", "calc_nope", "{}"))
    assert unknown["content"].startswith("Error: there is no tool named 'calc_nope'")
    invalid = await tools.call(tool_call("c4", "calc_add", '{"a": "x"}'))
    assert invalid["content"].startswith("Error: Invalid arguments for tool 'add'")
    output = await tools.call_output(
        {
            "type": "function_call",
            "call_id": "r1",
            "name": "calc_shout",
            "arguments": '{"text": "hi"}',
        }
    )
    assert output == {"type": "function_call_output", "call_id": "r1", "output": "HI"}


def asking_server() -> MCPServer:
    server = MCPServer(name="asker", version="1.0.0")

    @server.tool
    async def describe(ctx: Context) -> str:
        """Ask the client's model about a picture."""
        result = await ctx.sample(
            [
                {"role": "user", "content": {"type": "text", "text": "Earlier question"}},
                {"role": "assistant", "content": {"type": "text", "text": "Earlier answer"}},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is in this picture?"},
                        {"type": "image", "data": PNG, "mimeType": "image/png"},
                    ],
                },
            ],
            max_tokens=50,
            system_prompt="Be brief.",
            temperature=0.2,
            stop_sequences=["END"],
            model_preferences={"hints": [{"name": "mini"}], "speedPriority": 1},
        )
        return json.dumps(result)

    return server


async def test_sampling_is_answered_by_an_openai_model(provider: Provider) -> None:
    provider.answers = [completion({"role": "assistant", "content": "A cat."}, "length")]
    handler = openai_sampling_handler(
        AsyncOpenAI(base_url=provider.url, api_key="test", max_retries=0),
        model="gpt-4o",
        models=["gpt-4o", "gpt-4o-mini"],
    )
    mcp = MCPClient(servers={"asker": {"server": asking_server(), "sampling_handler": handler}})
    async with mcp:
        result = await mcp.call_tool("asker", "describe", {})
    answer = json.loads(result["content"][0]["text"])
    assert answer == {
        "role": "assistant",
        "content": {"type": "text", "text": "A cat."},
        "model": "gpt-4o-mini",
        "stopReason": "maxTokens",
    }
    (body,) = provider.requests
    CHECK_REQUEST.validate_python(body)
    assert body["model"] == "gpt-4o-mini"  # the hint "mini" picked it
    assert body["max_completion_tokens"] == 50
    assert (body["temperature"], body["stop"]) == (0.2, ["END"])
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Earlier question"}]},
        {"role": "assistant", "content": "Earlier answer"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
            ],
        },
    ]


async def test_without_allowed_models_the_hint_does_not_pick(provider: Provider) -> None:
    provider.answers = [completion({"role": "assistant", "content": "ok"}, "stop", model="local")]
    handler = openai_sampling_handler(
        AsyncOpenAI(base_url=provider.url, api_key="test", max_retries=0),
        model="local",
        token_parameter="max_tokens",
    )
    result = await handler(
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 5,
            "modelPreferences": {"hints": [{"name": "claude"}]},
        }
    )
    assert result["stopReason"] == "endTurn" and result["model"] == "local"
    (body,) = provider.requests
    assert body["model"] == "local" and body["max_tokens"] == 5
    assert "max_completion_tokens" not in body
