"""The declarative API: decorated methods and module functions registered by scanning."""

from __future__ import annotations

import json
import logging
import textwrap
import threading
import types
from typing import Annotated, Any

import pytest

from mcpkit import (
    Context,
    MCPServer,
    PromptArg,
    PromptMessage,
    RegistrationError,
    ToolAnnotations,
    ToolParam,
    ToolResult,
    mcp_complete,
    mcp_prompt,
    mcp_resource,
    mcp_tool,
)
from mcpkit.errors import ConfigurationError
from mcpkit.testing import connect


class CalculatorTools:
    """The seeds' first example, in Python."""

    def __init__(self) -> None:
        self.calls = 0

    @mcp_tool(name="add", description="Add two numbers together")
    def add(
        self,
        a: Annotated[int, ToolParam(description="First number", required=True)],
        b: Annotated[int, ToolParam(description="Second number", required=True)],
    ) -> int:
        self.calls += 1
        return a + b

    @mcp_tool(
        name="calculate-area",
        description="Calculate the area of a rectangle",
        title="Rectangle Area Calculator",
        annotations=ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True
        ),
    )
    async def area(
        self,
        width: Annotated[float, ToolParam(description="Width")],
        height: Annotated[float, ToolParam(description="Height")],
    ) -> dict[str, Any]:
        return {"area": width * height, "unit": "square units"}

    @mcp_tool
    def scale(
        self,
        value: float,
        factor: Annotated[float, ToolParam(description="Multiplier", required=False)],
    ) -> float:
        """Multiply a value (by 10 when no factor is given)."""
        return value * (factor if factor is not None else 10)

    @mcp_tool(name="flexible-tool")
    def flexible(self, text: str) -> dict[str, Any]:
        """Returns a CallToolResult as a dict."""
        return {"content": [{"type": "text", "text": f"processed {text}"}], "isError": False}

    @mcp_tool(name="full-control")
    async def full(self) -> ToolResult:
        return ToolResult(content=["done"], structured_content={"ok": True})

    def not_a_tool(self) -> str:
        return "never registered"


def tool_named(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(t for t in tools if t["name"] == name)


# -- tools ---------------------------------------------------------------------------------------


async def test_methods_of_an_instance_become_tools_with_parameter_metadata() -> None:
    calc = CalculatorTools()
    server = MCPServer(name="s", version="1", components=[calc])
    async with connect(server) as client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert [t["name"] for t in tools] == [
        "add",
        "calculate-area",
        "scale",
        "flexible-tool",
        "full-control",
    ]
    add = tool_named(tools, "add")
    assert add["description"] == "Add two numbers together"
    assert add["inputSchema"]["required"] == ["a", "b"]
    assert add["inputSchema"]["properties"]["a"]["description"] == "First number"
    assert add["inputSchema"]["properties"]["b"]["type"] == "integer"
    assert result["content"] == [{"type": "text", "text": "5"}]
    assert calc.calls == 1  # the bound method of this very instance ran


async def test_tool_annotations_title_and_async_methods() -> None:
    server = MCPServer(name="s", version="1", components=[CalculatorTools()])
    async with connect(server) as client:
        area = tool_named(await client.list_tools(), "calculate-area")
        result = await client.call_tool("calculate-area", {"width": 2, "height": 3.5})
    assert area["title"] == "Rectangle Area Calculator"
    assert area["annotations"] == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
    }
    assert result["structuredContent"] == {"area": 7.0, "unit": "square units"}


async def test_required_false_makes_a_parameter_optional() -> None:
    server = MCPServer(name="s", version="1", components=[CalculatorTools()])
    async with connect(server) as client:
        scale = tool_named(await client.list_tools(), "scale")
        default = await client.call_tool("scale", {"value": 2})
        given = await client.call_tool("scale", {"value": 2, "factor": 3})
    assert scale["inputSchema"]["required"] == ["value"]
    assert scale["inputSchema"]["properties"]["factor"]["description"] == "Multiplier"
    assert scale["description"] == "Multiply a value (by 10 when no factor is given)."
    assert default["content"][0]["text"] == "20.0"
    assert given["content"][0]["text"] == "6.0"


