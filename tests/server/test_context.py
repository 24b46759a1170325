"""Context: logging, progress, cancellation, elicitation, sampling, roots, extra."""

from __future__ import annotations

import asyncio
import threading
from enum import Enum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from mcpkit import (
    CallNext,
    CapabilityError,
    Context,
    ElicitationValidationError,
    ElicitResult,
    InvalidParams,
    MCPServer,
    MiddlewareContext,
    PeerTimeout,
    Root,
    ServerLimits,
    current_context,
)
from mcpkit.errors import INVALID_PARAMS, RemoteError
from mcpkit.server.context import CancelSignal, progress_reported_to, requests_answered_by
from mcpkit.testing import connect
from tests.schema import unchecked_client_traffic, validate_message

ELICIT = {"elicitation": {}}


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result["content"] if c["type"] == "text")


def requests_of(client: Any, method: str) -> list[dict[str, Any]]:
    return [m for m in client.received if m.get("method") == method and "id" in m]


# -- logging ---------------------------------------------------------------------------------------


def logging_server() -> MCPServer:
    server = MCPServer(name="log", version="1", default_log_level="debug")

    @server.tool
    async def chatty(ctx: Context) -> str:
        await ctx.debug("d")
        await ctx.info({"structured": True}, logger="app")
        await ctx.warning("w")
        await ctx.error("e")
        await ctx.log("critical", "c")
        return "done"

    @server.tool
    def chatty_sync(ctx: Context) -> str:
        ctx.debug("sd")
        ctx.error("se")
        return "done"

    return server


def levels(client: Any) -> list[str]:
    return [
        n["params"]["level"] for n in client.notifications if n["method"] == "notifications/message"
    ]


async def test_log_messages_reach_the_client() -> None:
    async with connect(logging_server()) as client:
        await client.call_tool("chatty")
        assert levels(client) == ["debug", "info", "warning", "error", "critical"]
        info = next(n for n in client.notifications if n["params"].get("level") == "info")
        assert info["params"] == {"level": "info", "data": {"structured": True}, "logger": "app"}


async def test_set_level_filters_messages_below_it() -> None:
    async with connect(logging_server()) as client:
        assert await client.request("logging/setLevel", {"level": "warning"}) == {}
        await client.call_tool("chatty")
        assert levels(client) == ["warning", "error", "critical"]
        await client.request("logging/setLevel", {"level": "emergency"})
        await client.call_tool("chatty")
        assert levels(client) == ["warning", "error", "critical"]


async def test_sync_tools_log_from_their_thread() -> None:
    async with connect(logging_server()) as client:
        await client.request("logging/setLevel", {"level": "info"})
        await client.call_tool("chatty_sync")
        assert levels(client) == ["error"]


async def test_default_level_comes_from_the_server() -> None:
    server = logging_server()
    server.default_log_level = "error"
    quiet = MCPServer(name="q", version="1", default_log_level="error")
    quiet.add_tool(server.tools.get("chatty").execute)  # type: ignore[union-attr]
    async with connect(quiet) as client:
        await client.call_tool("chatty")
        assert levels(client) == ["error", "critical"]


@pytest.mark.parametrize("level", ["verbose", "", None, 3, "DEBUG"])
async def test_invalid_log_level_is_32602(level: Any) -> None:
    async with connect(logging_server()) as client:
        out = await client.send_raw(
            {"jsonrpc": "2.0", "id": 5, "method": "logging/setLevel", "params": {"level": level}}
        )
        assert out["error"]["code"] == INVALID_PARAMS
        assert await client.request("logging/setLevel", {"level": "debug"}) == {}


# -- progress --------------------------------------------------------------------------------------


def progress_server() -> MCPServer:
    server = MCPServer(name="p", version="1")

    @server.tool
    async def work(ctx: Context) -> str:
        for i in range(3):
            await ctx.progress(i + 1, total=3, message=f"step {i + 1}")
        return "done"

    @server.tool
    def work_sync(ctx: Context) -> str:
        ctx.progress(0.5)
        return "done"

    return server


