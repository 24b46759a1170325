"""Tools: schemas from signatures, create_tool, execution, results, errors, listing."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import threading
from enum import Enum
from typing import Annotated, Any, Literal, Optional

import jsonschema
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from mcpkit import (
    Audio,
    CapabilityError,
    Context,
    EmbeddedResource,
    Image,
    InvalidParams,
    MCPServer,
    ResourceLink,
    ToolAnnotations,
    ToolError,
    ToolResult,
    create_tool,
)
from mcpkit.errors import INVALID_PARAMS, ConfigurationError, RegistrationError, RemoteError
from mcpkit.testing import connect


def server_with(*fns: Any, **options: Any) -> MCPServer:
    server = MCPServer(name="tools-test", version="1.0.0", **options)
    for fn in fns:
        server.add_tool(fn)
    return server


async def input_schema(fn: Any, **options: Any) -> dict[str, Any]:
    async with connect(server_with(fn, **options)) as client:
        (tool,) = await client.list_tools()
    schema: dict[str, Any] = tool["inputSchema"]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    return schema


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result["content"] if c["type"] == "text")


# -- input schemas ---------------------------------------------------------------------------------


async def test_primitive_parameters_become_json_types() -> None:
    def prims(i: int, s: str, f: float, b: bool) -> str:
        return ""

    schema = await input_schema(prims)
    props = schema["properties"]
    assert props["i"]["type"] == "integer"
    assert props["s"]["type"] == "string"
    assert props["f"]["type"] == "number"
    assert props["b"]["type"] == "boolean"
    assert sorted(schema["required"]) == ["b", "f", "i", "s"]


async def test_containers_optional_literal_and_defaults() -> None:
    def containers(
        items: list[int],
        weights: dict[str, float],
        maybe: Optional[int] = None,  # noqa: UP045 (the typing spelling on purpose)
        mode: Literal["fast", "slow"] = "fast",
        tags: list[str] | None = None,
        limit: int = 10,
    ) -> str:
        return ""

    schema = await input_schema(containers)
    props = schema["properties"]
    assert props["items"] == {"items": {"type": "integer"}, "title": "Items", "type": "array"}
    assert props["weights"]["type"] == "object"
    assert props["weights"]["additionalProperties"] == {"type": "number"}
    assert {"type": "integer"} in props["maybe"]["anyOf"] and {"type": "null"} in props["maybe"][
        "anyOf"
    ]
    assert props["maybe"]["default"] is None
    assert props["mode"]["enum"] == ["fast", "slow"] and props["mode"]["default"] == "fast"
    assert props["limit"]["default"] == 10
    assert schema["required"] == ["items", "weights"]


class Color(Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    zip: str = Field(pattern=r"^\d{5}$")


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Window(TypedDict):
    width: int
    height: int


async def test_enums_models_dataclasses_and_typeddicts_are_described() -> None:
    def shapes(color: Color, address: Address, point: Point, window: Window) -> str:
        return ""

    schema = await input_schema(shapes)
    defs = schema["$defs"]
    assert defs["Color"]["enum"] == ["red", "green"]
    assert defs["Address"]["required"] == ["street", "zip"]
    assert defs["Address"]["properties"]["zip"]["pattern"] == r"^\d{5}$"
    assert defs["Point"]["required"] == ["x"]
    assert defs["Window"]["required"] == ["width", "height"]
    validator = jsonschema.Draft202012Validator(schema)
    good = {
        "color": "red",
        "address": {"street": "Main", "zip": "12345"},
        "point": {"x": 1},
        "window": {"width": 1, "height": 2},
    }
    assert not list(validator.iter_errors(good))
    bad = {**good, "color": "blue", "address": {"street": "Main", "zip": "x"}}
    assert len(list(validator.iter_errors(bad))) == 2


async def test_google_docstring_gives_descriptions() -> None:
    def google(city: str, days: int = 3) -> str:
        """Forecast the weather.

        Looks far ahead.

        Args:
            city: The city to look up,
                for example Paris.
            days (int): How many days.

        Returns:
            The forecast.
        """
        return ""

    async with connect(server_with(google)) as client:
        (tool,) = await client.list_tools()
    assert tool["description"] == "Forecast the weather.\n\nLooks far ahead."
    props = tool["inputSchema"]["properties"]
    assert props["city"]["description"] == "The city to look up, for example Paris."
    assert props["days"]["description"] == "How many days."


async def test_sphinx_docstring_gives_descriptions() -> None:
    def sphinx(city: str, days: int = 3) -> str:
        """Forecast the weather.

        :param city: The city to look up.
        :param int days: How many days,
            at most ten.
        :returns: The forecast.
        """
        return ""

    async with connect(server_with(sphinx)) as client:
        (tool,) = await client.list_tools()
    assert tool["description"] == "Forecast the weather."
    props = tool["inputSchema"]["properties"]
    assert props["city"]["description"] == "The city to look up."
    assert props["days"]["description"] == "How many days, at most ten."


async def test_annotated_field_description_wins_over_the_docstring() -> None:
    def annotated(
        q: Annotated[str, Field(description="Search terms", min_length=1)],
        n: Annotated[int, Field(ge=1, le=50)] = 5,
    ) -> str:
        """Search.

        Args:
            q: ignored, the Field says it better
            n: How many results.
        """
        return ""

    props = (await input_schema(annotated))["properties"]
    assert props["q"]["description"] == "Search terms"
    assert props["q"]["minLength"] == 1
    assert props["n"]["description"] == "How many results."
    assert (props["n"]["minimum"], props["n"]["maximum"], props["n"]["default"]) == (1, 50, 5)


async def test_context_parameter_is_never_in_the_schema() -> None:
    def with_ctx(x: int, ctx: Context) -> str:
        return ""

    def with_optional_ctx(x: int, context: Context | None = None) -> str:
        return ""

    for fn in (with_ctx, with_optional_ctx):
        schema = await input_schema(fn)
        assert list(schema["properties"]) == ["x"]
        assert schema["required"] == ["x"]


async def test_no_parameters_gives_an_empty_object_schema() -> None:
    def nothing() -> str:
        return "ok"

    schema = await input_schema(nothing)
    assert schema["properties"] == {}
    assert "required" not in schema


def test_unsupported_annotation_fails_registration_naming_the_tool() -> None:
    class Opaque:
        pass

    def weird(thing: Opaque) -> str:
        return ""

    with pytest.raises(ConfigurationError, match="weird"):
        server_with(weird)


def test_constructor_collects_every_registration_problem() -> None:
    class Opaque:
        pass

    def bad_one(thing: Opaque) -> str:
        return ""

    def bad_two(thing: Opaque) -> str:
        return ""

    with pytest.raises(ConfigurationError) as info:
        MCPServer(name="x", version="1", tools={"one": bad_one, "two": bad_two, "three": 3})  # type: ignore[dict-item]
    message = str(info.value)
    assert "'one'" in message and "'two'" in message and "'three'" in message


def test_constructor_problems_name_each_tool_once_without_pydantic_internals() -> None:
    def unresolved(x: Nowhere) -> str:  # type: ignore[name-defined]  # noqa: F821
        return ""

    class Opaque:
        pass

    def opaque(thing: Opaque) -> str:
        return ""

    with pytest.raises(RegistrationError) as info:
        MCPServer(name="x", version="1", tools=[unresolved, opaque])
    assert info.value.problems == [
        "tool 'unresolved': parameter 'x': cannot resolve its annotation 'Nowhere' "
        "(NameError: name 'Nowhere' is not defined)",
        "tool 'opaque': parameter 'thing': type Opaque cannot be described as JSON Schema; "
        "use JSON types (str, int, float, bool, list, dict), a pydantic model, a dataclass "
        "or a TypedDict",
    ]
    assert str(info.value).startswith("2 registration errors:\n  - tool 'unresolved': ")


def test_a_decorator_reports_every_problem_of_its_function_at_once() -> None:
    server = MCPServer(name="x", version="1")

    class Opaque:
        pass

    with pytest.raises(RegistrationError) as info:

        @server.tool
        def broken(a: int, /, b: Opaque, *rest: int) -> str:
            return ""

    problems = info.value.problems
    assert len(problems) == 3, problems
    assert all(p.startswith("tool 'broken': ") for p in problems), problems
    assert "parameter 'a' is positional-only" in problems[0]
    assert "*rest cannot receive arguments" in problems[1]
    assert "parameter 'b': type Opaque cannot be described as JSON Schema" in problems[2]
    assert "broken" not in server.tools


def test_positional_only_parameters_are_refused_naming_them() -> None:
    def add(a: int, b: int, /) -> int:
        return a + b

    with pytest.raises(RegistrationError) as info:
        server_with(add)
    assert str(info.value) == "2 registration errors:\n" + "".join(
        f"  - tool 'add': parameter {p!r} is positional-only (declared before '/'), but MCP "
        f"passes arguments by name; remove the '/'" + ("\n" if p == "a" else "")
        for p in "ab"
    )


def test_var_positional_parameters_are_refused() -> None:
    def total(*numbers: int) -> int:
        return sum(numbers)

    with pytest.raises(RegistrationError, match=r"^tool 'total': \*numbers cannot receive"):
        server_with(total)


async def test_var_keyword_parameters_are_still_accepted() -> None:
    def greet(name: str, **extra: Any) -> str:
        return f"hi {name}"

    async with connect(server_with(greet)) as client:
        (listed,) = await client.list_tools()
        result = await client.call_tool("greet", {"name": "Ada"})
    assert listed["inputSchema"]["required"] == ["name"]
    assert text_of(result) == "hi Ada"


# -- create_tool (Mastra's createTool) ---------------------------------------------------------------

RAW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Who"},
        "address": {
            "type": "object",
            "properties": {
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
                "city": {"type": "string"},
            },
            "required": ["zip", "city"],
        },
        "age": {"type": "integer", "minimum": 0},
    },
    "required": ["name", "address"],
    "additionalProperties": False,
}


async def test_create_tool_with_a_raw_schema_emits_it_unchanged_and_validates() -> None:
    seen: list[dict[str, Any]] = []

    def execute(**kwargs: Any) -> str:
        seen.append(kwargs)
        return "ok"

    tool = create_tool(
        id="register", description="Register someone", input_schema=RAW_SCHEMA, execute=execute
    )
    server = server_with(tool)
    async with connect(server) as client:
        (listed,) = await client.list_tools()
        assert listed["inputSchema"] == RAW_SCHEMA
        assert listed["description"] == "Register someone"
        args = {"name": "Ann", "address": {"zip": "12345", "city": "Oslo"}}
        assert text_of(await client.call_tool("register", args)) == "ok"
        assert seen == [args]
        bad = await client.call_tool("register", {"address": {"zip": "12"}, "age": -1})
    assert bad["isError"] is True
    message = text_of(bad)
    for path in ("name", "address.zip", "address.city", "age"):
        assert path in message, (path, message)


async def test_create_tool_passes_only_declared_parameters_and_the_context() -> None:
    got: dict[str, Any] = {}

    async def execute(name: str, ctx: Context) -> str:
        got["name"] = name
        got["ctx"] = ctx
        return name.upper()

    tool = create_tool(id="shout", description="Shout", input_schema=RAW_SCHEMA, execute=execute)
    async with connect(server_with(tool)) as client:
        result = await client.call_tool(
            "shout", {"name": "ann", "address": {"zip": "12345", "city": "x"}}
        )
    assert text_of(result) == "ANN"
    assert got["name"] == "ann"
    assert isinstance(got["ctx"], Context)


class SearchInput(BaseModel):
    query: str = Field(description="What to find")
    limit: int = 5


class SearchOutput(BaseModel):
    hits: list[str]
    total: int


async def test_create_tool_with_pydantic_models_for_input_and_output() -> None:
    async def execute(query: str, limit: int) -> SearchOutput:
        return SearchOutput(hits=[query] * min(limit, 2), total=limit)

    tool = create_tool(
        id="search",
        description="Search",
        input_schema=SearchInput,
        output_schema=SearchOutput,
        execute=execute,
    )
    async with connect(server_with(tool)) as client:
        (listed,) = await client.list_tools()
        assert listed["inputSchema"] == SearchInput.model_json_schema()
        assert listed["outputSchema"]["properties"]["hits"]["type"] == "array"
        result = await client.call_tool("search", {"query": "x", "limit": "3"})
        assert result["structuredContent"] == {"hits": ["x", "x"], "total": 3}
        jsonschema.validate(result["structuredContent"], listed["outputSchema"])
        failed = await client.call_tool("search", {})
    assert failed["isError"] is True and "query" in text_of(failed)


async def test_create_tool_with_a_raw_output_schema_and_a_dict_result() -> None:
    out_schema = {
        "type": "object",
        "properties": {"celsius": {"type": "number"}},
        "required": ["celsius"],
    }

    def execute(city: str) -> dict[str, Any]:
        return {"celsius": 21.5}

    tool = create_tool(
        id="temp",
        description="Temperature",
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        output_schema=out_schema,
        execute=execute,
    )
    async with connect(server_with(tool)) as client:
        (listed,) = await client.list_tools()
        assert listed["outputSchema"] == out_schema
        result = await client.call_tool("temp", {"city": "Oslo"})
    assert result["structuredContent"] == {"celsius": 21.5}
    assert result["content"] == [{"type": "text", "text": '{"celsius":21.5}'}]


def test_create_tool_rejects_a_schema_that_is_neither_dict_nor_model() -> None:
    with pytest.raises(ConfigurationError, match="bad"):
        create_tool(id="bad", description="x", input_schema="nope", execute=lambda: "")  # type: ignore[arg-type]


async def test_create_tool_execute_context_receives_the_validated_model() -> None:
    got: list[Any] = []

    async def execute(context: SearchInput, ctx: Context) -> str:
        got.append((context, ctx))
        return f"{context.query}:{context.limit}"

    tool = create_tool(id="find", description="Find", input_schema=SearchInput, execute=execute)
    async with connect(server_with(tool)) as client:
        result = await client.call_tool("find", {"query": "x", "limit": "3"})
        failed = await client.call_tool("find", {"limit": 1})
    assert text_of(result) == "x:3"
    ((context, ctx),) = got
    assert context == SearchInput(query="x", limit=3)
    assert isinstance(ctx, Context)
    assert failed["isError"] is True and "query: Field required" in text_of(failed)


async def test_create_tool_execute_context_receives_the_validated_dict() -> None:
    def execute(context: dict[str, Any]) -> str:
        return f"{context['name']} from {context['address']['city']}"

    tool = create_tool(id="hello", description="Hi", input_schema=RAW_SCHEMA, execute=execute)
    async with connect(server_with(tool)) as client:
        result = await client.call_tool(
            "hello", {"name": "Ann", "address": {"zip": "12345", "city": "Oslo"}}
        )
    assert text_of(result) == "Ann from Oslo"


def test_create_tool_refuses_an_execute_the_schema_cannot_call() -> None:
    def two_strangers(query: str, page: int, size: int) -> str:
        return ""

    with pytest.raises(RegistrationError) as info:
        create_tool(id="s", description="S", input_schema=SearchInput, execute=two_strangers)
    assert str(info.value) == (
        "tool 's': execute parameter(s) 'page', 'size' are not properties of input_schema "
        "(it has: 'query', 'limit'); name parameters after the properties, or take the whole "
        "input in one parameter, as execute(context)"
    )

    def positional(query: str, /) -> str:
        return query

    with pytest.raises(RegistrationError, match=r"^tool 'p': execute: parameter 'query' is "):
        create_tool(id="p", description="P", input_schema=SearchInput, execute=positional)


# -- execution -------------------------------------------------------------------------------------


async def test_validated_arguments_are_coerced_models() -> None:
    got: list[Any] = []

    async def place(address: Address, color: Color, count: int) -> str:
        got.extend([address, color, count])
        return "ok"

    async with connect(server_with(place)) as client:
        await client.call_tool(
            "place", {"address": {"street": "a", "zip": "12345"}, "color": "green", "count": 2}
        )
    assert got == [Address(street="a", zip="12345"), Color.GREEN, 2]


async def test_sync_tools_run_in_a_worker_thread_without_blocking_the_loop() -> None:
    loop_thread = threading.get_ident()
    release = threading.Event()
    ran_in: list[int] = []

    def blocking() -> str:
        ran_in.append(threading.get_ident())
        # Waits for an async tool to run: only possible if the loop is free.
        if not release.wait(5):
            raise TimeoutError("the event loop was blocked")
        return "unblocked"

    async def unblock() -> str:
        release.set()
        return "set"

    async with connect(server_with(blocking, unblock)) as client:
        pending = asyncio.ensure_future(client.call_tool("blocking"))
        await asyncio.sleep(0.02)
        assert text_of(await asyncio.wait_for(client.call_tool("unblock"), 5)) == "set"
        assert text_of(await asyncio.wait_for(pending, 5)) == "unblocked"
    assert ran_in and ran_in[0] != loop_thread


async def test_run_in_thread_false_calls_a_sync_tool_on_the_loop() -> None:
    loop_thread = threading.get_ident()
    ran_in: list[int] = []
    server = MCPServer(name="x", version="1")

    @server.tool(run_in_thread=False)
    def quick(a: int) -> int:
        ran_in.append(threading.get_ident())
        return a * 2

    async with connect(server) as client:
        assert text_of(await client.call_tool("quick", {"a": 21})) == "42"
    assert ran_in == [loop_thread]


def test_run_in_thread_false_refuses_a_context_parameter() -> None:
    server = MCPServer(name="x", version="1")

    def needs_ctx(ctx: Context) -> str:
        return "never"

    with pytest.raises(ConfigurationError, match=r"needs_ctx.*run_in_thread=False"):
        server.tool(run_in_thread=False)(needs_ctx)


class Where(BaseModel):
    label: str


@pytest.mark.parametrize("schema", [None, Where, {"type": "object"}])
@pytest.mark.parametrize("run_in_thread", [True, False])
async def test_create_tool_runs_a_sync_execute_where_asked(
    schema: Any, run_in_thread: bool
) -> None:
    loop_thread = threading.get_ident()
    ran_in: list[int] = []

    def where(label: str = "x") -> str:
        ran_in.append(threading.get_ident())
        return label

    tool = create_tool(
        id="where",
        description="Where it runs.",
        execute=where,
        input_schema=schema,
        run_in_thread=run_in_thread,
    )
    async with connect(MCPServer(name="x", version="1", tools={"where": tool})) as client:
        assert text_of(await client.call_tool("where", {"label": "here"})) == "here"
    assert (ran_in[0] != loop_thread) is run_in_thread


@pytest.mark.parametrize("register", ["decorator", "create_tool"])
def test_run_in_thread_must_be_a_bool(register: str) -> None:
    def quick() -> str:
        return "never"

    with pytest.raises(ConfigurationError, match=r"quick.*run_in_thread must be True or False"):
        if register == "decorator":
            MCPServer(name="x", version="1").tool(run_in_thread="no")(quick)  # type: ignore[call-overload]
        else:
            create_tool(id="quick", description="q", execute=quick, run_in_thread=0)  # type: ignore[arg-type]


def test_create_tool_run_in_thread_false_refuses_a_context_parameter() -> None:
    def needs_ctx(ctx: Context, label: str) -> str:
        return "never"

    with pytest.raises(ConfigurationError, match=r"needs_ctx.*run_in_thread=False"):
        create_tool(
            id="needs_ctx",
            description="d",
            execute=needs_ctx,
            input_schema={"type": "object"},
            run_in_thread=False,
        )


@pytest.mark.parametrize("kind", ["tool_error", "other"])
async def test_a_sync_tools_error_reads_the_same_in_a_thread_and_inline(kind: str) -> None:
    def fail() -> str:
        raise ToolError("refused") if kind == "tool_error" else KeyError("secret")

    texts = []
    for run_in_thread in (True, False):
        server = MCPServer(name="x", version="1")
        server.tool(name="fail", run_in_thread=run_in_thread)(fail)
        async with connect(server) as client:
            result = await client.call_tool("fail")
        assert result["isError"] is True
        texts.append(text_of(result))
    assert texts[0] == texts[1]
    assert "secret" not in texts[0]


async def test_title_icons_annotations_and_meta_are_listed() -> None:
    server = MCPServer(name="x", version="1")
    icons = [{"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"]}]

    @server.tool(
        title="Delete a file",
        icons=icons,
        annotations=ToolAnnotations(title="Delete", destructive_hint=True, read_only_hint=False),
        meta={"example.com/tier": "gold"},
    )
    def delete(path: str) -> str:
        return ""

    @server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
    def peek(path: str) -> str:
        return ""

    async with connect(server) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
    assert tools["delete"]["title"] == "Delete a file"
    assert tools["delete"]["icons"] == icons
    assert tools["delete"]["annotations"] == {
        "title": "Delete",
        "readOnlyHint": False,
        "destructiveHint": True,
    }
    assert tools["delete"]["_meta"] == {"example.com/tier": "gold"}
    assert tools["peek"]["annotations"] == {"readOnlyHint": True, "openWorldHint": False}


async def test_tools_list_is_shaped_for_each_revision() -> None:
    server = MCPServer(name="x", version="1")

    @server.tool(
        title="Weather",
        icons=[{"src": "https://example.com/w.png"}],
        annotations=ToolAnnotations(read_only_hint=True),
        meta={"k": "v"},
    )
    def weather(city: str) -> dict[str, float]:
        return {"c": 1.0}

    expected = {
        "2024-11-05": {"name", "description", "inputSchema"},
        "2025-03-26": {"name", "description", "inputSchema", "annotations"},
        "2025-06-18": {
            "name",
            "description",
            "inputSchema",
            "annotations",
            "title",
            "outputSchema",
            "_meta",
        },
        "2025-11-25": {
            "name",
            "description",
            "inputSchema",
            "annotations",
            "title",
            "outputSchema",
            "_meta",
            "icons",
        },
    }
    for version, keys in expected.items():
        async with connect(server, protocol_version=version) as client:
            (tool,) = await client.list_tools()
            assert set(tool) == keys, version
            result = await client.call_tool("weather", {"city": "x"})
            assert ("structuredContent" in result) is (version >= "2025-06-18")


# -- results ---------------------------------------------------------------------------------------


async def test_result_conversions() -> None:
    png = b"\x89PNG\r\n\x1a\n"
    wav = b"RIFF0000WAVE"

    def text() -> str:
        return "plain"

    def image() -> Image:
        return Image(data=png, mime_type="image/png")

    def audio() -> Audio:
        return Audio(data=wav, mime_type="audio/wav")

    def link() -> ResourceLink:
        return ResourceLink(
            uri="file:///a.txt", name="a.txt", mime_type="text/plain", description="A"
        )

    def embedded_text() -> EmbeddedResource:
        return EmbeddedResource(uri="test://doc", text="hello", mime_type="text/plain")

    def embedded_blob() -> EmbeddedResource:
        return EmbeddedResource(
            uri="test://bin", blob=b"\x00\x01", mime_type="application/octet-stream"
        )

    def mixed() -> list[Any]:
        return ["one", Image(data=png, mime_type="image/png"), "two"]

    def number() -> int:
        return 42

    def nothing() -> None:
        return None

    def full() -> ToolResult:
        return ToolResult(content=["custom"], is_error=True, meta={"m": 1})

    server = server_with(
        text, image, audio, link, embedded_text, embedded_blob, mixed, number, nothing, full
    )
    async with connect(server) as client:
        call = client.call_tool
        assert (await call("text"))["content"] == [{"type": "text", "text": "plain"}]
        assert (await call("image"))["content"] == [
            {"type": "image", "data": base64.b64encode(png).decode(), "mimeType": "image/png"}
        ]
        assert (await call("audio"))["content"] == [
            {"type": "audio", "data": base64.b64encode(wav).decode(), "mimeType": "audio/wav"}
        ]
        assert (await call("link"))["content"] == [
            {
                "type": "resource_link",
                "uri": "file:///a.txt",
                "name": "a.txt",
                "description": "A",
                "mimeType": "text/plain",
            }
        ]
        assert (await call("embedded_text"))["content"] == [
            {
                "type": "resource",
                "resource": {"uri": "test://doc", "mimeType": "text/plain", "text": "hello"},
            }
        ]
        blob = (await call("embedded_blob"))["content"][0]["resource"]
        assert blob == {"uri": "test://bin", "mimeType": "application/octet-stream", "blob": "AAE="}
        assert [c["type"] for c in (await call("mixed"))["content"]] == ["text", "image", "text"]
        assert (await call("number"))["content"] == [{"type": "text", "text": "42"}]
        assert (await call("nothing"))["content"] == []
        assert await call("full") == {
            "content": [{"type": "text", "text": "custom"}],
            "isError": True,
            "_meta": {"m": 1},
        }


class Forecast(BaseModel):
    city: str
    celsius: float


@dataclasses.dataclass
class Reading:
    sensor: str
    value: int


async def test_object_return_types_give_structured_content_and_json_text() -> None:
    def forecast(city: str) -> Forecast:
        return Forecast(city=city, celsius=20.5)

    def reading() -> Reading:
        return Reading(sensor="s1", value=3)

    def window() -> Window:
        return {"width": 3, "height": 4}

    def counts() -> dict[str, int]:
        return {"a": 1}

    async with connect(server_with(forecast, reading, window, counts)) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        for name, args, expected in [
            ("forecast", {"city": "Rome"}, {"city": "Rome", "celsius": 20.5}),
            ("reading", {}, {"sensor": "s1", "value": 3}),
            ("window", {}, {"width": 3, "height": 4}),
            ("counts", {}, {"a": 1}),
        ]:
            schema = tools[name]["outputSchema"]
            jsonschema.Draft202012Validator.check_schema(schema)
            assert schema["type"] == "object"
            result = await client.call_tool(name, args)
            assert result["structuredContent"] == expected
            jsonschema.validate(expected, schema)
            assert result["content"][0]["type"] == "text"
            import json

            assert json.loads(result["content"][0]["text"]) == expected


async def test_structured_output_can_be_turned_off() -> None:
    server = MCPServer(name="x", version="1")

    @server.tool(structured_output=False)
    def plain() -> Forecast:
        return Forecast(city="a", celsius=1)

    async with connect(server) as client:
        (tool,) = await client.list_tools()
        assert "outputSchema" not in tool
        result = await client.call_tool("plain")
    assert "structuredContent" not in result
    assert '"city":"a"' in text_of(result)


# -- errors ----------------------------------------------------------------------------------------


class Person(BaseModel):
    name: str
    address: Address


async def test_validation_errors_name_every_failing_path() -> None:
    def register(person: Person, age: int, email: str) -> str:
        return "ok"

    async with connect(server_with(register)) as client:
        result = await client.call_tool(
            "register", {"person": {"name": "a", "address": {"street": "s"}}, "age": "old"}
        )
    assert result["isError"] is True
    message = text_of(result)
    assert "register" in message
    for path in ("person.address.zip", "age", "email"):
        assert path in message, (path, message)


async def test_exceptions_become_is_error_without_internals() -> None:
    def leaky() -> str:
        raise ValueError("secret connection string postgres://u:p@h")

    async with connect(server_with(leaky)) as client:
        result = await client.call_tool("leaky")
    assert result["isError"] is True
    message = text_of(result)
    assert "leaky" in message
    assert "secret" not in message and "Traceback" not in message


async def test_debug_mode_shows_the_exception_and_traceback() -> None:
    def leaky() -> str:
        raise ValueError("detail for developers")

    async with connect(server_with(leaky, debug=True)) as client:
        result = await client.call_tool("leaky")
    message = text_of(result)
    assert result["isError"] is True
    assert "detail for developers" in message and "Traceback" in message


async def test_tool_error_message_is_shown() -> None:
    async def picky(n: int) -> str:
        raise ToolError(f"{n} is not a prime number")

    async with connect(server_with(picky)) as client:
        result = await client.call_tool("picky", {"n": 4})
    assert result == {
        "content": [{"type": "text", "text": "4 is not a prime number"}],
        "isError": True,
    }


async def test_capability_errors_inside_a_tool_become_is_error_with_their_message() -> None:
    async def needs_sampling(ctx: Context) -> str:
        await ctx.sample("hi")
        return "unreachable"

    async with connect(server_with(needs_sampling)) as client:
        result = await client.call_tool("needs_sampling")
    assert result["isError"] is True
    assert "sampling" in text_of(result)


async def test_an_mcp_error_raised_on_purpose_is_a_json_rpc_error() -> None:
    async def strict(n: int) -> str:
        raise InvalidParams("n must be even")

    async with connect(server_with(strict)) as client:
        with pytest.raises(RemoteError) as info:
            await client.call_tool("strict", {"n": 1})
    assert info.value.code == INVALID_PARAMS
    assert info.value.message == "n must be even"


async def test_unknown_tool_is_32602() -> None:
    async with connect(server_with()) as client:
        with pytest.raises(RemoteError) as info:
            await client.call_tool("nope")
    assert info.value.code == INVALID_PARAMS
    assert "nope" in info.value.message


def test_capability_error_is_importable_from_the_package() -> None:
    assert issubclass(CapabilityError, Exception)


# -- run-time changes ------------------------------------------------------------------------------


async def test_adding_a_tool_at_run_time_notifies_and_relists() -> None:
    server = server_with()
    async with connect(server) as client:
        assert await client.list_tools() == []

        def late(x: int) -> int:
            return x

        server.add_tool(late)
        await server.tools.notify_list_changed()
        assert [n["method"] for n in client.notifications] == ["notifications/tools/list_changed"]
        assert [t["name"] for t in await client.list_tools()] == ["late"]
        server.tools.remove("late")
        assert await client.list_tools() == []


async def test_results_that_break_the_declared_output_type_are_errors() -> None:
    def wrong_field() -> Forecast:
        return {"city": "x", "celsius": "warm"}  # type: ignore[return-value]

    def wrong_kind() -> Forecast:
        return "sunny"  # type: ignore[return-value]

    def nothing() -> dict[str, int]:
        return None  # type: ignore[return-value]

    def coercible() -> Window:
        return {"width": "3", "height": 4}  # type: ignore[typeddict-item]

    async with connect(server_with(wrong_field, wrong_kind, nothing, coercible)) as client:
        for name, detail in [
            ("wrong_field", "celsius"),
            ("wrong_kind", "(result)"),
            ("nothing", "(result)"),
        ]:
            result = await client.call_tool(name)
            assert result["isError"] is True, name
            assert "output schema" in text_of(result) and detail in text_of(result), text_of(result)
            assert "structuredContent" not in result
        fixed = await client.call_tool("coercible")
    assert fixed["structuredContent"] == {"width": 3, "height": 4}


class Opaque:
    """Not a type pydantic can describe."""


def test_unsupported_return_annotation_fails_registration_naming_the_tool() -> None:
    def returns_opaque() -> dict[str, Opaque]:
        return {}

    with pytest.raises(ConfigurationError, match="returns_opaque"):
        server_with(returns_opaque)


def test_by_name_is_the_tool_table_kept_by_add_and_remove() -> None:
    server = MCPServer(name="t", version="1")

    @server.tool
    def one() -> str:
        return "1"

    assert list(server.tools.by_name) == ["one"]
    assert server.tools.by_name["one"] is server.tools.get("one")
    server.tools.remove("one")
    assert server.tools.by_name == {}
