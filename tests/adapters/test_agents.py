"""Agents as ``ask_<key>`` tools: plain agents, pydantic-ai, LangChain look-alikes, sampling."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from mcpkit import Context, MCPServer, RegistrationError, current_context
from mcpkit.adapters.agents import AgentResponse, as_agent
from mcpkit.adapters.pydantic_ai import SamplingModel
from mcpkit.client import Client
from mcpkit.testing import connect
from mcpkit.transports.asgi import AUTH_SCOPE_KEY
from tests.transports.conftest import run_app

TIMEOUT = 10.0


class Echo:
    """A plain agent: name, description and an async generate."""

    name = "Echo"
    description = "Repeats what you say, louder."

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any, Any]] = []

    async def generate(self, message: str, *, context: Context) -> dict[str, Any]:
        self.seen.append((message, context, current_context()))
        return {"text": message.upper(), "usage": {"requests": 1}}


def tool_named(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(t for t in tools if t["name"] == name)


# -- the ask_<key> tool ------------------------------------------------------------------------------


async def test_agent_becomes_ask_tool_with_the_seeds_description_and_input() -> None:
    server = MCPServer(name="s", version="1", agents={"shouter": Echo()})
    async with connect(server) as client:
        tool = tool_named(await client.list_tools(), "ask_shouter")
    assert tool["description"] == (
        "Ask agent 'Echo' a question. Agent description: Repeats what you say, louder."
    )
    schema = tool["inputSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["message"]
    assert schema["properties"]["message"]["type"] == "string"
    assert set(schema["properties"]) == {"message"}
    assert tool["outputSchema"]["required"] == ["text"]


async def test_ask_returns_the_full_reply_as_json_text_and_structured_content() -> None:
    server = MCPServer(name="s", version="1", agents={"shouter": Echo()})
    async with connect(server) as client:
        result = await client.call_tool("ask_shouter", {"message": "hello"})
    assert "isError" not in result
    expected = {"text": "HELLO", "usage": {"requests": 1}}
    assert result["structuredContent"] == expected
    assert json.loads(result["content"][0]["text"]) == expected


async def test_agent_gets_the_request_context_and_the_context_variable() -> None:
    echo = Echo()
    server = MCPServer(name="s", version="1", agents={"shouter": echo})
    async with connect(server) as client:
        await client.call_tool("ask_shouter", {"message": "hi"})
    [(message, context, current)] = echo.seen
    assert message == "hi"
    assert isinstance(context, Context)
    assert context.request.method == "tools/call"
    assert current is context
    assert context.extra.request_id == context.request_id


async def test_agent_sees_cancellation() -> None:
    started = asyncio.Event()
    outcome: list[str] = []

    class Slow:
        name = "slow"
        description = "Takes forever."

        async def generate(self, message: str, *, context: Context) -> str:
            started.set()
            try:
                await asyncio.sleep(TIMEOUT)
            except asyncio.CancelledError:
                outcome.append(f"cancelled, signal={context.extra.signal.cancelled}")
                raise
            return "done"

    server = MCPServer(name="s", version="1", agents={"slow": Slow()})
    async with connect(server) as client:
        call = asyncio.create_task(client.call_tool("ask_slow", {"message": "x"}))
        async with asyncio.timeout(TIMEOUT):
            await started.wait()
        request_id = client.sent[-1]["id"]
        await client.notify("notifications/cancelled", {"requestId": request_id})
        async with asyncio.timeout(TIMEOUT):
            with pytest.raises(Exception, match="cancelled"):
                await call
    assert outcome == ["cancelled, signal=True"]


async def test_sync_generate_runs_in_a_thread_and_still_sees_the_context() -> None:
    seen: dict[str, Any] = {}

    class Blocking:
        name = "blocking"
        description = "A synchronous agent."

        def generate(self, message: str, *, context: Context) -> str:
            seen["thread"] = threading.current_thread() is threading.main_thread()
            seen["same"] = current_context() is context
            return f"sync:{message}"

    server = MCPServer(name="s", version="1", agents={"blocking": Blocking()})
    async with connect(server) as client:
        result = await client.call_tool("ask_blocking", {"message": "m"})
    assert result["structuredContent"] == {"text": "sync:m"}
    assert seen == {"thread": False, "same": True}


async def test_generate_without_a_context_parameter_is_called_without_it() -> None:
    class Simple:
        name = "simple"
        description = "No context needed."

        async def generate(self, message: str) -> str:
            return message[::-1]

    server = MCPServer(name="s", version="1", agents={"simple": Simple()})
    async with connect(server) as client:
        result = await client.call_tool("ask_simple", {"message": "abc"})
    assert result["structuredContent"] == {"text": "cba"}


class Verdict(BaseModel):
    verdict: str
    score: int


@dataclass
class SeedsResult:  # the seeds' generate() result: text plus usage
    text: str
    usage: dict[str, int]


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        ("plain", {"text": "plain"}),
        ({"answer": 1}, {"text": '{"answer":1}', "output": {"answer": 1}}),
        (
            Verdict(verdict="ok", score=3),
            {"text": '{"verdict":"ok","score":3}', "output": {"verdict": "ok", "score": 3}},
        ),
        (
            AgentResponse(text="t", output=[1, 2], usage={"requests": 2}, extra={"model": "m"}),
            {"text": "t", "output": [1, 2], "usage": {"requests": 2}, "model": "m"},
        ),
        (SeedsResult("hi", {"tokens": 5}), {"text": "hi", "usage": {"tokens": 5}}),
        ([1, 2], {"text": "[1,2]", "output": [1, 2]}),
    ],
    ids=["str", "mapping", "model", "AgentResponse", "text-attribute", "list"],
)
async def test_every_kind_of_reply_becomes_a_json_object_with_text(
    returned: Any, expected: dict[str, Any]
) -> None:
    class Returner:
        name = "r"
        description = "Returns a fixed value."

        async def generate(self, message: str, *, context: Context) -> Any:
            return returned

    server = MCPServer(name="s", version="1", agents={"r": Returner()})
    async with connect(server) as client:
        result = await client.call_tool("ask_r", {"message": "x"})
    assert result["structuredContent"] == expected
    assert json.loads(result["content"][0]["text"]) == expected


async def test_agent_errors_become_tool_errors_without_leaking_internals() -> None:
    class Broken:
        name = "broken"
        description = "Always fails."

        async def generate(self, message: str, *, context: Context) -> str:
            raise RuntimeError("secret detail")

    server = MCPServer(name="s", version="1", agents={"broken": Broken()})
    async with connect(server) as client:
        result = await client.call_tool("ask_broken", {"message": "x"})
        missing = await client.call_tool("ask_broken", {})
    assert result["isError"] is True
    assert "secret" not in result["content"][0]["text"]
    assert missing["isError"] is True and "message" in missing["content"][0]["text"]


async def test_older_revisions_get_the_json_text_without_structured_content() -> None:
    server = MCPServer(name="s", version="1", agents={"shouter": Echo()})
    async with connect(server, protocol_version="2025-03-26") as client:
        result = await client.call_tool("ask_shouter", {"message": "a"})
    assert "structuredContent" not in result
    assert json.loads(result["content"][0]["text"])["text"] == "A"


# -- registration rules --------------------------------------------------------------------------------


@pytest.mark.parametrize("description", [None, "", "   "])
def test_missing_or_empty_description_fails_the_constructor_naming_the_key(
    description: str | None,
) -> None:
    class Undescribed:
        name = "u"

        async def generate(self, message: str, *, context: Context) -> str:
            return ""

    agent = Undescribed()
    if description is not None:
        agent.description = description  # type: ignore[attr-defined]
    with pytest.raises(RegistrationError) as info:
        MCPServer(name="s", version="1", agents={"nameless_key": agent})
    assert "agent 'nameless_key'" in str(info.value)
    assert "description" in str(info.value)


def test_every_bad_agent_is_reported_at_once() -> None:
    class NoDescription:
        name = "n"
        description = ""

        async def generate(self, message: str) -> str:
            return ""

    with pytest.raises(RegistrationError) as info:
        MCPServer(
            name="s",
            version="1",
            agents={"first": NoDescription(), "second": object(), "fine": Echo()},
        )
    problems = info.value.problems
    assert len(problems) == 2
    assert "agent 'first'" in problems[0]
    assert "agent 'second'" in problems[1] and "not an agent" in problems[1]


def test_explicit_tool_wins_a_name_collision_and_a_warning_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def ask_shouter(message: str) -> str:
        """The explicit tool."""
        return "explicit"

    with caplog.at_level(logging.WARNING, logger="mcpkit.server"):
        server = MCPServer(
            name="s",
            version="1",
            tools=[ask_shouter],
            agents={"shouter": Echo(), "other": Echo()},
        )
    tool = server.tools.get("ask_shouter")
    assert tool is not None and tool.description == "The explicit tool."
    assert "ask_other" in server.tools
    [record] = [r for r in caplog.records if "ask_shouter" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert "agent 'shouter'" in record.getMessage()


def test_as_agent_supplies_a_missing_description() -> None:
    class Bare:
        async def generate(self, message: str) -> str:
            return message

    server = MCPServer(
        name="s", version="1", agents={"bare": as_agent(Bare(), name="Bare", description="Echoes.")}
    )
    tool = server.tools.get("ask_bare")
    assert tool is not None
    assert tool.description == "Ask agent 'Bare' a question. Agent description: Echoes."


def test_agent_without_a_name_is_named_by_its_key() -> None:
    class Anonymous:
        description = "No name."

        async def generate(self, message: str) -> str:
            return message

    server = MCPServer(name="s", version="1", agents={"anon": Anonymous()})
    tool = server.tools.get("ask_anon")
    assert tool is not None and tool.description.startswith("Ask agent 'anon' a question.")


def test_registering_a_plain_agent_loads_no_framework() -> None:
    code = """