@pytest.mark.parametrize("token", ["tok-1", 7])
async def test_progress_notifications_carry_the_request_token(token: str | int) -> None:
    async with connect(progress_server()) as client:
        await client.call_tool("work", progress_token=token)
        progress = [
            n["params"] for n in client.notifications if n["method"] == "notifications/progress"
        ]
    assert progress == [
        {"progressToken": token, "progress": 1, "total": 3, "message": "step 1"},
        {"progressToken": token, "progress": 2, "total": 3, "message": "step 2"},
        {"progressToken": token, "progress": 3, "total": 3, "message": "step 3"},
    ]


async def test_progress_messages_are_left_out_for_2024_11_05() -> None:
    async with connect(progress_server(), protocol_version="2024-11-05") as client:
        await client.call_tool("work", progress_token=1)
        progress = [
            n["params"] for n in client.notifications if n["method"] == "notifications/progress"
        ]
    assert progress[0] == {"progressToken": 1, "progress": 1, "total": 3}


async def test_progress_from_a_sync_tool() -> None:
    async with connect(progress_server()) as client:
        await client.call_tool("work_sync", progress_token="s")
        progress = [
            n["params"] for n in client.notifications if n["method"] == "notifications/progress"
        ]
    assert progress == [{"progressToken": "s", "progress": 0.5}]


async def test_progress_is_a_no_op_without_a_token() -> None:
    async with connect(progress_server()) as client:
        assert text_of(await client.call_tool("work")) == "done"
        assert text_of(await client.call_tool("work_sync")) == "done"
        assert not [n for n in client.notifications if n["method"] == "notifications/progress"]


async def test_a_progress_token_of_an_invalid_type_is_ignored() -> None:
    async with connect(progress_server()) as client:
        params = {"name": "work", "_meta": {"progressToken": {"x": 1}}}
        out = await client.send_raw(
            {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}
        )
        assert out["result"]["content"][0]["text"] == "done"
        assert not [n for n in client.notifications if n["method"] == "notifications/progress"]


# -- cancellation ----------------------------------------------------------------------------------


async def test_cancelled_notification_cancels_a_running_async_tool() -> None:
    server = MCPServer(name="c", version="1")
    started = asyncio.Event()
    outcome: dict[str, Any] = {}

    @server.tool
    async def slow(ctx: Context) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            outcome["cancelled_error"] = True
            outcome["ctx.cancelled"] = ctx.cancelled
            outcome["signal"] = ctx.extra.signal.cancelled
            raise
        return "finished"

    async with connect(server) as client:
        call = asyncio.ensure_future(client.call_tool("slow"))
        await asyncio.wait_for(started.wait(), 5)
        request_id = client.sent[-1]["id"]
        await client.notify("notifications/cancelled", {"requestId": request_id, "reason": "user"})
        with pytest.raises(RemoteError, match="no response"):
            await asyncio.wait_for(call, 5)
        # No response was written for the cancelled request.
        assert not [m for m in client.received if m.get("id") == request_id]
        assert outcome == {"cancelled_error": True, "ctx.cancelled": True, "signal": True}
        # The session keeps working.
        assert await client.request("ping") == {}
        assert client.session._inflight == {}


async def test_cancelling_an_unknown_or_finished_request_is_harmless() -> None:
    server = MCPServer(name="c", version="1")

    @server.tool
    def quick() -> str:
        return "ok"

    async with connect(server) as client:
        await client.call_tool("quick")
        await client.notify("notifications/cancelled", {"requestId": client.sent[-1]["id"]})
        await client.notify("notifications/cancelled", {"requestId": "never-sent"})
        assert text_of(await client.call_tool("quick")) == "ok"


async def test_initialize_cannot_be_cancelled() -> None:
    server = MCPServer(name="c", version="1")
    async with connect(server, initialize=False) as client:
        session = client.session
        init = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        }
        task = asyncio.ensure_future(client.send_raw(init))
        await asyncio.sleep(0)
        assert session.cancel("init") is False
        assert "result" in await asyncio.wait_for(task, 5)


# -- elicitation -----------------------------------------------------------------------------------


class Booking(BaseModel):
    name: str = Field(description="Your name")
    guests: int = Field(default=2, ge=1, le=10)
    vegetarian: bool = False
    seating: Literal["inside", "outside"] = "inside"


