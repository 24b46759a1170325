"""Input-required rounds served by several workers: replay from the journal, single use.

Two (or three) ``MCPServer`` instances built from the same code stand in for
the workers of one deployment: they share ``request_state_keys`` and one
input-round ``store`` object, as real workers share keys and a Redis. The shared
``effects`` dict stands in for the outside world (a database) that side
effects change.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from mcpkit import Context, InputRoundOptions, InputRoundStore, MCPServer
from mcpkit.client import Client
from mcpkit.server.stateless.input_required import RequestStateCodec
from mcpkit.stores import MemoryInputRoundStore
from mcpkit.testing import connect
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests import schema
from tests.client.http_servers import serve

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ALL_CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}
KEYS = [b"w" * 32]
TIMEOUT = 10.0


class World:
    """What the tools change outside the server, shared by every worker."""

    def __init__(self) -> None:
        self.counter = 0
        self.plain = 0
        self.starts: list[str] = []  # which worker started (or replayed) a handler

    def increment(self) -> int:
        self.counter += 1
        return self.counter


def worker(
    label: str,
    world: World,
    *,
    request_state_keys: list[bytes] = KEYS,
    store: InputRoundStore | None = None,
    **options: Any,
) -> MCPServer:
    """One worker: the same tools on every one, ``label`` only says where a handler ran."""
    rounds = InputRoundOptions(request_state_keys=request_state_keys, store=store)
    server = MCPServer(name="workers", version="1", input_rounds=rounds, **options)

    @server.tool
    async def counted(ctx: Context) -> str:
        """Increment, ask twice in two rounds, increment again: the issue's exactly-once tool."""
        world.starts.append(label)
        before = await ctx.once("before", world.increment)
        first = await ctx.elicit("First?", NAME, key="q1")
        second = await ctx.elicit("Second?", NAME, key="q2")
        after = await ctx.once("after", world.increment)
        names = f"{(first.content or {})['name']}+{(second.content or {})['name']}"
        return f"{names} {before}->{after} on {label}"

    @server.tool
    async def plain(ctx: Context) -> str:
        """Side effects outside ctx.once: exactly once only while the rounds stay on one worker."""
        world.plain += 1
        first = await ctx.elicit("First?", NAME, key="q1")
        second = await ctx.elicit("Second?", NAME, key="q2")
        world.plain += 1
        return f"{(first.content or {})['name']}+{(second.content or {})['name']}"

    @server.tool
    async def together(ctx: Context) -> str:
        """Three questions in one round, then one more."""
        order = await ctx.once("order", lambda: {"id": world.increment(), "items": (1, 2)})
        answer, sampled, roots = await asyncio.gather(
            ctx.elicit("Name?", NAME), ctx.sample("Hi?", max_tokens=5), ctx.list_roots()
        )
        confirm = await ctx.elicit(f"Confirm order {order['id']}?", NAME, key="confirm")
        name = (answer.content or {})["name"]
        text = sampled["content"]["text"]
        return f"{name} {text} {len(roots)} {order} {confirm.action}"

    @server.tool
    async def local_question(ctx: Context) -> str:
        """Asks something that depends on the worker: cannot be replayed elsewhere."""
        await ctx.elicit(f"Asked on {label}?", NAME, key="q1")
        await ctx.elicit("Then?", NAME, key="q2")
        return "done"

    @server.tool
    async def local_key(ctx: Context) -> str:
        """Names its question after the worker."""
        await ctx.elicit("First?", NAME, key="q1")
        await ctx.elicit("Second?", NAME, key=f"on_{label}")
        return "done"

    @server.tool
    async def bad_step(ctx: Context) -> str:
        await ctx.once("make_set", lambda: {1, 2})
        return "unreachable"

    @server.tool
    def sync_tool(ctx: Context) -> str:
        """A sync tool (runs in a thread) with a sync step."""
        world.starts.append(label)
        number = ctx.once("number", world.increment)
        answer = ctx.elicit("Name?", NAME, key="q1")
        return f"{(answer.content or {})['name']} {number}"

    @server.prompt
    async def greeting(ctx: Context) -> str:
        """A prompt that asks first."""
        stamp = await ctx.once("stamp", world.increment)
        answer = await ctx.elicit("Whom?", NAME, key="who")
        return f"Greet {(answer.content or {})['name']} (#{stamp})"

    return server