import sys
from mcpkit import MCPServer
class A:
    name = "a"
    description = "d"
    async def generate(self, message, *, context=None):
        return message
MCPServer(name="s", version="1", agents={"a": A()})
print(sorted(m for m in ("pydantic_ai", "langchain_core", "mcpkit.adapters.pydantic_ai",
                         "mcpkit.adapters.langchain") if m in sys.modules))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


# -- pydantic-ai -----------------------------------------------------------------------------------


async def test_pydantic_ai_agent_on_test_model() -> None:
    agent = Agent(TestModel(custom_output_text="the answer"), name="helper", description="Helps.")
    server = MCPServer(name="s", version="1", agents={"helper": agent})
    async with connect(server) as client:
        tool = tool_named(await client.list_tools(), "ask_helper")
        result = await client.call_tool("ask_helper", {"message": "question"})
    assert tool["description"] == "Ask agent 'helper' a question. Agent description: Helps."
    reply = result["structuredContent"]
    assert reply["text"] == "the answer"
    assert reply["usage"]["requests"] == 1
    assert json.loads(result["content"][0]["text"]) == reply


async def test_pydantic_ai_agent_on_function_model_sees_message_and_instructions() -> None:
    seen: dict[str, Any] = {}

    def think(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["prompt"] = messages[-1].parts[-1].content  # type: ignore[union-attr]
        seen["instructions"] = info.instructions
        return ModelResponse(parts=[TextPart("thought about it")])

    agent = Agent(
        FunctionModel(think), name="thinker", description="Thinks.", instructions="Be terse."
    )
    server = MCPServer(name="s", version="1", agents={"thinker": agent})
    async with connect(server) as client:
        result = await client.call_tool("ask_thinker", {"message": "why?"})
    assert result["structuredContent"]["text"] == "thought about it"
    assert seen == {"prompt": "why?", "instructions": "Be terse."}


async def test_pydantic_ai_structured_output_is_reported_as_output() -> None:
    agent = Agent(
        TestModel(custom_output_args={"verdict": "good", "score": 9}),
        name="judge",
        description="Judges.",
        output_type=Verdict,
    )
    server = MCPServer(name="s", version="1", agents={"judge": agent})
    async with connect(server) as client:
        result = await client.call_tool("ask_judge", {"message": "judge this"})
    reply = result["structuredContent"]
    assert reply["output"] == {"verdict": "good", "score": 9}
    assert json.loads(reply["text"]) == {"verdict": "good", "score": 9}


async def test_pydantic_ai_agent_tools_read_the_mcp_context() -> None:
    """The seeds' ``mcp.extra`` propagation: a tool deep inside the agent sees the request."""
    seen: dict[str, Any] = {}
    agent = Agent(TestModel(), name="deep", description="Has a tool.")

    @agent.tool_plain
    def whoami() -> str:
        ctx = current_context()
        seen["ctx"] = ctx
        return "ok"

    @agent.tool_plain
    async def whoami_async() -> str:
        seen["ctx_async"] = current_context()
        return "ok"

    server = MCPServer(name="s", version="1", agents={"deep": agent})
    async with connect(server) as client:
        result = await client.call_tool("ask_deep", {"message": "go"})
    assert "isError" not in result
    assert isinstance(seen["ctx"], Context) and seen["ctx"] is seen["ctx_async"]
    assert seen["ctx"].request.method == "tools/call"


async def test_pydantic_ai_agent_with_context_deps_gets_the_context() -> None:
    seen: list[Any] = []
    agent = Agent(TestModel(), name="d", description="Uses deps.", deps_type=Context)

    @agent.tool
    def peek(run: RunContext[Context]) -> str:
        seen.append(run.deps)
        return "peeked"

    server = MCPServer(name="s", version="1", agents={"d": agent})
    async with connect(server) as client:
        await client.call_tool("ask_d", {"message": "go"})
    [deps] = seen
    assert isinstance(deps, Context) and deps.request.method == "tools/call"


def test_pydantic_ai_agent_without_description_is_rejected() -> None:
    agent = Agent(TestModel(), name="quiet")
    with pytest.raises(RegistrationError, match="agent 'quiet_key'"):
        MCPServer(name="s", version="1", agents={"quiet_key": agent})


# -- the sampling-backed model -------------------------------------------------------------------------


def sampling_reply(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": "client-llm",
        "stopReason": "endTurn",
    }


async def test_sampling_model_thinks_with_the_clients_llm_in_memory() -> None:
    requests: list[dict[str, Any]] = []

    async def llm(params: dict[str, Any]) -> dict[str, Any]:
        requests.append(params)
        return sampling_reply("forty-two")

    agent = Agent(
        SamplingModel(max_tokens=77),
        name="oracle",
        description="Answers with the client's LLM.",
        instructions="Answer in words.",
    )
    server = MCPServer(name="s", version="1", agents={"oracle": agent})
    async with connect(
        server, capabilities={"sampling": {}}, handlers={"sampling/createMessage": llm}
    ) as client:
        result = await client.call_tool("ask_oracle", {"message": "6 times 7?"})
    assert result["structuredContent"]["text"] == "forty-two"
    [params] = requests
    assert params["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "6 times 7?"}}
    ]
    assert params["systemPrompt"] == "Answer in words."
    assert params["maxTokens"] == 77
    assert "tools" not in params


async def test_sampling_model_lets_the_clients_llm_call_the_agents_tools() -> None:
    calls: list[int] = []

    async def llm(params: dict[str, Any]) -> dict[str, Any]:
        last = params["messages"][-1]["content"]
        if isinstance(last, list) and last[0]["type"] == "tool_result":
            answer = last[0]["content"][0]["text"]
            return sampling_reply(f"the product is {answer}")
        assert params["tools"][0]["name"] == "multiply"
        return {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call-1", "name": "multiply", "input": {"a": 6, "b": 7}}
            ],
            "model": "client-llm",
            "stopReason": "toolUse",
        }

    agent = Agent(SamplingModel(), name="calc", description="Multiplies with help.")

    @agent.tool_plain
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        calls.append(a * b)
        return a * b

    server = MCPServer(name="s", version="1", agents={"calc": agent})
    async with connect(
        server,
        capabilities={"sampling": {"tools": {}}},
        handlers={"sampling/createMessage": llm},
    ) as client:
        result = await client.call_tool("ask_calc", {"message": "6*7"})
    assert result["structuredContent"]["text"] == "the product is 42"
    assert calls == [42]