def elicit_server(schema: Any) -> tuple[MCPServer, list[Any]]:
    server = MCPServer(name="e", version="1")
    seen: list[Any] = []

    @server.tool
    async def book(ctx: Context) -> str:
        answer = await ctx.elicit("Book a table?", schema)
        seen.append(answer)
        return answer.action

    return server, seen


async def test_elicit_with_a_pydantic_model_parses_the_answer() -> None:
    server, seen = elicit_server(Booking)

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {
            "action": "accept",
            "content": {"name": "Ada", "guests": 4, "vegetarian": True, "seating": "outside"},
        }

    async with connect(
        server, capabilities=ELICIT, handlers={"elicitation/create": answer}
    ) as client:
        assert text_of(await client.call_tool("book")) == "accept"
        (request,) = requests_of(client, "elicitation/create")
    assert seen == [
        ElicitResult(
            action="accept",
            content=Booking(name="Ada", guests=4, vegetarian=True, seating="outside"),
        )
    ]
    params = request["params"]
    assert params["message"] == "Book a table?"
    assert params["mode"] == "form"
    schema = params["requestedSchema"]
    assert schema["type"] == "object" and schema["required"] == ["name"]
    assert schema["properties"]["name"]["description"] == "Your name"
    assert schema["properties"]["guests"]["type"] == "integer"
    assert schema["properties"]["guests"]["default"] == 2
    assert schema["properties"]["vegetarian"] == {
        "default": False,
        "title": "Vegetarian",
        "type": "boolean",
    }
    assert schema["properties"]["seating"]["enum"] == ["inside", "outside"]


class Drink(Enum):
    TEA = "tea"
    COFFEE = "coffee"


class Order(BaseModel):
    drink: Drink = Drink.TEA
    extras: list[Literal["milk", "sugar"]] = []
    note: str | None = None


async def test_pydantic_enums_multi_select_and_optional_fields() -> None:
    server, seen = elicit_server(Order)

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"drink": "coffee", "extras": ["milk"]}}

    async with connect(
        server, capabilities=ELICIT, handlers={"elicitation/create": answer}
    ) as client:
        await client.call_tool("book")
        schema = requests_of(client, "elicitation/create")[0]["params"]["requestedSchema"]
    props = schema["properties"]
    assert props["drink"]["enum"] == ["tea", "coffee"] and props["drink"]["default"] == "tea"
    assert props["extras"]["type"] == "array"
    assert props["extras"]["items"] == {"enum": ["milk", "sugar"], "type": "string"}
    assert props["note"]["type"] == "string" and "default" not in props["note"]
    assert seen[0].content == Order(drink=Drink.COFFEE, extras=["milk"])


ENUM_FORMS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitled": {"type": "string", "enum": ["a", "b"], "default": "a"},
        "titled": {
            "type": "string",
            "oneOf": [{"const": "#f00", "title": "Red"}, {"const": "#0f0", "title": "Green"}],
            "default": "#f00",
        },
        "multi": {
            "type": "array",
            "items": {"type": "string", "enum": ["x", "y", "z"]},
            "minItems": 1,
            "default": ["x"],
        },
        "multi_titled": {
            "type": "array",
            "items": {"anyOf": [{"const": "1", "title": "One"}, {"const": "2", "title": "Two"}]},
        },
        "legacy": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
        "name": {"type": "string", "default": "anon", "format": "email"},
        "count": {"type": "integer", "minimum": 0, "default": 1},
        "ok": {"type": "boolean", "default": True},
    },
    "required": ["untitled"],
}


async def test_elicit_with_a_dict_schema_sends_every_2025_11_25_enum_form_unchanged() -> None:
    server, seen = elicit_server(ENUM_FORMS)
    content = {
        "untitled": "b",
        "titled": "#0f0",
        "multi": ["x", "z"],
        "multi_titled": ["2"],
        "legacy": "m",
    }

    async with connect(
        server,
        capabilities=ELICIT,
        handlers={"elicitation/create": lambda p: {"action": "accept", "content": content}},
    ) as client:
        await client.call_tool("book")
        (request,) = requests_of(client, "elicitation/create")
    assert request["params"]["requestedSchema"] == ENUM_FORMS
    assert seen == [ElicitResult(action="accept", content=content)]