async def test_tools_may_return_mcp_result_objects() -> None:
    server = MCPServer(name="s", version="1", components=[CalculatorTools()])
    async with connect(server) as client:
        flexible = await client.call_tool("flexible-tool", {"text": "x"})
        full = await client.call_tool("full-control")
    assert flexible == {"content": [{"type": "text", "text": "processed x"}], "isError": False}
    assert full["structuredContent"] == {"ok": True}
    assert full["content"] == [{"type": "text", "text": "done"}]


def test_decorated_methods_stay_ordinary_methods() -> None:
    assert CalculatorTools().add(1, 2) == 3


async def test_sync_methods_run_in_a_worker_thread() -> None:
    seen: list[bool] = []

    class Threads:
        @mcp_tool
        def where(self) -> str:
            seen.append(threading.current_thread() is threading.main_thread())
            return "ok"

    server = MCPServer(name="s", version="1", components=[Threads()])
    async with connect(server) as client:
        await client.call_tool("where")
    assert seen == [False]


async def test_run_in_thread_false_calls_a_sync_method_on_the_loop_thread() -> None:
    seen: list[int] = []

    class Inline:
        @mcp_tool(run_in_thread=False)
        def where(self) -> str:
            seen.append(threading.get_ident())
            return "ok"

    server = MCPServer(name="s", version="1", components=[Inline()])
    async with connect(server) as client:
        await client.call_tool("where")
    assert seen == [threading.get_ident()]


def test_mcp_tool_run_in_thread_must_be_a_bool() -> None:
    with pytest.raises(ConfigurationError, match=r"where.*run_in_thread must be True or False"):

        class Bad:
            @mcp_tool(run_in_thread="no")  # type: ignore[call-overload]
            def where(self) -> str:
                return "never"


async def test_tools_receive_the_context_when_they_declare_it() -> None:
    class WithContext:
        @mcp_tool(name="process-data")
        async def process(
            self, ctx: Context, data: Annotated[str, ToolParam(description="Data")]
        ) -> str:
            await ctx.info(f"processing {data}")
            return data.upper()

    server = MCPServer(name="s", version="1", components=[WithContext()])
    async with connect(server) as client:
        await client.request("logging/setLevel", {"level": "info"})
        tool = tool_named(await client.list_tools(), "process-data")
        result = await client.call_tool("process-data", {"data": "abc"})
    assert list(tool["inputSchema"]["properties"]) == ["data"]
    assert result["content"][0]["text"] == "ABC"
    assert any(n["method"] == "notifications/message" for n in client.notifications)


async def test_static_and_class_methods_register_from_the_class_itself() -> None:
    class Utilities:
        prefix = "util"

        @mcp_tool
        @staticmethod
        def shout(text: str) -> str:
            """Upper-case a text."""
            return text.upper()

        @mcp_tool(name="tag")
        @classmethod
        def tag(cls, text: str) -> str:
            return f"{cls.prefix}:{text}"

    server = MCPServer(name="s", version="1")
    server.scan(Utilities)
    async with connect(server) as client:
        shout = await client.call_tool("shout", {"text": "hi"})
        tag = await client.call_tool("tag", {"text": "x"})
    assert shout["content"][0]["text"] == "HI"
    assert tag["content"][0]["text"] == "util:x"


def test_instance_methods_need_an_instance() -> None:
    with pytest.raises(RegistrationError) as info:
        MCPServer(name="s", version="1", components=[CalculatorTools])
    assert any(p.startswith("CalculatorTools.add: an instance method") for p in info.value.problems)


async def test_inherited_declarations_register_once_with_overrides_winning() -> None:
    class Base:
        @mcp_tool
        def hello(self) -> str:
            return "base"

    class Child(Base):
        @mcp_tool
        def hello(self) -> str:
            return "child"

        @mcp_tool
        def extra(self) -> str:
            return "extra"

    server = MCPServer(name="s", version="1", components=[Child()])
    assert [t.name for t in server.tools] == ["hello", "extra"]
    result = await server.execute_tool("hello")
    assert result["content"][0]["text"] == "child"


