"""SIGTERM with calls still running: after the graceful timeout they get a JSON-RPC error.

Real ``mcpkit run`` processes (one, or two workers sharing a real ``redis-server``), a
real client over real sockets, a slow tool that says it is running by creating a file.
Without the fix, uvicorn cancelled such a call at the end of the graceful timeout and
the client read a bare plain-text ``Internal Server Error`` (or a cut SSE stream).
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from mcpkit.errors import SHUTTING_DOWN, SHUTTING_DOWN_TEXT
from tests.cli.test_run import INIT, _running
from tests.cli.test_run_workers import HEADERS, PIDS, _banner_url
from tests.redis_server import RedisServer
from tests.transports.stdio_peer import TIMEOUT, StdioPeer

GRACE = 0.5


async def _session(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    init = await client.post(url, json=INIT, headers=HEADERS)
    assert init.status_code == 200, init.text
    headers = {
        **HEADERS,
        "Mcp-Session-Id": init.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-11-25",
    }
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await client.post(url, json=note, headers=headers)).status_code == 202
    return headers


async def _until_exists(marker: Path) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not marker.exists():
        assert loop.time() < deadline, "the slow call never started"
        await asyncio.sleep(0.02)


def _answer(response: httpx.Response, sse: bool) -> Any:
    if not sse:
        assert response.headers["content-type"] == "application/json", response.text
        # The server is going away: never a keep-alive answer (uvicorn's httptools stack
        # says close; its h11 stack, in the minimal install, sends no Connection header
        # and closes the connection after the answer).
        assert response.headers.get("connection", "close") == "close"
        return response.json()
    assert response.headers["content-type"] == "text/event-stream", response.text
    datas = [
        line[len("data:") :].strip()
        for line in response.text.splitlines()
        if line.startswith("data:") and line[len("data:") :].strip()
    ]
    [answer] = [orjson.loads(d) for d in datas if b'"id"' in d.encode()]
    return answer


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("workers", [1, 2])
async def test_a_call_running_past_the_graceful_timeout_gets_a_jsonrpc_error(
    tmp_path: Path, redis_server: RedisServer, sse: bool, workers: int
) -> None:
    args = [PIDS, "-t", "http", "--port", "0", "--graceful-timeout", str(GRACE)]
    if not sse:
        args.append("--json-response")
    if workers > 1:
        prefix = f"shutdown-{tmp_path.name}:"
        args += ["--workers", str(workers), "--redis", redis_server.url, "--redis-prefix", prefix]
    marker = tmp_path / "running"
    async with _running(*args) as proc:
        url = await _banner_url(proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            headers = await _session(client, url)
            call = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "slow", "arguments": {"marker": str(marker)}},
            }
            pending = asyncio.ensure_future(client.post(url, json=call, headers=headers))
            await _until_exists(marker)
            loop = asyncio.get_running_loop()
            stopped_at = loop.time()
            proc.send_signal(signal.SIGTERM)
            response = await asyncio.wait_for(pending, TIMEOUT)
            took = loop.time() - stopped_at
        assert response.status_code == 200, response.text
        assert "Internal Server Error" not in response.text
        answer = _answer(response, sse)
        assert answer == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": SHUTTING_DOWN,
                "message": SHUTTING_DOWN_TEXT,
                "data": {"reason": "shutdown", "retry": "elsewhere"},
            },
        }
        # Answered at the end of the graceful timeout, not at uvicorn's later deadline.
        assert GRACE <= took < GRACE + 1.5, took
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
        assert proc.stderr is not None
        rest = (await proc.stderr.read()).decode()
        assert "still running after the 0.5 s graceful timeout" in rest, rest
        assert "Traceback" not in rest and "Exception in ASGI application" not in rest, rest


async def test_a_call_that_finishes_within_the_graceful_timeout_gets_its_result(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "running"
    args = [PIDS, "-t", "http", "--port", "0", "--json-response", "--graceful-timeout", "5"]
    async with _running(*args) as proc:
        url = await _banner_url(proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            headers = await _session(client, url)
            call = {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "slow", "arguments": {"marker": str(marker), "seconds": 0.5}},
            }
            pending = asyncio.ensure_future(client.post(url, json=call, headers=headers))
            await _until_exists(marker)
            proc.send_signal(signal.SIGTERM)
            response = await asyncio.wait_for(pending, TIMEOUT)
        assert response.json()["result"]["content"][0]["text"] == "finished"
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0


SHUTDOWN_ERROR = {
    "code": SHUTTING_DOWN,
    "message": SHUTTING_DOWN_TEXT,
    "data": {"reason": "shutdown", "retry": "elsewhere"},
}


async def test_legacy_sse_answers_a_late_call_on_its_stream_then_ends_it(tmp_path: Path) -> None:
    marker = tmp_path / "running"
    args = [PIDS, "-t", "sse", "--port", "0", "--graceful-timeout", str(GRACE)]
    async with _running(*args) as proc:
        url = await _banner_url(proc, "/sse")
        base = url.rsplit("/", 1)[0]
        async with (
            httpx.AsyncClient(timeout=TIMEOUT) as client,
            client.stream("GET", url) as stream,
        ):
            lines = stream.aiter_lines()

            async def next_data() -> Any:
                while True:
                    line = await asyncio.wait_for(anext(lines), TIMEOUT)
                    if line.startswith("data:"):
                        return line[len("data:") :].strip()

            post = base + await next_data()  # the endpoint event
            await client.post(post, json=INIT)
            assert orjson.loads(await next_data())["id"] == 1
            await client.post(post, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            call = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "slow", "arguments": {"marker": str(marker)}},
            }
            assert (await client.post(post, json=call)).status_code == 202
            await _until_exists(marker)
            proc.send_signal(signal.SIGTERM)
            # The stream stays open for the call, which is answered at the graceful timeout.
            answer = orjson.loads(await next_data())
            assert answer == {"jsonrpc": "2.0", "id": 7, "error": SHUTDOWN_ERROR}
            rest = [line async for line in lines]  # then the stream ends
            assert not any(line.startswith("data:") for line in rest), rest
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0


@pytest.mark.parametrize("how", ["sigterm", "eof"])
async def test_stdio_answers_a_call_still_running_when_it_stops(tmp_path: Path, how: str) -> None:
    marker = tmp_path / "running"
    peer = await StdioPeer.spawn([sys.executable, "-m", "mcpkit", "run", PIDS])
    try:
        await peer.initialize()
        call = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {"marker": str(marker)}},
        }
        await peer.send(call)
        await _until_exists(marker)
        if how == "sigterm":
            peer.signal(signal.SIGTERM)  # at once: the client has given up waiting
        else:
            await peer.close_stdin()  # the call gets the grace (2 s), then the answer
        answer = await peer.recv_response(9, timeout=TIMEOUT)
        assert answer == {"jsonrpc": "2.0", "id": 9, "error": SHUTDOWN_ERROR}
        assert await peer.read_rest() == []
        assert await peer.wait() == 0
    finally:
        await peer.kill()


async def test_a_2026_call_running_past_the_graceful_timeout_gets_the_error(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "running"
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    call = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "slow", "arguments": {"marker": str(marker)}, "_meta": meta},
    }
    headers = {
        **HEADERS,
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "slow",
    }
    args = [PIDS, "-t", "http", "--port", "0", "--graceful-timeout", str(GRACE)]
    async with _running(*args) as proc:
        url = await _banner_url(proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            pending = asyncio.ensure_future(client.post(url, json=call, headers=headers))
            await _until_exists(marker)
            proc.send_signal(signal.SIGTERM)
            response = await asyncio.wait_for(pending, TIMEOUT)
        assert response.status_code == 200, response.text
        answer = _answer(response, response.headers["content-type"] == "text/event-stream")
        assert answer == {"jsonrpc": "2.0", "id": 5, "error": SHUTDOWN_ERROR}
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0


async def test_a_batch_cut_short_answers_what_finished_and_errors_the_rest(
    tmp_path: Path,
) -> None:
    # 2025-03-26 (the one revision with batches): the quick member keeps its result.
    marker = tmp_path / "running"
    args = [PIDS, "-t", "http", "--port", "0", "--json-response", "--graceful-timeout", str(GRACE)]
    init = {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}}  # type: ignore[dict-item]
    async with _running(*args) as proc:
        url = await _banner_url(proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            answer = await client.post(url, json=init, headers=HEADERS)
            headers = {
                **HEADERS,
                "Mcp-Session-Id": answer.headers["mcp-session-id"],
                "MCP-Protocol-Version": "2025-03-26",
            }
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await client.post(url, json=note, headers=headers)).status_code == 202
            batch = [
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "slow", "arguments": {"marker": str(marker)}},
                },
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "pid"}},
            ]
            pending = asyncio.ensure_future(client.post(url, json=batch, headers=headers))
            await _until_exists(marker)
            proc.send_signal(signal.SIGTERM)
            response = await asyncio.wait_for(pending, TIMEOUT)
        assert response.status_code == 200, response.text
        cut, done = response.json()
        assert cut == {"jsonrpc": "2.0", "id": 1, "error": SHUTDOWN_ERROR}
        assert done["id"] == 2 and "result" in done
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0


STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
}
STATELESS_HEADERS = {
    **HEADERS,
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "ask_then_slow",
}


def _ask_then_slow(rid: int, marker: Path, **extra: Any) -> dict[str, Any]:
    params = {
        "name": "ask_then_slow",
        "arguments": {"marker": str(marker)},
        "_meta": STATELESS_META,
        **extra,
    }
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def _first_round(client: httpx.AsyncClient, url: str, marker: Path) -> dict[str, Any]:
    """The first round of ``ask_then_slow``: its input_required result."""
    first = await client.post(url, json=_ask_then_slow(1, marker), headers=STATELESS_HEADERS)
    assert first.status_code == 200, first.text
    result: dict[str, Any] = _answer(first, first.headers["content-type"] == "text/event-stream")[
        "result"
    ]
    assert result["resultType"] == "input_required", result
    assert list(result["inputRequests"]) == ["elicitation"]
    return result


async def test_a_2026_retry_running_past_the_graceful_timeout_gets_the_error(
    tmp_path: Path,
) -> None:
    # The retry resumes the parked handler, which runs in a task of its own (not the
    # request's): stopping the request must still answer it, not end in uvicorn's 500.
    marker = tmp_path / "running"
    args = [PIDS, "-t", "http", "--port", "0", "--graceful-timeout", str(GRACE)]
    async with _running(*args) as proc:
        url = await _banner_url(proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            result = await _first_round(client, url, marker)
            answers = {"elicitation": {"action": "accept", "content": {"name": "Ada"}}}
            retry = _ask_then_slow(
                2, marker, requestState=result["requestState"], inputResponses=answers
            )
            pending = asyncio.ensure_future(client.post(url, json=retry, headers=STATELESS_HEADERS))
            await _until_exists(marker)
            proc.send_signal(signal.SIGTERM)
            response = await asyncio.wait_for(pending, TIMEOUT)
        assert response.status_code == 200, response.text
        answer = _answer(response, response.headers["content-type"] == "text/event-stream")
        assert answer == {"jsonrpc": "2.0", "id": 2, "error": SHUTDOWN_ERROR}
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
        assert proc.stderr is not None
        rest = (await proc.stderr.read()).decode()
        assert "Traceback" not in rest and "Exception in ASGI application" not in rest, rest


async def test_a_2026_call_parked_for_input_at_shutdown_is_dropped_quietly(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "running"
    args = [PIDS, "-t", "http", "--port", "0", "--graceful-timeout", "5"]
    async with _running(*args) as proc:
        url = await _banner_url(proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            await _first_round(client, url, marker)
        loop = asyncio.get_running_loop()
        stopped_at = loop.time()
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
        # Nothing waits on a parked call: it does not hold the shutdown for the grace.
        assert loop.time() - stopped_at < 4
        assert proc.stderr is not None
        rest = (await proc.stderr.read()).decode()
        assert "Traceback" not in rest and "destroyed but it is pending" not in rest, rest
        assert "Exception" not in rest, rest
    # The parked handler was dropped while the server's lifespan was still open (its
    # finally blocks can use what the lifespan provides), not cancelled as the loop closed.
    unwound = tmp_path / "running.unwound"
    assert unwound.read_text() == "lifespan open: True"


async def test_a_2026_retry_stopped_by_shutdown_replays_on_another_node(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    # Two nodes sharing a real Redis (the signing key and the used states). The retry
    # stopped on node A had claimed its state: A hands it back, so the same retry sent to
    # node B replays the call there instead of being refused as already used.
    marker = tmp_path / "running"
    shared = ["--redis", redis_server.url, "--redis-prefix", f"replay-{tmp_path.name}:"]
    args = [PIDS, "-t", "http", "--port", "0", "--graceful-timeout", str(GRACE), *shared]
    async with _running(*args) as node_a, _running(*args) as node_b:
        url_a, url_b = await _banner_url(node_a), await _banner_url(node_b)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            result = await _first_round(client, url_a, marker)
            answers = {"elicitation": {"action": "accept", "content": {"name": "Ada"}}}
            retry = _ask_then_slow(
                2, marker, requestState=result["requestState"], inputResponses=answers
            )
            pending = asyncio.ensure_future(
                client.post(url_a, json=retry, headers=STATELESS_HEADERS)
            )
            await _until_exists(marker)
            node_a.send_signal(signal.SIGTERM)
            stopped = await asyncio.wait_for(pending, TIMEOUT)
            assert stopped.json() == {"jsonrpc": "2.0", "id": 2, "error": SHUTDOWN_ERROR}
            assert await asyncio.wait_for(node_a.wait(), TIMEOUT) == 0
            replayed = await client.post(url_b, json=retry, headers=STATELESS_HEADERS)
            again = await client.post(url_b, json=retry, headers=STATELESS_HEADERS)
        assert node_b.pid is not None
        text = replayed.json()["result"]["content"][0]["text"]
        assert text == f"finished for Ada on {node_b.pid}"
        # ... once: from there on the state is used.
        assert again.json()["error"]["message"] == "requestState was already used"