async def test_sampling_model_asks_for_structured_output_in_the_prompt() -> None:
    async def llm(params: dict[str, Any]) -> dict[str, Any]:
        assert "verdict" in params["systemPrompt"]  # the schema is in the prompt
        return sampling_reply('{"verdict": "fine", "score": 7}')

    agent = Agent(SamplingModel(), name="j", description="Judges.", output_type=Verdict)
    server = MCPServer(name="s", version="1", agents={"j": agent})
    async with connect(
        server, capabilities={"sampling": {}}, handlers={"sampling/createMessage": llm}
    ) as client:
        result = await client.call_tool("ask_j", {"message": "rate"})
    assert result["structuredContent"]["output"] == {"verdict": "fine", "score": 7}


async def test_sampling_model_needs_the_clients_sampling_capabilities() -> None:
    plain = Agent(SamplingModel(), name="p", description="Plain.")
    tooled = Agent(SamplingModel(), name="t", description="With a tool.")

    @tooled.tool_plain
    def noop() -> str:
        return ""

    server = MCPServer(name="s", version="1", agents={"p": plain, "t": tooled})
    async with connect(server) as client:
        no_sampling = await client.call_tool("ask_p", {"message": "x"})
    async with connect(
        server,
        capabilities={"sampling": {}},
        handlers={"sampling/createMessage": lambda p: sampling_reply("x")},
    ) as client:
        no_tools = await client.call_tool("ask_t", {"message": "x"})
    assert no_sampling["isError"] is True
    assert "'sampling' capability" in no_sampling["content"][0]["text"]
    assert no_tools["isError"] is True
    assert "'sampling.tools' capability" in no_tools["content"][0]["text"]