# -- modules ---------------------------------------------------------------------------------------

MODULE = '''
from typing import Annotated
from mcpkit import mcp_tool, mcp_prompt, mcp_complete, ToolParam, PromptArg
from tests.server.test_declarative import imported_tool

@mcp_tool(name="module-echo")
async def echo(text: Annotated[str, ToolParam(description="What to echo")]) -> str:
    return text

@mcp_prompt
def city_search(city: Annotated[str, PromptArg(description="A city")]) -> str:
    """Search a city."""
    return f"Tell me about {city}"

@mcp_complete(prompt="city_search")
def complete_city(prefix):
    return [c for c in ("Tokyo", "Toronto", "Paris") if c.lower().startswith(prefix.lower())]

def plain_helper():
    return "not registered"
'''


@mcp_tool
def imported_tool() -> str:
    """Declared here; a module that imports it must not register it again."""
    return "imported"


def make_module(name: str = "declared_module") -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(textwrap.dedent(MODULE), f"<{name}>", "exec"), module.__dict__)
    return module


async def test_module_functions_register_and_imported_ones_do_not() -> None:
    server = MCPServer(name="s", version="1", components=[make_module()])
    async with connect(server) as client:
        tools = await client.list_tools()
        echoed = await client.call_tool("module-echo", {"text": "hey"})
        prompt = await client.get_prompt("city_search", {"city": "Kyoto"})
        completed = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "city_search"},
                "argument": {"name": "city", "value": "to"},
            },
        )
    assert [t["name"] for t in tools] == ["module-echo"]
    assert tools[0]["inputSchema"]["properties"]["text"]["description"] == "What to echo"
    assert echoed["content"][0]["text"] == "hey"
    assert prompt["messages"][0]["content"]["text"] == "Tell me about Kyoto"
    assert completed["completion"]["values"] == ["Tokyo", "Toronto"]


# -- resources, prompts, completions ----------------------------------------------------------------


class Profiles:
    users = {"ana": {"name": "Ana", "city": "Lisbon"}}  # noqa: RUF012

    @mcp_resource(
        uri="user-profile://{username}",
        name="User Profile",
        description="Provides user profile information",
        mime_type="application/json",
    )
    def profile(self, username: str) -> dict[str, Any]:
        """Returns a ReadResourceResult."""
        return {
            "contents": [
                {
                    "uri": f"user-profile://{username}",
                    "mimeType": "application/json",
                    "text": json.dumps(self.users.get(username, {})),
                }
            ]
        }

    @mcp_resource("config://app", name="Configuration", mime_type="text/plain")
    async def config(self) -> str:
        return "debug=false"

    @mcp_prompt(name="greeting", description="Generate a greeting message")
    def greeting(
        self, name: Annotated[str, PromptArg(description="User's name", required=True)]
    ) -> dict[str, Any]:
        """Returns a GetPromptResult."""
        return {
            "description": "Greeting",
            "messages": [
                {"role": "assistant", "content": {"type": "text", "text": f"Hello, {name}!"}}
            ],
        }

    @mcp_prompt(name="personalized-message")
    async def personalized(
        self,
        name: Annotated[str, PromptArg(required=True)],
        age: Annotated[int, PromptArg(description="Age in years", required=False)],
    ) -> list[PromptMessage]:
        text = f"Hello, {name}!" + (f" At {age} years old..." if age is not None else "")
        return [PromptMessage(role="assistant", content=text)]

    @mcp_complete(prompt="travel-planner")
    def complete_travel(self, argument: str, value: str) -> dict[str, Any]:
        options = {"city": ["Paris", "Prague"], "country": ["Peru", "Poland"]}[argument]
        values = [o for o in options if o.lower().startswith(value.lower())]
        return {"completion": {"values": values, "total": len(values), "hasMore": False}}

    @mcp_complete(uri="user-profile://{username}", argument="username")
    async def complete_user(self, value: str) -> list[str]:
        return [u for u in self.users if u.startswith(value)]

    @mcp_prompt(name="travel-planner")
    def travel(self, city: str, country: str) -> str:
        return f"Plan a trip to {city}, {country}"