async def test_elicitation_schema_is_downgraded_for_2025_06_18() -> None:
    schema = {k: v for k, v in ENUM_FORMS.items()}
    schema["properties"] = {
        k: v for k, v in ENUM_FORMS["properties"].items() if not k.startswith("multi")
    }
    server, _ = elicit_server(schema)
    async with connect(
        server,
        protocol_version="2025-06-18",
        capabilities=ELICIT,
        handlers={"elicitation/create": lambda p: {"action": "decline"}},
    ) as client:
        await client.call_tool("book")
        params = requests_of(client, "elicitation/create")[0]["params"]
    assert "mode" not in params
    props = params["requestedSchema"]["properties"]
    assert props["titled"] == {
        "type": "string",
        "enum": ["#f00", "#0f0"],
        "enumNames": ["Red", "Green"],
    }
    assert (
        "default" not in props["untitled"]
        and "default" not in props["name"]
        and "default" not in props["count"]
    )
    assert props["ok"]["default"] is True  # BooleanSchema had defaults already


async def test_multi_select_cannot_be_sent_to_a_2025_06_18_client() -> None:
    server, _ = elicit_server(ENUM_FORMS)
    async with connect(server, protocol_version="2025-06-18", capabilities=ELICIT) as client:
        result = await client.call_tool("book")
        assert not requests_of(client, "elicitation/create")
    assert result["isError"] is True
    assert "multi" in text_of(result) and "2025-11-25" in text_of(result)


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_carry_no_content(action: str) -> None:
    server, seen = elicit_server(Booking)
    async with connect(
        server, capabilities=ELICIT, handlers={"elicitation/create": lambda p: {"action": action}}
    ) as client:
        assert text_of(await client.call_tool("book")) == action
    assert seen == [ElicitResult(action=action)]  # type: ignore[arg-type]


def bad_booking(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"guests": 99, "seating": "roof"}}


async def test_an_uncaught_answer_that_does_not_fit_the_model_is_a_clear_tool_error() -> None:
    server, seen = elicit_server(Booking)
    async with connect(
        server, capabilities=ELICIT, handlers={"elicitation/create": bad_booking}
    ) as client:
        result = await client.call_tool("book")
    assert result["isError"] is True
    assert text_of(result) == (
        "the answer to elicitation did not match the requested schema: "
        "field name: Field required; "
        "field guests: Input should be less than or equal to 10; "
        "field seating: Input should be 'inside' or 'outside'"
    )
    assert "pydantic" not in text_of(result) and "validation error" not in text_of(result)
    assert seen == []


@pytest.mark.parametrize("sync", [False, True])
async def test_a_tool_can_catch_the_invalid_answer_and_see_what_was_wrong(sync: bool) -> None:
    server = MCPServer(name="e", version="1")
    caught: list[ElicitationValidationError] = []

    def handle(exc: ElicitationValidationError) -> str:
        caught.append(exc)
        fields = sorted(str(err["loc"][0]) for err in exc.errors)
        return f"please fix {', '.join(fields)} (you sent {exc.content})"

    if sync:

        @server.tool
        def book(ctx: Context) -> str:
            try:
                ctx.elicit("Book a table?", Booking)
            except ElicitationValidationError as exc:
                return handle(exc)
            return "booked"
    else:

        @server.tool
        async def book(ctx: Context) -> str:
            try:
                await ctx.elicit("Book a table?", Booking)
            except ElicitationValidationError as exc:
                return handle(exc)
            return "booked"

    async with connect(
        server, capabilities=ELICIT, handlers={"elicitation/create": bad_booking}
    ) as client:
        result = await client.call_tool("book")
    assert result.get("isError") is not True
    assert text_of(result) == (
        "please fix guests, name, seating (you sent {'guests': 99, 'seating': 'roof'})"
    )
    (exc,) = caught
    assert isinstance(exc, InvalidParams)  # code that caught InvalidParams still does
    assert exc.content == {"guests": 99, "seating": "roof"}
    assert [(e["loc"], e["type"]) for e in exc.errors] == [
        (("name",), "missing"),
        (("guests",), "less_than_equal"),
        (("seating",), "literal_error"),
    ]


