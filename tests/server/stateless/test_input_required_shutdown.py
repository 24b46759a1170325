"""A server stopping with 2026-07-28 input rounds open: the stopped round's state stays
usable elsewhere, and the calls parked for input are dropped before the lifespan ends.

Two ``MCPServer`` workers share keys and one input-round store, as real workers share
keys and a Redis; the request is stopped the way ``serve()`` stops one at the end of the
graceful period (``stop_for_shutdown``). The real-socket test (uvicorn in a subprocess,
SIGTERM) is tests/cli/test_run_shutdown.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcpkit import Context, InputRoundOptions, MCPServer
from mcpkit.protocol.error_answers import shutting_down_error
from mcpkit.server.request import stop_for_shutdown
from mcpkit.stores import MemoryInputRoundStore
from tests.server.stateless.test_input_required_workers import (
    KEYS,
    NAME,
    TIMEOUT,
    _nothing,
    accept,
    call,
    send,
)


def _worker(label: str, store: MemoryInputRoundStore, log: list[str]) -> MCPServer:
    server = MCPServer(
        name="stopping",
        version="1",
        input_rounds=InputRoundOptions(request_state_keys=KEYS, store=store),
    )

    @server.tool
    async def ask_then_wait(ctx: Context) -> str:
        log.append(f"start {label}")
        try:
            answer = await ctx.elicit("Name?", NAME, key="q1")
            log.append(f"answered {label}")
            await asyncio.sleep(0 if label == "b" else 30)
        finally:
            log.append(f"unwound {label}")
        return f"{(answer.content or {})['name']} on {label}"

    return server


async def test_a_retry_stopped_by_shutdown_is_answered_and_replays_elsewhere() -> None:
    store = MemoryInputRoundStore()
    log: list[str] = []
    a, b = _worker("a", store, log), _worker("b", store, log)
    first = await send(a, call("ask_then_wait", 1))
    state = first["result"]["requestState"]
    retry = call("ask_then_wait", 2, state=state, responses={"q1": accept("Ada")})
    running = asyncio.ensure_future(a.create_session().handle(retry, _nothing))
    while "answered a" not in log:  # the retry resumed the handler, which now sleeps
        await asyncio.sleep(0.01)
    stop_for_shutdown(running)
    answer = await asyncio.wait_for(running, TIMEOUT)
    assert answer == {"jsonrpc": "2.0", "id": 2, "error": shutting_down_error()}
    assert len(a.input_rounds) == 0  # the call was dropped with its round
    await asyncio.sleep(0)
    assert log == ["start a", "answered a", "unwound a"]
    # The state was handed back: the same retry, sent to another worker, replays the call.
    done = await send(b, retry)
    assert done["result"]["content"][0]["text"] == "Ada on b"
    # ... once: the state is single-use again from there on.
    again = await send(b, retry)
    assert again["error"]["message"] == "requestState was already used"


async def test_closing_the_rounds_drops_the_parked_calls_and_lets_them_unwind() -> None:
    store = MemoryInputRoundStore()
    log: list[str] = []
    a = _worker("a", store, log)
    for rid in (1, 2):
        first: dict[str, Any] = await send(a, call("ask_then_wait", rid))
        assert first["result"]["resultType"] == "input_required"
    assert len(a.input_rounds) == 2
    await asyncio.wait_for(a.input_rounds.close(), TIMEOUT)
    assert len(a.input_rounds) == 0
    # Cancelled while asking, each handler's finally ran before close() returned.
    assert log == ["start a", "start a", "unwound a", "unwound a"]
