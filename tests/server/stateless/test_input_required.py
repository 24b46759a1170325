"""Input-required results (MRTR) on the stateless era: exactly once, and a state that cannot lie."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import Context, InputRoundOptions, MCPServer
from mcpkit.errors import ConfigurationError
from mcpkit.server.stateless.input_required import RequestStateCodec
from mcpkit.testing import connect
from tests import schema

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ALL_CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}


def make_server(**options: Any) -> tuple[MCPServer, list[str]]:
    server = MCPServer(name="mrtr", version="1", **options)
    effects: list[str] = []

    @server.tool
    async def two_rounds(label: str, ctx: Context) -> str:
        """Record a side effect, ask twice, record another."""
        effects.append(f"start {label}")
        first = await ctx.elicit("First?", NAME, key="q1")
        second = await ctx.elicit("Second?", NAME, key="q2")
        effects.append(f"end {label}")
        return f"{(first.content or {})['name']} then {(second.content or {})['name']}"

    @server.tool
    async def all_at_once(ctx: Context) -> str:
        """Ask three questions in one round."""
        answer, sampled, roots = await asyncio.gather(
            ctx.elicit("Name?", NAME),
            ctx.sample("Hi?", max_tokens=5),
            ctx.list_roots(),
        )
        return f"{(answer.content or {})['name']} {sampled['content']['text']} {len(roots)}"

    return server, effects


def call(
    name: str,
    arguments: dict[str, Any],
    rid: int,
    *,
    state: str | None = None,
    responses: Any = None,
    caps: dict[str, Any] | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": name,
        "arguments": arguments,
        "_meta": {PV: V, CAPS: ALL_CAPS if caps is None else caps},
    }
    if state is not None:
        params["requestState"] = state
    if responses is not None:
        params["inputResponses"] = responses
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def _nothing(message: dict[str, Any]) -> None:
    raise AssertionError(f"nothing may be sent on the stateless era: {message}")


async def send(server: MCPServer, msg: dict[str, Any]) -> dict[str, Any]:
    """One request on a fresh connection, as a stateless client sends each one."""
    resp = await asyncio.wait_for(server.create_session().handle(msg, _nothing), 5)
    assert resp is not None
    schema.validate_message(resp, V, request_method=msg["method"])
    return resp


def accept(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


async def test_side_effects_run_once_across_rounds() -> None:
    server, effects = make_server()
    r1 = (await send(server, call("two_rounds", {"label": "a"}, 1)))["result"]
    assert r1["resultType"] == "input_required"
    assert list(r1["inputRequests"]) == ["q1"]
    assert r1["inputRequests"]["q1"]["method"] == "elicitation/create"
    assert effects == ["start a"]
    r2 = (
        await send(
            server,
            call(
                "two_rounds",
                {"label": "a"},
                2,
                state=r1["requestState"],
                responses={"q1": accept("Ada")},
            ),
        )
    )["result"]
    assert list(r2["inputRequests"]) == ["q2"] and r2["requestState"] != r1["requestState"]
    assert effects == ["start a"]
    r3 = await send(
        server,
        call(
            "two_rounds",
            {"label": "a"},
            3,
            state=r2["requestState"],
            responses={"q2": accept("Bo")},
        ),
    )
    assert r3["id"] == 3
    assert r3["result"]["resultType"] == "complete"
    assert r3["result"]["content"][0]["text"] == "Ada then Bo"
    assert effects == ["start a", "end a"]
    assert len(server.input_rounds) == 0


async def test_side_effects_run_once_on_the_handshake_era_too() -> None:
    server, effects = make_server()
    names = iter(["Ada", "Bo"])

    async def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        return accept(next(names))

    async with connect(
        server, capabilities={"elicitation": {}}, handlers={"elicitation/create": on_elicit}
    ) as client:
        result = await client.call_tool("two_rounds", {"label": "h"})
    assert result["content"][0]["text"] == "Ada then Bo"
    assert effects == ["start h", "end h"]


async def test_questions_asked_together_share_one_round() -> None:
    server, _ = make_server()
    r1 = (await send(server, call("all_at_once", {}, 1)))["result"]
    assert sorted(r1["inputRequests"]) == ["elicitation", "roots", "sampling"]
    answers = {
        "elicitation": accept("Cy"),
        "sampling": {
            "role": "assistant",
            "content": {"type": "text", "text": "hello"},
            "model": "m",
            "stopReason": "endTurn",
        },
        "roots": {"roots": [{"uri": "file:///r"}]},
        "unknown_extra": {"ignored": True},
    }
    r2 = await send(server, call("all_at_once", {}, 2, state=r1["requestState"], responses=answers))
    assert r2["result"]["content"][0]["text"] == "Cy hello 1"


async def test_a_missing_or_malformed_answer_is_asked_again() -> None:
    server, effects = make_server()
    r1 = (await send(server, call("two_rounds", {"label": "m"}, 1)))["result"]
    for responses in ({"wrong": accept("x")}, {"q1": 12345}, None):
        again = (
            await send(
                server,
                call(
                    "two_rounds", {"label": "m"}, 2, state=r1["requestState"], responses=responses
                ),
            )
        )["result"]
        assert again["resultType"] == "input_required" and list(again["inputRequests"]) == ["q1"]
        r1 = again
    assert effects == ["start m"]


async def test_replayed_tampered_and_rebound_states_are_refused() -> None:
    server, effects = make_server()
    r1 = (await send(server, call("two_rounds", {"label": "t"}, 1)))["result"]
    state = r1["requestState"]
    for bad in (state + "-TAMPERED", state[:-2] + "AA", "garbage", state.replace(".", "")):
        resp = await send(
            server, call("two_rounds", {"label": "t"}, 2, state=bad, responses={"q1": accept("x")})
        )
        assert resp["error"]["code"] == -32602
    other_args = await send(
        server,
        call("two_rounds", {"label": "other"}, 3, state=state, responses={"q1": accept("x")}),
    )
    assert other_args["error"]["code"] == -32602
    ok = await send(
        server, call("two_rounds", {"label": "t"}, 4, state=state, responses={"q1": accept("x")})
    )
    assert ok["result"]["resultType"] == "input_required"
    replay = await send(
        server, call("two_rounds", {"label": "t"}, 5, state=state, responses={"q1": accept("y")})
    )
    assert replay["error"]["code"] == -32602
    assert effects == ["start t"]


async def test_answers_may_come_with_the_first_round() -> None:
    server, effects = make_server()
    resp = await send(
        server,
        call("two_rounds", {"label": "p"}, 1, responses={"q1": accept("A"), "q2": accept("B")}),
    )
    assert resp["result"]["content"][0]["text"] == "A then B"
    assert effects == ["start p", "end p"]


async def test_a_question_the_client_cannot_answer_is_a_tool_error() -> None:
    server, _ = make_server()
    resp = await send(server, call("two_rounds", {"label": "c"}, 1, caps={}))
    assert resp["result"]["isError"] is True
    assert "elicitation" in resp["result"]["content"][0]["text"]


def test_state_keys_rotate_and_expire() -> None:
    old, new = b"o" * 32, b"n" * 32
    token = RequestStateCodec([old], ttl=60).seal({"c": "x"})
    assert RequestStateCodec([new, old], ttl=60).open(token) is not None
    assert RequestStateCodec([new], ttl=60).open(token) is None
    assert RequestStateCodec([new], ttl=-1).open(RequestStateCodec([new], ttl=-1).seal({})) is None
    with pytest.raises(ConfigurationError):
        RequestStateCodec([b"short"], ttl=60)


async def test_a_server_configured_key_signs_the_state() -> None:
    key = b"k" * 32
    server, _ = make_server(input_rounds=InputRoundOptions(request_state_keys=[key]))
    r1 = (await send(server, call("two_rounds", {"label": "k"}, 1)))["result"]
    assert RequestStateCodec([key], ttl=60).open(r1["requestState"]) is not None


async def test_a_state_over_the_limit_ends_the_call_with_a_clear_error() -> None:
    server = MCPServer(
        name="mrtr", version="1", input_rounds=InputRoundOptions(request_state_limit=4096)
    )
    finished: list[str] = []

    @server.tool
    async def big_steps(ctx: Context) -> str:
        blob = await ctx.once("fetch", lambda: "x" * 8000)  # journaled in the state
        await ctx.elicit("Go on?", NAME, key="q1")
        finished.append(blob[:1])
        return "done"

    @server.tool
    async def small_steps(ctx: Context) -> str:
        await ctx.once("fetch", lambda: "x" * 100)
        answer = await ctx.elicit("Go on?", NAME, key="q1")
        return str((answer.content or {})["name"])

    resp = await send(server, call("big_steps", {}, 1))
    assert resp["error"]["code"] == -32603
    message = resp["error"]["message"]
    assert "'big_steps'" in message and "request_state_limit" in message and "4096" in message
    assert finished == [] and len(server.input_rounds) == 0  # the parked call was ended

    # Under the limit, rounds work as before.
    r1 = (await send(server, call("small_steps", {}, 2)))["result"]
    assert r1["resultType"] == "input_required" and len(r1["requestState"]) <= 4096
    r2 = await send(
        server, call("small_steps", {}, 3, state=r1["requestState"], responses={"q1": accept("Al")})
    )
    assert r2["result"]["content"][0]["text"] == "Al"


@pytest.mark.parametrize("limit", [0, 1023, 2.5, "1MB"])
def test_request_state_limit_is_checked(limit: Any) -> None:
    with pytest.raises(ConfigurationError, match="request_state_limit"):
        InputRoundOptions(request_state_limit=limit)


async def test_an_invalid_answer_in_an_input_round_is_the_same_typed_error() -> None:
    from pydantic import BaseModel

    from mcpkit import ElicitationValidationError

    class Person(BaseModel):
        name: str
        age: int

    server = MCPServer(name="mrtr", version="1")

    @server.tool
    async def who(strict: bool, ctx: Context) -> str:
        try:
            answer = await ctx.elicit("Who?", Person, key="q")
        except ElicitationValidationError as exc:
            if strict:
                raise
            return f"bad fields: {[e['loc'] for e in exc.errors]}"
        return str(answer.content)

    bad = {"q": {"action": "accept", "content": {"name": "Ada", "age": "old"}}}
    for strict, expected in (
        (False, "bad fields: [('age',)]"),
        (
            True,
            "the answer to elicitation did not match the requested schema: "
            "field age: Input should be a valid integer, unable to parse string as an integer",
        ),
    ):
        first = await send(server, call("who", {"strict": strict}, 1))
        state = first["result"]["requestState"]
        done = await send(server, call("who", {"strict": strict}, 2, state=state, responses=bad))
        assert done["result"]["content"][0]["text"] == expected
        assert done["result"].get("isError", False) is strict