async def test_a_non_object_answer_to_a_dict_schema_is_the_same_typed_error() -> None:
    server = MCPServer(name="e", version="1")
    caught: list[ElicitationValidationError] = []

    @server.tool
    async def ask(ctx: Context) -> str:
        try:
            await ctx.elicit("Name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        except ElicitationValidationError as exc:
            caught.append(exc)
            raise

    async with connect(
        server,
        capabilities=ELICIT,
        handlers={"elicitation/create": lambda p: {"action": "accept", "content": [1]}},
    ) as client:
        unchecked_client_traffic(client)  # the answer breaks the schema on purpose
        result = await client.call_tool("ask")
    assert result["isError"] is True
    assert text_of(result) == (
        "the answer to elicitation did not match the requested schema: "
        "the content is not an object (got list)"
    )
    assert caught[0].content == [1]


TABLE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2},
        "guests": {"type": "integer", "minimum": 1, "maximum": 10},
        "score": {"type": "number", "default": 95.5},
        "seating": {"type": "string", "enum": ["inside", "outside"]},
    },
    "required": ["name", "guests"],
}


async def test_an_answer_that_does_not_fit_a_dict_schema_is_the_same_typed_error() -> None:
    server = MCPServer(name="e", version="1")
    caught: list[ElicitationValidationError] = []

    @server.tool
    async def book(ctx: Context) -> str:
        try:
            await ctx.elicit("Book a table?", TABLE)
        except ElicitationValidationError as exc:
            caught.append(exc)
            raise
        return "booked"

    sent = {"guests": 99, "seating": "roof", "score": "high"}
    async with connect(
        server,
        capabilities=ELICIT,
        handlers={"elicitation/create": lambda p: {"action": "accept", "content": sent}},
    ) as client:
        unchecked_client_traffic(client)  # the answer breaks the form on purpose
        result = await client.call_tool("book")
    assert result["isError"] is True
    assert text_of(result) == (
        "the answer to elicitation did not match the requested schema: "
        "field name: Field required; "
        "field guests: Input should be less than or equal to 10; "
        "field score: Input should be a valid number; "
        "field seating: Input should be 'inside' or 'outside'"
    )
    (exc,) = caught
    assert isinstance(exc, InvalidParams) and exc.content == sent
    assert [(e["loc"], e["type"], e["input"]) for e in exc.errors] == [
        (("name",), "missing", sent),
        (("guests",), "less_than_equal", 99),
        (("score",), "float_type", "high"),
        (("seating",), "literal_error", "roof"),
    ]


async def test_a_dict_schema_takes_fractions_for_numbers_and_3_0_for_integers() -> None:
    server, seen = elicit_server(TABLE)
    answer = {"name": "Ada", "guests": 3.0, "score": 95.5}
    async with connect(
        server,
        capabilities=ELICIT,
        handlers={"elicitation/create": lambda p: {"action": "accept", "content": answer}},
    ) as client:
        unchecked_client_traffic(client)  # ElicitResult content has no numbers with fractions
        assert text_of(await client.call_tool("book")) == "accept"
    (result,) = seen
    assert result.content == {"name": "Ada", "guests": 3, "score": 95.5}
    assert type(result.content["guests"]) is int


async def test_an_invalid_answer_in_a_resource_is_a_clear_invalid_params_error() -> None:
    server = MCPServer(name="e", version="1")

    @server.resource("booking://new")
    async def new_booking(ctx: Context) -> str:
        answer = await ctx.elicit("Book a table?", Booking)
        return str(answer.content)

    async with connect(
        server, capabilities=ELICIT, handlers={"elicitation/create": bad_booking}
    ) as client:
        with pytest.raises(RemoteError) as info:
            await client.read_resource("booking://new")
    assert info.value.code == INVALID_PARAMS
    assert info.value.message.startswith(
        "the answer to elicitation did not match the requested schema: field name: Field required"
    )


async def test_elicit_needs_the_client_capability() -> None:
    server, _ = elicit_server(Booking)
    async with connect(server) as client:
        result = await client.call_tool("book")
    assert result["isError"] is True
    assert "elicitation" in text_of(result) and "capability" in text_of(result)