async def test_sampling_model_outside_an_mcp_request_says_what_it_needs() -> None:
    agent = Agent(SamplingModel(), name="x", description="x")
    with pytest.raises(Exception, match="needs an MCP request"):
        await agent.run("hello")


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_sampling_model_over_streamable_http(era: str) -> None:
    prompts: list[str] = []

    def llm(params: dict[str, Any]) -> dict[str, Any]:
        prompts.append(params["messages"][-1]["content"]["text"])
        return sampling_reply("answered over HTTP")

    agent = Agent(SamplingModel(), name="remote", description="Thinks remotely.")
    server = MCPServer(name="s", version="1", agents={"remote": agent})
    async with run_app(server.http_app()) as base:
        async with Client(
            url=f"{base}/mcp", sampling_handler=llm, timeout=TIMEOUT, protocol_version=era
        ) as client:
            result = await client.call_tool("ask_remote", {"message": "over the wire?"})
    assert result["structuredContent"]["text"] == "answered over HTTP"
    assert prompts == ["over the wire?"]


async def test_sampling_model_on_stateless_http_fails_clearly_in_the_handshake_era() -> None:
    agent = Agent(SamplingModel(), name="remote", description="Thinks remotely.")
    server = MCPServer(name="s", version="1", agents={"remote": agent})
    async with run_app(server.http_app(stateless=True)) as base:
        async with Client(
            url=f"{base}/mcp",
            sampling_handler=lambda p: sampling_reply("x"),
            timeout=TIMEOUT,
            protocol_version="2025-11-25",  # the handshake era's stateless mode cannot ask
        ) as client:
            result = await client.call_tool("ask_remote", {"message": "hi"})
    assert result["isError"] is True
    assert "stateless" in result["content"][0]["text"]