async def test_resources_from_methods_with_templates_and_result_objects() -> None:
    server = MCPServer(name="s", version="1", components=[Profiles()])
    async with connect(server) as client:
        templates = await client.request("resources/templates/list")
        listed = await client.request("resources/list")
        profile = await client.read_resource("user-profile://ana")
        config = await client.read_resource("config://app")
    [template] = templates["resourceTemplates"]
    assert template["uriTemplate"] == "user-profile://{username}"
    assert template["name"] == "User Profile"
    assert template["mimeType"] == "application/json"
    assert listed["resources"][0]["uri"] == "config://app"
    assert json.loads(profile["contents"][0]["text"]) == {"name": "Ana", "city": "Lisbon"}
    assert config["contents"] == [
        {"uri": "config://app", "text": "debug=false", "mimeType": "text/plain"}
    ]


async def test_prompts_with_prompt_args_and_result_objects() -> None:
    server = MCPServer(name="s", version="1", components=[Profiles()])
    async with connect(server) as client:
        prompts = {p["name"]: p for p in (await client.request("prompts/list"))["prompts"]}
        greeting = await client.get_prompt("greeting", {"name": "Ana"})
        plain = await client.get_prompt("personalized-message", {"name": "Bo"})
        aged = await client.get_prompt("personalized-message", {"name": "Bo", "age": "30"})
    assert prompts["greeting"]["arguments"] == [
        {"name": "name", "description": "User's name", "required": True}
    ]
    assert prompts["personalized-message"]["arguments"] == [
        {"name": "name", "required": True},
        {"name": "age", "description": "Age in years", "required": False},
    ]
    assert greeting["messages"] == [
        {"role": "assistant", "content": {"type": "text", "text": "Hello, Ana!"}}
    ]
    assert plain["messages"][0]["content"]["text"] == "Hello, Bo!"
    assert aged["messages"][0]["content"]["text"] == "Hello, Bo! At 30 years old..."


async def test_completions_receive_the_argument_name_and_value() -> None:
    server = MCPServer(name="s", version="1", components=[Profiles()])
    ref = {"type": "ref/prompt", "name": "travel-planner"}
    async with connect(server) as client:
        city = await client.request(
            "completion/complete", {"ref": ref, "argument": {"name": "city", "value": "pa"}}
        )
        country = await client.request(
            "completion/complete", {"ref": ref, "argument": {"name": "country", "value": "p"}}
        )
        user = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "user-profile://{username}"},
                "argument": {"name": "username", "value": "a"},
            },
        )
    assert city["completion"] == {"values": ["Paris"], "total": 1, "hasMore": False}
    assert country["completion"]["values"] == ["Peru", "Poland"]
    assert user["completion"]["values"] == ["ana"]


# -- registration errors ------------------------------------------------------------------------------


def test_every_registration_error_is_raised_together_naming_component_and_member() -> None:
    class Broken:
        @mcp_tool(name="add")  # clashes with CalculatorTools.add
        def duplicate(self) -> int:
            return 1

        @mcp_tool(needs=["telepathy"])  # type: ignore[list-item]
        def strange(self) -> str:
            return ""

        @mcp_tool
        def conflicted(self, x: Annotated[int, ToolParam(required=True)] = 3) -> int:
            return x

        @mcp_tool
        def misplaced(self, x: Annotated[str, PromptArg(description="no")]) -> str:
            return x

        @mcp_resource("bad://{unclosed")
        def bad_uri(self) -> str:
            return ""

        @mcp_complete()
        def aimless(self, value: str) -> list[str]:
            return []

    with pytest.raises(RegistrationError) as info:
        MCPServer(name="s", version="1", components=[CalculatorTools(), Broken(), 42])
    problems = info.value.problems
    assert len(problems) == 7, problems
    expected = [
        ("Broken.duplicate:", "tool 'add' is already registered"),
        ("Broken.strange:", "unknown back-channel"),
        ("Broken.conflicted:", "required=True but has a default"),
        ("Broken.misplaced:", "PromptArg"),
        ("Broken.bad_uri:", "invalid URI template"),
        ("Broken.aimless:", "exactly one of prompt= or uri="),
        ("42:", "a component is an object, a class or a module"),
    ]
    for prefix, text in expected:
        assert any(p.startswith(prefix) and text in p for p in problems), (prefix, problems)


