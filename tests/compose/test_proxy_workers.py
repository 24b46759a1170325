"""An old server behind a stateless, horizontally scaled endpoint: ``mcpkit run --workers 2 --redis``.

The upstream is FastMCP (``tests/interop/fixtures/fastmcp_server.py``), whose ``ask_name``
asks with an ``elicitation/create`` request in the middle of the call: handshake era
only. Served through ``MCPServer.proxy`` by two worker processes sharing one port and a
real ``redis-server``, a 2026-07-28 client gets the question as an input-required round,
and its retry, sent on a connection that reaches the *other* worker, completes the call:
that worker replays the call from the signed ``requestState`` (its own upstream asks the
same question, answered from the journal). Which worker a connection reaches is the
kernel's choice, so the test asks (the proxy's own ``worker`` tool) over fresh
keep-alive connections until one reaches the other worker, then sends the retry on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.cli.test_run import _running
from tests.redis_server import RedisServer
from tests.transports.stdio_peer import FIXTURES, TIMEOUT

TARGET = str(FIXTURES / "proxy_workers.py")
MODERN = "2026-07-28"
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": MODERN,
}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "workers-test", "version": "1"},
}


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


async def _banner_url(proc: asyncio.subprocess.Process) -> str:
    assert proc.stderr is not None
    line = (await asyncio.wait_for(proc.stderr.readline(), 3 * TIMEOUT)).decode()
    prefix = "mcpkit: serving 'old-server' on http://127.0.0.1:"
    assert line.startswith(prefix), line
    return f"http://127.0.0.1:{int(line[len(prefix) :].split('/')[0])}/mcp"


async def _call(client: httpx.AsyncClient, url: str, rid: int, params: dict[str, Any]) -> Any:
    body = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {**params, "_meta": META},
    }
    # 2026-07-28 streamable-http § request metadata: the method and name as headers too.
    headers = {**HEADERS, "Mcp-Method": "tools/call", "Mcp-Name": params["name"]}
    answer = await client.post(url, json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


async def _worker(client: httpx.AsyncClient, url: str) -> int:
    return int((await _call(client, url, 1, {"name": "worker"}))["content"][0]["text"])


async def test_an_elicitation_of_a_handshake_upstream_completes_across_two_workers(
    redis_url: str,
) -> None:
    args = [TARGET, "-t", "http", "--port", "0", "--workers", "2", "--json-response"]
    async with _running(*args, "--redis", redis_url, "--redis-prefix", "proxy-workers:") as proc:
        url = await _banner_url(proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as first:
            asker = await _worker(first, url)
            question = await _call(first, url, 2, {"name": "ask_name"})
            assert await _worker(first, url) == asker  # the round was this worker's
        assert question["resultType"] == "input_required", question
        [(key, request)] = question["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        assert request["params"]["message"] == "What is your name?"

        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while True:  # a connection to the other worker
            assert loop.time() < deadline, "never reached the second worker"
            retry = httpx.AsyncClient(timeout=TIMEOUT)
            if await _worker(retry, url) != asker:
                break
            await retry.aclose()
        try:
            done = await _call(
                retry,
                url,
                3,
                {
                    "name": "ask_name",
                    "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
                    "requestState": question["requestState"],
                },
            )
            replayer = await _worker(retry, url)
        finally:
            await retry.aclose()
        assert replayer != asker
        assert done["resultType"] == "complete", done
        assert done["content"][0]["text"] == "hello Ada"
        assert not done.get("isError")