async def test_sampling_model_on_stateless_http_samples_through_input_rounds_in_2026() -> None:
    agent = Agent(SamplingModel(), name="remote", description="Thinks remotely.")
    server = MCPServer(name="s", version="1", agents={"remote": agent})
    async with run_app(server.http_app(stateless=True)) as base:
        async with Client(
            url=f"{base}/mcp", sampling_handler=lambda p: sampling_reply("x"), timeout=TIMEOUT
        ) as client:
            result = await client.call_tool("ask_remote", {"message": "hi"})
            assert client.protocol_version == "2026-07-28"
    assert result["structuredContent"]["text"] == "x"


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_agent_sees_auth_info_and_session_id_over_http(era: str) -> None:
    """The seeds' ``mcp.extra``: what HTTP middleware verified reaches the agent's code."""

    class Whoami:
        name = "whoami"
        description = "Says who is asking."

        async def generate(self, message: str, *, context: Context) -> dict[str, Any]:
            deep = current_context()
            assert deep is context
            return {
                "text": str(context.extra.auth_info),
                "session": context.extra.session_id,
                "same_session": context.session_id == context.extra.session_id,
            }

    server = MCPServer(name="s", version="1", agents={"whoami": Whoami()})
    inner = server.http_app()

    async def with_auth(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope = {**scope, AUTH_SCOPE_KEY: {"user": "ada", "scopes": ["read"]}}
        await inner(scope, receive, send)

    async with run_app(with_auth) as base:
        async with Client(url=f"{base}/mcp", timeout=TIMEOUT, protocol_version=era) as client:
            result = await client.call_tool("ask_whoami", {"message": "who?"})
    reply = result["structuredContent"]
    assert reply["text"] == "{'user': 'ada', 'scopes': ['read']}"
    if era == "2025-11-25":
        assert isinstance(reply["session"], str) and len(reply["session"]) > 10
    else:  # 2026-07-28 has no sessions
        assert reply["session"] is None
    assert reply["same_session"] is True


# -- LangChain look-alikes ---------------------------------------------------------------------------


class AIMessage:
    """The shape of langchain_core's AIMessage that the adapter reads."""

    def __init__(self, content: Any, usage_metadata: dict[str, int] | None = None) -> None:
        self.content = content
        self.usage_metadata = usage_metadata


class ChatModelLike:
    """A chat-model runnable: takes text, returns an AIMessage."""

    name = "chat"

    def __init__(self) -> None:
        self.inputs: list[Any] = []

    async def ainvoke(self, value: Any) -> AIMessage:
        self.inputs.append(value)
        return AIMessage(
            [{"type": "text", "text": "block one, "}, {"type": "text", "text": "block two"}],
            {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        )


class GraphAgentLike:
    """A LangGraph agent: its input schema has ``messages``, it returns a state."""

    def __init__(self) -> None:
        self.inputs: list[Any] = []

    def get_name(self) -> str:
        return "graph-agent"

    def get_input_jsonschema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"messages": {"type": "array"}}}

    async def ainvoke(self, value: Any) -> dict[str, Any]:
        self.inputs.append(value)
        return {"messages": [value["messages"][0], AIMessage("graph says hi")]}