def workers(count: int = 2, **options: Any) -> tuple[list[MCPServer], World]:
    world = World()
    store = MemoryInputRoundStore()
    return [worker(f"w{i}", world, store=store, **options) for i in range(count)], world


def call(
    name: str,
    rid: int,
    *,
    arguments: dict[str, Any] | None = None,
    state: str | None = None,
    responses: Any = None,
    method: str = "tools/call",
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "_meta": {PV: V, CAPS: ALL_CAPS}}
    if arguments is not None:
        params["arguments"] = arguments
    if state is not None:
        params["requestState"] = state
    if responses is not None:
        params["inputResponses"] = responses
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


async def _nothing(message: dict[str, Any]) -> None:
    raise AssertionError(f"nothing may be sent on the stateless era: {message}")


async def send(server: MCPServer, msg: dict[str, Any]) -> dict[str, Any]:
    """One request on a fresh connection, as a stateless client sends each one."""
    resp = await asyncio.wait_for(server.create_session().handle(msg, _nothing), TIMEOUT)
    assert resp is not None
    schema.validate_message(resp, V, request_method=msg["method"])
    return resp


def accept(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


SAMPLED = {
    "role": "assistant",
    "content": {"type": "text", "text": "hello"},
    "model": "m",
    "stopReason": "endTurn",
}


async def rounds(
    route: list[MCPServer], name: str, answers: list[dict[str, Any]], **extra: Any
) -> list[dict[str, Any]]:
    """Round i goes to ``route[i]``; answers[i] answers the questions of round i."""
    out: list[dict[str, Any]] = []
    state: str | None = None
    responses: dict[str, Any] | None = None
    for i, target in enumerate(route):
        resp = await send(target, call(name, i + 1, state=state, responses=responses, **extra))
        out.append(resp)
        result = resp.get("result", {})
        if result.get("resultType") != "input_required":
            break
        state, responses = result["requestState"], answers[i]
    return out


# -- exactly once ---------------------------------------------------------------------------------


async def test_counter_is_two_when_every_round_lands_on_another_worker() -> None:
    (a, b), world = workers()
    answers = [{"q1": accept("Ada")}, {"q2": accept("Bo")}]
    r1, r2, r3 = await rounds([a, b, a], "counted", answers)
    assert r1["result"]["inputRequests"].keys() == {"q1"}
    assert r2["result"]["inputRequests"].keys() == {"q2"}
    assert r3["id"] == 3 and r3["result"]["resultType"] == "complete"
    assert r3["result"]["content"][0]["text"] == "Ada+Bo 1->2 on w0"
    assert world.counter == 2
    assert world.starts == ["w0", "w1", "w0"]  # started, replayed on B, replayed on A
    # The call A parked in round 1 was replaced by B's replay; B's parked call by A's.
    assert len(b.input_rounds) == 1 and len(a.input_rounds) == 1


async def test_three_workers_one_round_each() -> None:
    (a, b, c), world = workers(3)
    answers = [{"q1": accept("Ada")}, {"q2": accept("Bo")}]
    *_, done = await rounds([a, b, c], "counted", answers)
    assert done["result"]["content"][0]["text"] == "Ada+Bo 1->2 on w2"
    assert world.counter == 2 and world.starts == ["w0", "w1", "w2"]


async def test_plain_code_runs_once_when_every_round_reaches_one_worker() -> None:
    (a, _), world = workers()
    answers = [{"q1": accept("Ada")}, {"q2": accept("Bo")}]
    *_, done = await rounds([a, a, a], "plain", answers)
    assert done["result"]["content"][0]["text"] == "Ada+Bo"
    assert world.plain == 2
    assert len(a.input_rounds) == 0


async def test_plain_code_outside_once_runs_again_on_a_replay() -> None:
    """The documented limit: code outside ctx.once before the last answer re-runs elsewhere."""
    (a, b), world = workers()
    answers = [{"q1": accept("Ada")}, {"q2": accept("Bo")}]
    *_, done = await rounds([a, b, b], "plain", answers)
    assert done["result"]["content"][0]["text"] == "Ada+Bo"
    assert world.plain == 3  # the first increment ran on A and again in B's replay


async def test_ctx_once_runs_once_on_the_handshake_era() -> None:
    (a, _), world = workers()
    names = iter(["Ada", "Bo"])

    async def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
        return accept(next(names))

    async with connect(
        a, capabilities={"elicitation": {}}, handlers={"elicitation/create": on_elicit}
    ) as client:
        result = await client.call_tool("counted", {})
    assert result["content"][0]["text"] == "Ada+Bo 1->2 on w0"
    assert world.counter == 2


async def test_questions_asked_together_replay_in_order_and_steps_keep_their_value() -> None:
    (a, b), world = workers()
    r1 = await send(a, call("together", 1))
    asked = r1["result"]["inputRequests"]
    assert sorted(asked) == ["elicitation", "roots", "sampling"]
    answers = {"elicitation": accept("Cy"), "sampling": SAMPLED, "roots": {"roots": []}}
    r2 = await send(b, call("together", 2, state=r1["result"]["requestState"], responses=answers))
    confirm = r2["result"]["inputRequests"]["confirm"]
    # The step ran on A; B's replay got its journaled value (a tuple comes back as a list).
    assert confirm["params"]["message"] == "Confirm order 1?"
    r3 = await send(
        a,
        call("together", 3, state=r2["result"]["requestState"], responses={"confirm": accept("y")}),
    )
    assert r3["result"]["content"][0]["text"] == "Cy hello 0 {'id': 1, 'items': [1, 2]} accept"
    assert world.counter == 1


async def test_a_missing_answer_is_asked_again_by_the_replaying_worker() -> None:
    (a, b), world = workers()
    r1 = await send(a, call("counted", 1))
    state = r1["result"]["requestState"]
    again = await send(b, call("counted", 2, state=state, responses={"other": accept("x")}))
    assert list(again["result"]["inputRequests"]) == ["q1"]
    r3 = await send(
        a, call("counted", 3, state=again["result"]["requestState"], responses={"q1": accept("A")})
    )
    assert list(r3["result"]["inputRequests"]) == ["q2"]
    assert world.counter == 1


async def test_a_sync_tool_with_a_sync_step_replays_on_another_worker() -> None:
    (a, b), world = workers()
    r1 = await send(a, call("sync_tool", 1))
    done = await send(
        b, call("sync_tool", 2, state=r1["result"]["requestState"], responses={"q1": accept("Di")})
    )
    assert done["result"]["content"][0]["text"] == "Di 1"
    assert world.counter == 1 and world.starts == ["w0", "w1"]


async def test_a_prompt_replays_on_another_worker() -> None:
    (a, b), world = workers()
    r1 = await send(a, call("greeting", 1, method="prompts/get"))
    assert list(r1["result"]["inputRequests"]) == ["who"]
    done = await send(
        b,
        call(
            "greeting",
            2,
            method="prompts/get",
            state=r1["result"]["requestState"],
            responses={"who": accept("Ed")},
        ),
    )
    assert done["result"]["messages"][0]["content"]["text"] == "Greet Ed (#1)"
    assert world.counter == 1


# -- what a replay refuses ------------------------------------------------------------------------


async def test_a_handler_asking_another_question_on_replay_gets_a_clear_error() -> None:
    (a, b), _ = workers()
    for tool, expected in (("local_question", "other params"), ("local_key", "'on_w1'")):
        r1 = await send(a, call(tool, 1))
        state = r1["result"]["requestState"]
        if tool == "local_key":  # the differing question is the second one
            r2 = await send(a, call(tool, 2, state=state, responses={"q1": accept("x")}))
            state = r2["result"]["requestState"]
            resp = await send(b, call(tool, 3, state=state, responses={"on_w0": accept("y")}))
        else:
            resp = await send(b, call(tool, 2, state=state, responses={"q1": accept("x")}))
        error = resp["error"]
        assert error["code"] == -32603
        assert "replaying" in error["message"] and expected in error["message"]


async def test_a_step_result_that_is_not_json_names_the_step() -> None:
    (a, _), _ = workers(debug=True)
    resp = await send(a, call("bad_step", 1))
    assert resp["result"]["isError"] is True
    text = resp["result"]["content"][0]["text"]
    assert "ctx.once step 'make_set'" in text and "JSON" in text


async def test_a_used_state_is_refused_on_every_worker() -> None:
    (a, b), world = workers()
    r1 = await send(a, call("counted", 1))
    state = r1["result"]["requestState"]
    ok = await send(b, call("counted", 2, state=state, responses={"q1": accept("x")}))
    assert ok["result"]["resultType"] == "input_required"
    # A still holds the call it parked, but the state was used on B.
    for target in (a, b):
        replay = await send(target, call("counted", 3, state=state, responses={"q1": accept("y")}))
        assert replay["error"]["code"] == -32602
    # And the other way round: used where it was parked, refused on the other worker.
    r1 = await send(a, call("counted", 4))
    state = r1["result"]["requestState"]
    ok = await send(a, call("counted", 5, state=state, responses={"q1": accept("x")}))
    assert ok["result"]["resultType"] == "input_required"
    replay = await send(b, call("counted", 6, state=state, responses={"q1": accept("y")}))
    assert replay["error"]["code"] == -32602
    assert world.counter == 2  # one "before" step per call, none from the refused replays


def _reseal(state: str, key: bytes, *, ttl: float, **changes: Any) -> str:
    """``state``'s payload, changed, signed again with ``key`` (what only a key holder can do)."""
    body = state.split(".")[0]
    payload = orjson.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload.pop("exp")
    payload.update(changes)
    return RequestStateCodec([key], ttl=ttl).seal(payload)


async def test_tampered_expired_rebound_and_foreign_states_are_refused_on_another_worker() -> None:
    (a, b), world = workers()
    r1 = await send(a, call("counted", 1))
    state = r1["result"]["requestState"]
    body, mac = state.split(".")
    forged_answers = _reseal(state, b"x" * 32, ttl=60, q=[["q1", "elicitation/create", "0", None]])
    bad_states = [
        f"{body}A.{mac}",  # a changed payload
        f"{body}.{mac[:-2]}AA",  # a changed signature
        forged_answers,  # signed with a key the workers do not have
        _reseal(state, KEYS[0], ttl=-1),  # genuine but expired
        _reseal(state, KEYS[0], ttl=60, q="not a journal"),  # genuine key, not our format
        "garbage",
        12345,
    ]
    for i, bad in enumerate(bad_states):
        resp = await send(b, call("counted", 10 + i, state=bad, responses={"q1": accept("x")}))
        assert resp["error"]["code"] == -32602, bad
    rebound = await send(
        b, call("counted", 20, arguments={"extra": 1}, state=state, responses={"q1": accept("x")})
    )
    assert rebound["error"]["code"] == -32602
    other_tool = await send(b, call("plain", 21, state=state, responses={"q1": accept("x")}))
    assert other_tool["error"]["code"] == -32602
    assert world.starts == ["w0"]  # no refused state reached a handler
    # A worker with other keys (a misconfigured deployment) refuses the state as well.
    (stranger,), _ = workers(1, request_state_keys=[b"s" * 32])
    foreign = await send(stranger, call("counted", 30, state=state, responses={"q1": accept("x")}))
    assert foreign["error"]["code"] == -32602
    # None of the refusals used the state up.
    ok = await send(b, call("counted", 31, state=state, responses={"q1": accept("x")}))
    assert ok["result"]["resultType"] == "input_required"


async def test_rotated_keys_let_a_new_worker_replay_an_old_state() -> None:
    world = World()
    store = MemoryInputRoundStore()
    old = worker("old", world, store=store, request_state_keys=[b"o" * 32])
    new = worker("new", world, store=store, request_state_keys=[b"n" * 32, b"o" * 32])
    answers = [{"q1": accept("Ada")}, {"q2": accept("Bo")}]
    *_, done = await rounds([old, new, new], "counted", answers)
    assert done["result"]["content"][0]["text"] == "Ada+Bo 1->2 on new"


# -- the store --------------------------------------------------------------------------------------


async def test_a_custom_store_is_consulted_for_every_retry() -> None:
    claims: list[str] = []

    class Recording:
        async def claim(self, token_id: str, expires_at: float) -> bool:
            claims.append(token_id)
            return claims.count(token_id) == 1

    world = World()
    a = worker("a", world, store=Recording())
    answers = [{"q1": accept("Ada")}, {"q2": accept("Bo")}]
    *_, done = await rounds([a, a, a], "counted", answers)
    assert done["result"]["resultType"] == "complete"
    assert len(claims) == 2 and len(set(claims)) == 2


# -- over HTTP: two workers on two ports -------------------------------------------------------------


@pytest.fixture
async def two_urls() -> AsyncIterator[tuple[list[str], World]]:
    (a, b), world = workers()
    async with (
        serve(StreamableHTTPApp(a, path="/mcp")) as url_a,
        serve(StreamableHTTPApp(b, path="/mcp")) as url_b,
    ):
        yield [url_a, url_b], world


async def _post(http: httpx.AsyncClient, url: str, msg: dict[str, Any]) -> dict[str, Any]:
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": V,
        "mcp-method": msg["method"],
        "mcp-name": msg["params"]["name"],
    }
    resp = await http.post(url, content=orjson.dumps(msg), headers=headers)
    messages: list[Any] = []
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        for line in resp.text.splitlines():
            if line.startswith("data: "):
                messages.append(orjson.loads(line[6:]))
    else:
        messages.append(resp.json())
    for m in messages:
        schema.validate_message(m, V, request_method=None if "method" in m else msg["method"])
    answers = [m for m in messages if "method" not in m]
    assert len(answers) == 1, messages
    out: dict[str, Any] = answers[0]
    return out