async def test_elicit_needs_form_mode_when_the_client_declares_modes() -> None:
    server, _ = elicit_server(Booking)
    async with connect(server, capabilities={"elicitation": {"url": {}}}) as client:
        result = await client.call_tool("book")
    assert result["isError"] is True and "form" in text_of(result)


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26"])
async def test_elicit_is_unavailable_before_2025_06_18(version: str) -> None:
    server = MCPServer(name="e", version="1")
    caught: list[BaseException] = []

    @server.tool
    async def ask(ctx: Context) -> str:
        try:
            await ctx.elicit("?", Booking)
        except CapabilityError as exc:
            caught.append(exc)
        return "handled"

    async with connect(server, protocol_version=version, capabilities=ELICIT) as client:
        unchecked_client_traffic(client)  # declaring elicitation in this revision is the point
        assert text_of(await client.call_tool("ask")) == "handled"
    assert version in str(caught[0])


async def test_elicit_from_a_sync_tool() -> None:
    server = MCPServer(name="e", version="1")

    @server.tool
    def ask(ctx: Context) -> str:
        answer = ctx.elicit("Name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        return str(answer.content)

    async with connect(
        server,
        capabilities=ELICIT,
        handlers={"elicitation/create": lambda p: {"action": "accept", "content": {"n": "Bo"}}},
    ) as client:
        assert text_of(await client.call_tool("ask")) == "{'n': 'Bo'}"


async def test_unknown_elicitation_action_is_reported() -> None:
    server, _ = elicit_server(Booking)
    async with connect(
        server, capabilities=ELICIT, handlers={"elicitation/create": lambda p: {"action": "maybe"}}
    ) as client:
        unchecked_client_traffic(client)  # the invalid answer is the point
        with pytest.raises(RemoteError, match="maybe"):
            await client.call_tool("book")


# -- sampling, roots, ping ---------------------------------------------------------------------------


async def test_sample_sends_create_message_and_returns_the_result() -> None:
    server = MCPServer(name="s", version="1")

    @server.tool
    async def summarize(text: str, ctx: Context) -> str:
        result = await ctx.sample(
            f"Summarize: {text}", max_tokens=50, system_prompt="Be brief", temperature=0.2
        )
        return str(result["content"]["text"])

    def llm(params: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m"}

    async with connect(
        server, capabilities={"sampling": {}}, handlers={"sampling/createMessage": llm}
    ) as client:
        assert text_of(await client.call_tool("summarize", {"text": "long"})) == "short"
        (request,) = requests_of(client, "sampling/createMessage")
    assert request["params"] == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Summarize: long"}}],
        "maxTokens": 50,
        "systemPrompt": "Be brief",
        "temperature": 0.2,
    }


async def test_list_roots_returns_roots() -> None:
    server = MCPServer(name="r", version="1")
    got: list[Any] = []

    @server.tool
    async def roots(ctx: Context) -> str:
        got.extend(await ctx.list_roots())
        return "ok"

    answer = {"roots": [{"uri": "file:///a", "name": "A"}, {"uri": "file:///b"}]}
    async with connect(
        server, capabilities={"roots": {}}, handlers={"roots/list": lambda p: answer}
    ) as client:
        await client.call_tool("roots")
    assert got == [Root(uri="file:///a", name="A"), Root(uri="file:///b")]


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("sampling", lambda ctx: ctx.sample("x")),
        ("roots", lambda ctx: ctx.list_roots()),
        ("elicitation", lambda ctx: ctx.elicit("x", {"type": "object", "properties": {}})),
    ],
)
async def test_server_requests_need_the_client_capability(method: str, call: Any) -> None:
    server = MCPServer(name="r", version="1")
    caught: list[BaseException] = []

    @server.tool
    async def needs(ctx: Context) -> str:
        try:
            await call(ctx)
        except CapabilityError as exc:
            caught.append(exc)
        return "ok"

    async with connect(server) as client:
        await client.call_tool("needs")
        assert client.received and not [m for m in client.received if "id" in m and "method" in m]
    assert f"'{method}' capability" in str(caught[0])


async def test_ping_the_client() -> None:
    server = MCPServer(name="p", version="1")

    @server.tool
    async def ping_back(ctx: Context) -> str:
        return str(await ctx.ping())

    async with connect(server) as client:
        assert text_of(await client.call_tool("ping_back")) == "{}"