async def test_runnable_with_ainvoke_is_adapted() -> None:
    chat = ChatModelLike()
    server = MCPServer(name="s", version="1", agents={"chat": as_agent(chat, description="Chats.")})
    async with connect(server) as client:
        tool = tool_named(await client.list_tools(), "ask_chat")
        result = await client.call_tool("ask_chat", {"message": "hello"})
    assert tool["description"] == "Ask agent 'chat' a question. Agent description: Chats."
    assert chat.inputs == ["hello"]
    assert result["structuredContent"] == {
        "text": "block one, block two",
        "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
    }


async def test_graph_agent_gets_a_messages_state_and_its_last_message_is_the_reply() -> None:
    graph = GraphAgentLike()
    server = MCPServer(name="s", version="1", agents={"g": as_agent(graph, description="A graph.")})
    async with connect(server) as client:
        tool = tool_named(await client.list_tools(), "ask_g")
        result = await client.call_tool("ask_g", {"message": "hey"})
    assert tool["description"].startswith("Ask agent 'graph-agent' a question.")
    assert graph.inputs == [{"messages": [{"role": "user", "content": "hey"}]}]
    assert result["structuredContent"] == {"text": "graph says hi"}


async def test_legacy_chain_with_sync_run_runs_in_a_thread() -> None:
    threads: list[bool] = []

    class LegacyChain:
        description = "An old-style chain."

        def run(self, value: str) -> dict[str, Any]:
            threads.append(threading.current_thread() is threading.main_thread())
            assert current_context() is not None
            return {"output": f"ran {value}"}

    server = MCPServer(name="s", version="1", agents={"legacy": LegacyChain()})
    async with connect(server) as client:
        result = await client.call_tool("ask_legacy", {"message": "it"})
    assert result["structuredContent"] == {"text": "ran it"}
    assert threads == [False]


def test_runnable_without_description_is_rejected_naming_the_key() -> None:
    with pytest.raises(RegistrationError, match=r"agent 'chat'.*description"):
        MCPServer(name="s", version="1", agents={"chat": ChatModelLike()})


async def test_agent_reply_helpers_round_trip_through_execute_tool() -> None:
    server = MCPServer(name="s", version="1", agents={"shouter": Echo()})
    result = await server.execute_tool("ask_shouter", {"message": "direct"})
    assert result["structuredContent"]["text"] == "DIRECT"