def test_scan_after_construction_reports_problems_too() -> None:
    server = MCPServer(name="s", version="1", components=[CalculatorTools()])
    with pytest.raises(RegistrationError, match=r"CalculatorTools\.add: tool 'add'"):
        server.scan(CalculatorTools())


# -- tools that need a back-channel -----------------------------------------------------------------


class Interactive:
    @mcp_tool(name="ask-name", needs=["elicitation"])
    async def ask_name(self, ctx: Context) -> str:
        answer = await ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"hello {answer.content['name']}" if answer.content else "no answer"

    @mcp_tool(needs=["sampling", "roots"])
    def summarize(self, text: str) -> str:
        return "never reached without a back-channel"

    @mcp_tool
    async def simple(self) -> str:
        return "works everywhere"


def test_stateless_http_names_each_tool_needing_a_back_channel_at_start_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = MCPServer(name="s", version="1", components=[Interactive()])
    caplog.clear()  # the tools' registration warnings (no descriptions) are not the subject
    with caplog.at_level(logging.WARNING, logger="mcpkit.server"):
        server.http_app()  # stateful: nothing to say
        assert not caplog.records
        server.http_app(stateless=True)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "tool 'ask-name' needs elicitation" in messages[0]
    assert "tool 'summarize' needs sampling and roots" in messages[1]
    assert all("stateless HTTP" in m for m in messages)


async def test_calling_such_a_tool_on_a_stateless_session_fails_clearly_before_it_runs() -> None:
    server = MCPServer(name="s", version="1", components=[Interactive()])
    async with connect(server, stateless=True) as client:
        ask = await client.call_tool("ask-name")
        summary = await client.call_tool("summarize", {"text": "t"})
        simple = await client.call_tool("simple")
    assert ask["isError"] is True
    assert ask["content"][0]["text"] == (
        "tool 'ask-name' needs elicitation, which this server cannot offer: it runs stateless "
        "HTTP, which has no channel for server-to-client requests"
    )
    assert summary["isError"] is True and "sampling and roots" in summary["content"][0]["text"]
    assert simple["content"][0]["text"] == "works everywhere"


async def test_such_a_tool_works_when_the_client_offers_the_back_channel() -> None:
    server = MCPServer(name="s", version="1", components=[Interactive()])
    async with connect(
        server,
        capabilities={"elicitation": {}},
        handlers={"elicitation/create": lambda p: {"action": "accept", "content": {"name": "Ada"}}},
    ) as client:
        answered = await client.call_tool("ask-name")
    async with connect(server) as client:
        refused = await client.call_tool("ask-name")
    assert answered["content"][0]["text"] == "hello Ada"
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == (
        "tool 'ask-name' needs the client's elicitation capability, which this client did not "
        "declare"
    )


def test_a_bare_mcp_resource_is_refused_naming_the_function() -> None:
    with pytest.raises(RegistrationError, match=r"^resource 'readme': @mcp_resource needs the"):

        @mcp_resource  # type: ignore[arg-type]
        def readme() -> str:
            return "hello"