async def test_raw_http_rounds_alternate_between_two_workers(
    two_urls: tuple[list[str], World],
) -> None:
    (url_a, url_b), world = two_urls
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        r1 = await _post(http, url_a, call("counted", 1))
        r2 = await _post(
            http,
            url_b,
            call("counted", 2, state=r1["result"]["requestState"], responses={"q1": accept("A")}),
        )
        msg = call("counted", 3, state=r2["result"]["requestState"], responses={"q2": accept("B")})
        done = await _post(http, url_a, msg)
        assert done["result"]["content"][0]["text"] == "A+B 1->2 on w0"
        replay = await _post(http, url_b, {**msg, "id": 4})
        assert replay["error"]["code"] == -32602
    assert world.counter == 2 and world.starts == ["w0", "w1", "w0"]


class RoundRobin(httpx.AsyncBaseTransport):
    """A load balancer in the client: each tools/call goes to the next worker's port
    (other requests, which the client may interleave, go to the first)."""

    def __init__(self, urls: list[str]) -> None:
        self.ports = [httpx.URL(u).port for u in urls]
        self.inner = httpx.AsyncHTTPTransport()
        self.sent = 0
        self.routes: list[tuple[str | None, int | None]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        method = request.headers.get("mcp-method")
        port = self.ports[self.sent % len(self.ports) if method == "tools/call" else 0]
        if method == "tools/call":
            self.sent += 1
        request.url = request.url.copy_with(port=port)
        request.headers["host"] = f"127.0.0.1:{port}"
        self.routes.append((method, port))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_the_mcpkit_client_completes_a_call_whose_rounds_hit_alternate_workers(
    two_urls: tuple[list[str], World],
) -> None:
    urls, world = two_urls
    names = iter(["Ada", "Bo"])
    traffic: list[tuple[str, Any, bool]] = []
    balancer = RoundRobin(urls)
    async with (
        httpx.AsyncClient(transport=balancer, timeout=TIMEOUT) as http,
        Client(
            url=urls[0],
            http_client=http,
            protocol_version=V,
            elicitation_handler=lambda params: accept(next(names)),
            trace=lambda direction, msg: traffic.append((direction, msg, True)),
            timeout=TIMEOUT,
        ) as client,
    ):
        assert client.protocol_version == V
        result = await client.call_tool("counted", {})
    assert result["content"][0]["text"].startswith("Ada+Bo 1->2 on w")
    assert world.counter == 2
    calls = [port for method, port in balancer.routes if method == "tools/call"]
    assert len(calls) == 3 and calls[0] != calls[1] and calls[1] != calls[2]
    assert len(set(world.starts)) == 2  # both workers ran (or replayed) the handler
    assert schema.assert_valid_conversation(traffic, V) >= 6