async def test_server_requests_time_out_with_peer_timeout_and_are_cancelled() -> None:
    server = MCPServer(name="t", version="1", limits=ServerLimits(request_timeout=0.05))
    caught: list[BaseException] = []

    @server.tool
    async def ask(ctx: Context) -> str:
        try:
            await ctx.sample("hello?")
        except PeerTimeout as exc:
            caught.append(exc)
        return "gave up"

    async def never(params: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(30)
        return {}

    async with connect(
        server, capabilities={"sampling": {}}, handlers={"sampling/createMessage": never}
    ) as client:
        assert text_of(await asyncio.wait_for(client.call_tool("ask"), 5)) == "gave up"
        (request,) = requests_of(client, "sampling/createMessage")
        cancels = [n for n in client.notifications if n["method"] == "notifications/cancelled"]
    assert "sampling/createMessage" in str(caught[0])
    assert cancels[0]["params"]["requestId"] == request["id"]


async def test_per_call_timeout_overrides_the_server_default() -> None:
    server = MCPServer(name="t", version="1", limits=ServerLimits(request_timeout=60))

    @server.tool
    async def ask(ctx: Context) -> str:
        await ctx.list_roots(timeout=0.05)
        return "unreachable"

    async def never(params: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(30)
        return {}

    async with connect(
        server, capabilities={"roots": {}}, handlers={"roots/list": never}
    ) as client:
        result = await asyncio.wait_for(client.call_tool("ask"), 5)
    assert result["isError"] is True and "roots/list" in text_of(result)


async def test_a_client_error_answer_becomes_remote_error() -> None:
    server = MCPServer(name="t", version="1")
    caught: list[RemoteError] = []

    @server.tool
    async def ask(ctx: Context) -> str:
        try:
            await ctx.sample("x")
        except RemoteError as exc:
            caught.append(exc)
        return "ok"

    def refuse(params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("user rejected sampling")

    async with connect(
        server, capabilities={"sampling": {}}, handlers={"sampling/createMessage": refuse}
    ) as client:
        await client.call_tool("ask")
    assert caught[0].code == -32603 and "user rejected" in caught[0].message


# -- identity and extra ------------------------------------------------------------------------------


async def test_request_and_session_identity_and_extra() -> None:
    server = MCPServer(name="x", version="1")
    seen: dict[str, Any] = {}

    @server.tool
    async def inspect_ctx(ctx: Context) -> str:
        seen["request_id"] = ctx.request_id
        seen["session_id"] = ctx.session_id
        seen["client_info"] = ctx.client_info
        seen["meta"] = ctx.meta
        extra = ctx.extra
        seen["extra"] = (
            extra.auth_info,
            extra.session_id,
            extra.request_id,
            extra.signal.cancelled,
        )
        await extra.send_notification(
            "notifications/message", {"level": "info", "data": "via extra"}
        )
        seen["roots"] = await extra.send_request("roots/list", None)
        return "ok"

    async with connect(
        server, capabilities={"roots": {}}, handlers={"roots/list": lambda p: {"roots": []}}
    ) as client:
        client.session.session_id = "sess-1"
        result = await client.request(
            "tools/call", {"name": "inspect_ctx", "_meta": {"progressToken": "t", "trace": "abc"}}
        )
        (request_id,) = [m["id"] for m in client.sent if m.get("method") == "tools/call"]
    assert text_of(result) == "ok"
    assert seen["request_id"] == request_id
    assert seen["session_id"] == "sess-1"
    assert seen["client_info"] == {"name": "mcpkit-test-client", "version": "0.0.0"}
    assert seen["meta"] == {"progressToken": "t", "trace": "abc"}
    assert seen["extra"] == (None, "sess-1", request_id, False)
    assert seen["roots"] == {"roots": []}
    assert any(n["params"].get("data") == "via extra" for n in client.notifications)


async def test_auth_info_from_the_transport_reaches_the_tool() -> None:
    server = MCPServer(name="x", version="1")
    seen: list[Any] = []

    @server.tool
    async def whoami(ctx: Context) -> str:
        seen.append((ctx.auth_info, ctx.extra.auth_info))
        return "ok"

    session = server.create_session(session_id="s")
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    }
    await session.handle(init, send)
    token = {"token": "abc", "scopes": ["read"]}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}}
    response = await session.handle(call, send, auth_info=token)
    assert response is not None
    validate_message(response, "2025-11-25", request_method="tools/call")
    assert seen == [(token, token)]