def test_unresolvable_annotations_name_the_member_and_the_parameter() -> None:
    class Unresolved:
        @mcp_tool
        def lookup(self, key: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
            return ""

    with pytest.raises(RegistrationError) as info:
        MCPServer(name="s", version="1", components=[Unresolved()])
    assert info.value.problems == [
        "Unresolved.lookup: parameter 'key': cannot resolve its annotation 'Missing' "
        "(NameError: name 'Missing' is not defined)"
    ]


class OpsComponent:
    """Declared scopes: a tool, a static resource, a template and a prompt."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    @mcp_tool(scopes=["ops:write"])
    def restart(self, service: str) -> str:
        self.runs.append("restart")
        return f"restarted {service}"

    @mcp_tool
    def status(self) -> str:
        return "green"

    @mcp_resource("ops://runbook", scopes=["ops:read"])
    def runbook(self) -> str:
        self.runs.append("runbook")
        return "step 1"

    @mcp_resource("ops://logs/{service}", scopes=["ops:read", "logs"])
    def logs(self, service: str) -> str:
        self.runs.append("logs")
        return f"logs of {service}"

    @mcp_prompt(scopes=["ops:write"])
    def postmortem(self, service: str) -> str:
        self.runs.append("postmortem")
        return f"Write the postmortem of {service}."


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_declared_scopes_hide_and_refuse_what_the_token_lacks(version: str) -> None:
    from mcpkit.auth import AuthInfo
    from mcpkit.errors import FORBIDDEN, RemoteError

    ops = OpsComponent()
    server = MCPServer(name="ops", version="1", components=[ops])
    assert server.required_scopes("tools/call", {"name": "restart"}) == {"ops:write"}
    assert server.required_scopes("resources/read", {"uri": "ops://logs/db"}) == {
        "ops:read",
        "logs",
    }
    reader = AuthInfo(token="t", scopes=frozenset({"ops:read"}))
    async with connect(
        server, protocol_version=version, initialize=version != "2026-07-28", auth_info=reader
    ) as client:
        assert [t["name"] for t in await client.list_tools()] == ["status"]
        assert [r["uri"] for r in await client.list_resources()] == ["ops://runbook"]
        assert await client.list_resource_templates() == []
        assert await client.list_prompts() == []
        for call in (
            client.call_tool("restart", {"service": "db"}),
            client.read_resource("ops://logs/db"),
            client.get_prompt("postmortem", {"service": "db"}),
        ):
            with pytest.raises(RemoteError) as info:
                await call
            assert info.value.code == FORBIDDEN
            assert info.value.data["requiredScopes"] in (["ops:write"], ["logs", "ops:read"])
        assert (await client.read_resource("ops://runbook"))["contents"][0]["text"] == "step 1"
        client.auth_info = AuthInfo(token="t2", scopes=frozenset({"ops:read", "ops:write", "logs"}))
        assert (await client.call_tool("restart", {"service": "db"}))["content"][0]["text"] == (
            "restarted db"
        )
        await client.read_resource("ops://logs/db")
        await client.get_prompt("postmortem", {"service": "db"})
    assert ops.runs == ["runbook", "restart", "logs", "postmortem"]


def test_bad_declared_scopes_are_collected_naming_each_member() -> None:
    class Sloppy:
        @mcp_tool(scopes="ops:write")  # type: ignore[arg-type]
        def one(self) -> str:
            return ""

        @mcp_resource("data://two", scopes=["two words"])
        def two(self) -> str:
            return ""

        @mcp_prompt(scopes=[""])
        def three(self) -> str:
            return ""

    with pytest.raises(RegistrationError) as info:
        MCPServer(name="s", version="1", components=[Sloppy()])
    problems = info.value.problems
    assert len(problems) == 3
    assert problems[0].startswith(
        "Sloppy.one: tool 'one': scopes must be a list of scope strings, as scopes=['ops:write']"
    )
    assert problems[1].startswith("Sloppy.two: resource 'data://two': scope 'two words' is not")
    assert problems[2].startswith("Sloppy.three: prompt 'three': scope '' is not a scope token")


async def test_declared_components_carry_tags_and_enabled() -> None:
    class Shop:
        @mcp_tool(tags={"admin"})
        def refund(self, order: str) -> str:
            return order

        @mcp_tool(enabled=False)
        def beta(self) -> str:
            return "beta"

        @mcp_resource("shop://stock", tags={"admin"})
        def stock(self) -> str:
            return "3"

        @mcp_prompt(tags={"admin"})
        def escalate(self) -> str:
            return "escalate"

    server = MCPServer(name="shop", version="1", components=[Shop()])
    async with connect(server) as client:
        assert [t["name"] for t in await client.list_tools()] == ["refund"]
        server.disable(tags={"admin"})
        assert await client.list_tools() == []
        assert await client.list_resources() == []
        assert await client.list_prompts() == []
        server.enable("beta")
        assert [t["name"] for t in await client.list_tools()] == ["beta"]
