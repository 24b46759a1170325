"""MCP tools as LangChain tools, driven by an agent loop over LangChain's fake chat model."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from mcpkit import CallNext, MCPClient, MiddlewareContext
from mcpkit.frameworks.langchain import langchain_tools
from tests.frameworks.conftest import tool_server


async def run_agent(model: GenericFakeChatModel, tools: list[BaseTool]) -> list[BaseMessage]:
    """The loop every tool-calling agent runs: ask the model, run its tool calls, repeat."""
    by_name = {tool.name: tool for tool in tools}
    messages: list[BaseMessage] = [HumanMessage("add 1 and 2, then try the refusing tool")]
    for _ in range(5):
        reply = await model.ainvoke(messages)
        messages.append(reply)
        if not isinstance(reply, AIMessage) or not reply.tool_calls:
            return messages
        for call in reply.tool_calls:
            messages.append(await by_name[call["name"]].ainvoke(call))
    raise AssertionError("the agent did not finish")


async def test_a_langchain_agent_calls_the_mcp_tools(mcp: MCPClient) -> None:
    tools = await langchain_tools(mcp)
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "calc_add", "args": {"a": 1, "b": 2}, "id": "t1"},
                        {"name": "calc_refuse", "args": {"reason": "busy"}, "id": "t2"},
                        {"name": "calc_files_read", "args": {"path": "x"}, "id": "t3"},
                    ],
                ),
                AIMessage(content="3"),
            ]
        )
    )
    messages = await run_agent(model, tools)
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.status) for m in results] == [
        ("t1", "success"),
        ("t2", "error"),
        ("t3", "success"),
    ]
    assert "'sum': 3" in str(results[0].content) or '"sum": 3' in str(results[0].content)
    assert results[1].content == "refused: busy"
    assert results[2].content == "contents of x"
    assert messages[-1].content == "3"


async def test_each_tool_keeps_its_schema_for_bind_tools(mcp: MCPClient) -> None:
    tools = {tool.name: tool for tool in await langchain_tools(mcp)}
    assert sorted(tools) == ["calc_add", "calc_files_read", "calc_refuse", "calc_shout"]
    spec = convert_to_openai_tool(tools["calc_add"])  # what model.bind_tools sends
    assert spec["function"]["name"] == "calc_add"
    assert spec["function"]["description"] == "Add two numbers."
    assert spec["function"]["parameters"]["required"] == ["a", "b"]
    assert tools["calc_files_read"].metadata == {"mcp_server": "calc", "mcp_tool": "files.read"}


async def test_calls_reuse_one_session_per_server() -> None:
    server = tool_server()
    methods: list[str] = []

    @server.add_middleware
    async def record(ctx: MiddlewareContext, call_next: CallNext) -> Any:
        methods.append(ctx.method)
        return await call_next(ctx)

    async with MCPClient(servers={"calc": {"server": server}}) as mcp:
        tools = {tool.name: tool for tool in await langchain_tools(mcp)}
        for i in range(5):
            assert await tools["calc_shout"].ainvoke({"text": f"x{i}"}) == f"X{i}"
    assert methods.count("tools/call") == 5
    # One connection: one era probe and at most one handshake, not one per call.
    assert methods.count("server/discover") + methods.count("initialize") <= 2