# -- current_context ---------------------------------------------------------------------------------


def helper_reporting_request_id() -> Any:
    ctx = current_context()
    return None if ctx is None else ctx.request_id


async def test_current_context_from_code_called_by_an_async_tool() -> None:
    server = MCPServer(name="x", version="1")

    @server.tool
    async def deep() -> str:
        return str(helper_reporting_request_id())

    async with connect(server) as client:
        result = await client.call_tool("deep")
        assert text_of(result) == str(client.sent[-1]["id"])
    assert current_context() is None


async def test_current_context_from_a_sync_tool_in_a_thread() -> None:
    server = MCPServer(name="x", version="1")
    threads: list[int] = []

    @server.tool
    def deep_sync() -> str:
        threads.append(threading.get_ident())
        ctx = current_context()
        assert ctx is not None
        ctx.info("from the thread")
        return str(helper_reporting_request_id())

    async with connect(server) as client:
        result = await client.call_tool("deep_sync")
        assert text_of(result) == str(client.sent[-1]["id"])
        assert any(n["params"].get("data") == "from the thread" for n in client.notifications)
    assert threads[0] != threading.get_ident()


async def test_current_context_in_resources_and_prompts() -> None:
    server = MCPServer(name="x", version="1")

    @server.resource("test://ctx")
    def res() -> str:
        return str(helper_reporting_request_id())

    @server.prompt
    def prompt() -> str:
        return str(helper_reporting_request_id())

    async with connect(server) as client:
        read = await client.read_resource("test://ctx")
        assert read["contents"][0]["text"] == str(client.sent[-1]["id"])
        got = await client.get_prompt("prompt")
        assert got["messages"][0]["content"]["text"] == str(client.sent[-1]["id"])


async def test_concurrent_tools_see_their_own_context() -> None:
    server = MCPServer(name="x", version="1")
    barrier = asyncio.Barrier(3)

    @server.tool
    async def mine() -> str:
        await asyncio.wait_for(barrier.wait(), 5)
        return str(helper_reporting_request_id())

    async with connect(server) as client:
        results = await asyncio.gather(*(client.call_tool("mine") for _ in range(3)))
    assert sorted(int(text_of(r)) for r in results) == [2, 3, 4]


async def test_mark_cancelled_sets_the_signal_a_handler_reads_and_awaits() -> None:
    signal = CancelSignal()
    assert not signal.cancelled
    waiter = asyncio.ensure_future(signal.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    signal.mark_cancelled()
    await asyncio.wait_for(waiter, 5)
    assert signal.cancelled and signal.aborted


async def test_progress_reported_to_a_sink_never_reaches_the_wire() -> None:
    # What a task of the tasks extension needs: progress of work whose request is answered.
    seen: list[tuple[float, float | None, str | None]] = []

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def to_sink(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        with progress_reported_to(sink):
            return await call_next(ctx)

    server = progress_server()
    server.add_middleware(to_sink)
    async with connect(server) as client:
        await client.call_tool("work", progress_token="t")
        await client.call_tool("work_sync", progress_token="t")
        assert not [n for n in client.notifications if n["method"] == "notifications/progress"]
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3"), (0.5, None, None)]


async def test_requests_answered_by_an_asker_never_reach_the_client() -> None:
    asked: list[tuple[str, str | None]] = []

    async def ask(
        method: str, params: dict[str, Any] | None, key: str | None, timeout: float | None
    ) -> dict[str, Any]:
        asked.append((method, (params or {}).get("message")))
        return {"action": "accept", "content": {"name": "Ada"}}

    async def answer_here(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        with requests_answered_by(ask):
            return await call_next(ctx)

    server = MCPServer(name="ask", version="1")

    @server.tool
    async def hello(ctx: Context) -> str:
        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        answer = await ctx.elicit("Name?", schema)
        return f"hello {(answer.content or {}).get('name')}"

    server.add_middleware(answer_here)
    async with connect(server, capabilities=ELICIT) as client:
        assert text_of(await client.call_tool("hello")) == "hello Ada"
        assert not requests_of(client, "elicitation/create")
    # The client's capabilities are still checked first.
    async with connect(server) as client:
        assert "elicitation" in text_of(await client.call_tool("hello"))
    assert asked == [("elicitation/create", "Name?")]
