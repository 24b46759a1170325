"""Property tests: random message sequences never crash a session, and every answer is well formed.

Each example drives a fresh session through ``ServerSession.handle`` /
``handle_batch`` with a random mix of real requests (with random params),
notifications, responses, garbage and batches. Whatever arrives, the session
must answer a request with exactly one response carrying its id, stay silent
for notifications and responses, answer garbage with -32600, and everything it
writes must validate against the schema of the revision in force.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mcpkit import Context, MCPServer, ServerLimits, ToolError
from mcpkit.protocol.jsonrpc import Kind, classify, dumps
from mcpkit.protocol.lifecycle import State
from tests.schema import validate_message


def build_server() -> MCPServer:
    server = MCPServer(name="prop", version="1", limits=ServerLimits(page_size=2))

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    async def echo(text: str, ctx: Context) -> dict[str, str]:
        await ctx.info(text)
        await ctx.progress(1, total=1)
        return {"text": text}

    @server.tool
    def fail(kind: str = "tool") -> str:
        if kind == "tool":
            raise ToolError("failed on purpose")
        raise RuntimeError("internal")

    @server.resource("test://static", mime_type="text/plain")
    def static() -> str:
        return "s"

    @server.resource("test://item/{id}")
    def item(id: int) -> dict[str, int]:
        return {"id": id}

    @server.prompt
    def greet(name: str, times: int = 1) -> str:
        return f"hi {name} " * times

    @server.completion(prompt="greet")
    def names(value: str) -> list[str]:
        return [n for n in ("ann", "bob") if n.startswith(value)]

    return server


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.text(max_size=6)
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=10,
)
ids = st.integers(0, 6) | st.sampled_from(["a", "b", "mcpkit-1"])
versions = st.sampled_from(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "1999-01-01"])

PARAMS: dict[str, Any] = {
    "initialize": st.fixed_dictionaries(
        {
            "protocolVersion": versions,
            "capabilities": st.just({}) | st.just({"elicitation": {}, "sampling": {}}),
            "clientInfo": st.just({"name": "h", "version": "1"}),
        }
    ),
    "ping": st.just({}),
    "tools/list": st.just({}) | st.fixed_dictionaries({"cursor": json_scalars}),
    "tools/call": st.one_of(
        st.builds(
            lambda a, b: {"name": "add", "arguments": {"a": a, "b": b}},
            st.integers(),
            st.integers(),
        ),
        st.builds(
            lambda t, tok: {
                "name": "echo",
                "arguments": {"text": t},
                "_meta": {"progressToken": tok},
            },
            st.text(max_size=10),
            st.integers(0, 3) | st.text(max_size=3),
        ),
        st.builds(
            lambda k: {"name": "fail", "arguments": {"kind": k}}, st.sampled_from(["tool", "crash"])
        ),
        st.fixed_dictionaries(
            {"name": st.sampled_from(["add", "echo", "fail", "nope"]) | json_scalars},
            optional={
                "arguments": st.fixed_dictionaries(
                    {},
                    optional={
                        "a": json_scalars,
                        "b": json_scalars,
                        "text": json_scalars,
                        "kind": json_scalars,
                    },
                )
                | json_values,
                "_meta": st.fixed_dictionaries({"progressToken": json_scalars}),
            },
        ),
    ),
    "resources/list": st.just({}),
    "resources/templates/list": st.just({}),
    "resources/read": st.fixed_dictionaries(
        {
            "uri": st.sampled_from(
                ["test://static", "test://item/3", "test://item/x", "test://none"]
            )
            | json_scalars
        }
    ),
    "resources/subscribe": st.fixed_dictionaries({"uri": st.just("test://static") | json_scalars}),
    "resources/unsubscribe": st.fixed_dictionaries(
        {"uri": st.just("test://static") | json_scalars}
    ),
    "prompts/list": st.just({}),
    "prompts/get": st.builds(
        lambda n, t: {"name": "greet", "arguments": {"name": n, "times": t}},
        st.text(max_size=5),
        st.sampled_from(["1", "2", "x"]),
    )
    | st.fixed_dictionaries(
        {"name": st.sampled_from(["greet", "nope"]) | json_scalars},
        optional={
            "arguments": st.dictionaries(st.sampled_from(["name", "times"]), json_scalars)
            | json_values
        },
    ),
    "completion/complete": st.fixed_dictionaries(
        {
            "ref": st.just({"type": "ref/prompt", "name": "greet"}) | json_values,
            "argument": st.fixed_dictionaries(
                {"name": st.just("name"), "value": st.text(max_size=3)}
            )
            | json_values,
        }
    ),
    "logging/setLevel": st.fixed_dictionaries(
        {"level": st.sampled_from(["debug", "info", "error", "loud"]) | json_scalars}
    ),
    "x/unknown": st.just({}) | st.dictionaries(st.text(max_size=4), json_scalars, max_size=2),
}


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    method = draw(st.sampled_from(sorted(PARAMS)))
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(ids), "method": method}
    params = draw(PARAMS[method])
    if params is not None:
        msg["params"] = params
    return msg


notifications = st.builds(
    lambda method, params: {"jsonrpc": "2.0", "method": method, "params": params},
    st.sampled_from(
        [
            "notifications/initialized",
            "notifications/cancelled",
            "notifications/roots/list_changed",
            "notifications/x",
        ]
    ),
    st.fixed_dictionaries({}, optional={"requestId": ids | json_values, "reason": json_scalars}),
)
responses = st.builds(
    lambda i, r: {"jsonrpc": "2.0", "id": i, "result": r}, ids | json_values, json_values
) | st.builds(
    lambda i, c: {"jsonrpc": "2.0", "id": i, "error": {"code": c, "message": "x"}},
    ids | st.none(),
    st.integers(-32800, 0),
)
singles = requests() | requests() | notifications | responses | json_values
messages = singles | st.lists(singles, max_size=4)


def check_answer(msg: Any, out: Any, revision: str) -> None:
    dumps(out)  # always serialisable (integers beyond 64 bits as exact digits)
    kind = classify(msg)
    if kind is Kind.REQUEST:
        assert isinstance(out, dict), (msg, out)
        assert out["id"] == msg["id"]
        assert ("result" in out) != ("error" in out)
        method = msg["method"]
        event(f"{method}: {'result' if 'result' in out else out['error']['code']}")
        validate_message(out, revision, request_method=method if method != "x/unknown" else None)
    elif kind is Kind.INVALID:
        assert out["error"]["code"] == -32600, (msg, out)
        validate_message(out, revision)
    else:
        assert out is None, (msg, out)


async def drive(sequence: list[Any]) -> None:
    server = build_server()
    session = server.create_session()
    emitted: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        emitted.append(orjson.loads(orjson.dumps(message)))

    session.standalone = send
    for msg in sequence:
        if isinstance(msg, list):
            out = await asyncio.wait_for(session.handle_batch(msg, send), 5)
            orjson.dumps(out)
            revision = session.revision.name
            if isinstance(out, dict):
                assert out["error"]["code"] == -32600
                validate_message(out, revision)
                continue
            assert session.revision.batching and msg
            answered = [m for m in msg if classify(m) in (Kind.REQUEST, Kind.INVALID)]
            assert len(out) == len(answered)
            for member, answer in zip(answered, out, strict=True):
                check_answer(member, answer, revision)
        else:
            out = await asyncio.wait_for(session.handle(msg, send), 5)
            check_answer(msg, out, session.revision.name)
        for note in emitted:
            validate_message(note, session.revision.name)
        emitted.clear()
    # Still alive: a ping is answered in every state but CLOSED.
    pong = await session.handle({"jsonrpc": "2.0", "id": "final", "method": "ping"}, send)
    assert pong is not None and pong.get("result") == {}
    session.close()
    assert session.state is State.CLOSED


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(messages, max_size=12), st.none() | versions)
def test_random_sequences_never_crash_the_session(
    sequence: list[Any], handshake: str | None
) -> None:
    if handshake is not None:  # most sequences start like a real client, some do not
        sequence = [initialize(handshake), *sequence]
    asyncio.run(drive(sequence))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(versions, st.lists(requests(), max_size=10))
def test_random_requests_after_a_handshake(version: str, sequence: list[Any]) -> None:
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    asyncio.run(drive([initialize(version), initialized, *sequence]))


def initialize(version: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "h", "version": "1"},
        },
    }
