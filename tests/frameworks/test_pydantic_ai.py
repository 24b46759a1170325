"""MCP tools inside a pydantic-ai agent, and sampling answered by a pydantic-ai model."""

from __future__ import annotations

import base64
import json
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from mcpkit import MCPClient
from mcpkit.frameworks.pydantic_ai import pydantic_ai_sampling_handler, pydantic_ai_toolset
from tests.frameworks.test_openai import PNG, asking_server


async def test_an_agent_run_calls_the_mcp_tools_with_the_test_model(mcp: MCPClient) -> None:
    toolset = await pydantic_ai_toolset(mcp)
    agent = Agent(TestModel(call_tools=["calc_add", "calc_shout"]), toolsets=[toolset])
    result = await agent.run("go")
    returns = {
        part.tool_name: part.content
        for message in result.all_messages()
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart)
    }
    # TestModel makes up arguments from each schema (0 and 0, "a"): the MCP server ran them.
    assert returns == {"calc_add": {"sum": 0}, "calc_shout": "A"}


async def test_the_toolset_keeps_names_schemas_and_descriptions(mcp: MCPClient) -> None:
    seen: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.update({t.name: t for t in info.function_tools})
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), toolsets=[await pydantic_ai_toolset(mcp)])
    await agent.run("list")
    assert sorted(seen) == ["calc_add", "calc_files_read", "calc_refuse", "calc_shout"]
    assert seen["calc_add"].description == "Add two numbers."
    assert seen["calc_add"].parameters_json_schema["required"] == ["a", "b"]


async def test_a_tool_error_is_a_retry_the_model_reads(mcp: MCPClient) -> None:
    retries: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        for part in getattr(last, "parts", []):
            # pydantic-ai 2 reports a ModelRetry as a "retried" tool return (1.x: a retry prompt).
            retried = isinstance(part, ToolReturnPart) and part.outcome == "retried"
            if retried or isinstance(part, RetryPromptPart):
                retries.append(str(part.content))
                return ModelResponse(parts=[TextPart("gave up")])
        return ModelResponse(parts=[ToolCallPart("calc_refuse", {"reason": "not today"})])

    agent = Agent(FunctionModel(model), toolsets=[await pydantic_ai_toolset(mcp)])
    result = await agent.run("try")
    assert result.output == "gave up"
    assert retries == ["refused: not today"]


async def test_sampling_is_answered_by_a_pydantic_ai_model() -> None:
    calls: list[tuple[list[ModelMessage], Any]] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append((messages, info.model_settings))
        return ModelResponse(parts=[TextPart("A cat.")], model_name="small")

    handler = pydantic_ai_sampling_handler(
        FunctionModel(answer, model_name="big"),
        models={"mini": FunctionModel(answer, model_name="small")},
    )
    mcp = MCPClient(servers={"asker": {"server": asking_server(), "sampling_handler": handler}})
    async with mcp:
        result = await mcp.call_tool("asker", "describe", {})
    assert json.loads(result["content"][0]["text"]) == {
        "role": "assistant",
        "content": {"type": "text", "text": "A cat."},
        "model": "small",
    }
    ((messages, settings),) = calls
    assert settings["max_tokens"] == 50 and settings["temperature"] == 0.2
    assert settings["stop_sequences"] == ["END"]
    first, earlier, last = messages
    assert isinstance(first, ModelRequest) and isinstance(earlier, ModelResponse)
    assert isinstance(first.parts[0], SystemPromptPart) and first.parts[0].content == "Be brief."
    assert isinstance(earlier.parts[0], TextPart) and earlier.parts[0].content == "Earlier answer"
    assert isinstance(last, ModelRequest)
    (prompt,) = last.parts
    assert isinstance(prompt, UserPromptPart)
    text, image = prompt.content
    assert text == "What is in this picture?"
    assert isinstance(image, BinaryContent) and image.media_type == "image/png"
    assert image.data == base64.b64decode(PNG)
