"""Middleware and the lifespan on every transport and both protocol eras.

The server (tests/fixtures/middleware_server.py) has a logging middleware
around a guard that refuses the ``secret`` tool, and a lifespan that opens a
fake pool the ``query`` tool uses. mcpkit's own client talks to it over stdio
(a real subprocess), Streamable HTTP (stateful and sessionless, real sockets),
legacy SSE and in memory, on 2025-11-25 and on 2026-07-28; each run checks
that every request passed both middlewares in order with its method and
result, that the refused tool never ran and the client got -31403, that a
2026-07-28 input round passed the chain once per round, that no notification
did, that each request's ``ctx.transport`` names the transport, and that
the lifespan was entered once before the first request and
exited once at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Client, RemoteError
from tests.fixtures.middleware_server import build
from tests.transports.conftest import TIMEOUT, run_app

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "middleware_server.py"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"

CASES = [
    ("memory", LEGACY),
    ("memory", MODERN),
    ("stdio", LEGACY),
    ("stdio", MODERN),
    ("http", LEGACY),
    ("http", MODERN),
    ("http-sessionless", LEGACY),
    ("http-sessionless", MODERN),
    ("sse", LEGACY),
]

# What ctx.transport says for each way of serving.
CARRIER = {
    "memory": "memory",
    "stdio": "stdio",
    "http": "streamable_http",
    "http-sessionless": "streamable_http",
    "sse": "sse",
}


def accept_ada(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


@contextlib.asynccontextmanager
async def serving(
    transport: str, revision: str, tmp: Path
) -> AsyncIterator[tuple[Client, list[str]]]:
    """Connect a Client to the fixture over ``transport``, run the body, and stop serving;
    yields the list the events land in (read from the subprocess's file for stdio)."""
    events: list[str] = []
    options: dict[str, Any] = {
        "protocol_version": revision,
        "elicitation_handler": accept_ada,
        "timeout": TIMEOUT,
        "capabilities": {"elicitation": {}},
    }
    if transport == "stdio":
        path = tmp / "events.jsonl"
        client = Client(
            command=sys.executable,
            args=[str(FIXTURE)],
            env={**os.environ, "MW_EVENTS": str(path)},
            **options,
        )
        try:
            async with client:
                yield client, events
        finally:
            # The client closed stdin and waited for the process: the lifespan has exited.
            lines = path.read_text().splitlines() if path.exists() else []
            events[:] = [json.loads(line) for line in lines]
        return
    server = build(events.append)
    if transport == "memory":
        async with Client(server=server, **options) as client:
            yield client, events
        return
    if transport == "sse":
        app = server.sse_app()
        async with run_app(app) as base:
            async with Client(url=f"{base}/sse", http_transport="sse", **options) as client:
                yield client, events
        return
    app = server.http_app(stateless=transport == "http-sessionless")
    async with run_app(app) as base:
        async with Client(url=f"{base}/mcp", http_transport="streamable-http", **options) as client:
            yield client, events


def requests_of(events: list[str], method: str) -> list[list[str]]:
    """The middleware events of each ``method`` request, in order, one list per request."""
    out: list[list[str]] = []
    current: list[str] | None = None
    for event in events:
        if event == f"log> {method}":
            current = [event]
            out.append(current)
        elif (
            current is not None
            and event.split(" ")[1] == method
            and event.startswith(("guard>", "log<", "log!"))
        ):
            current.append(event)
            if event.startswith(("log<", "log!")):
                current = None
    return out


@pytest.mark.parametrize(("transport", "revision"), CASES, ids=[f"{t}-{r}" for t, r in CASES])
async def test_middleware_and_lifespan(transport: str, revision: str, tmp_path: Path) -> None:
    async with serving(transport, revision, tmp_path) as (client, events):
        # A tool reaching the lifespan's pool through ctx.lifespan_state.
        result = await client.call_tool("query", {"sql": "select 1"})
        assert result["content"][0]["text"] == "rows for 'select 1' (query 1)"
        # The guard refuses: the client gets the JSON-RPC error, the tool never runs.
        with pytest.raises(RemoteError) as refused:
            await client.call_tool("secret", {})
        assert refused.value.code == -31403
        assert "'secret' is not allowed" in refused.value.message
        # A tool that asks the client (server->client request, or input rounds on 2026).
        asked = await client.call_tool("ask", {})
        answer = asked["content"][0]["text"]
        if transport == "http-sessionless" and revision == LEGACY:
            assert asked["isError"] and "stateless mode" in answer  # no channel back
        else:
            assert answer == "hello Ada"
        during = list(events)

    assert "secret ran" not in events
    # Entered once, before any request; exited once, after the last.
    assert events.count("lifespan enter") == 1 and events.count("lifespan exit") == 1
    assert events[0] == "lifespan enter" and events[-1] == "lifespan exit"
    if transport != "stdio":
        assert "lifespan exit" not in during  # still open while the client was connected
    # Every request says what carried it.
    assert {e for e in events if e.startswith("via ")} == {f"via {CARRIER[transport]}"}
    # No notification passes through the chain (notifications/initialized, ...).
    assert not [e for e in events if "notifications/" in e]

    calls = requests_of(events, "tools/call")
    query = [
        "log> tools/call",
        "guard> tools/call",
        "log< tools/call text=rows for 'select 1' (query 1)",
    ]
    secret = ["log> tools/call", "guard> tools/call", "log! tools/call -31403"]
    done = ["log> tools/call", "guard> tools/call", f"log< tools/call text={answer}"]
    if revision == MODERN:
        # Each round is a request of its own: the chain runs again for the retry.
        asking = ["log> tools/call", "guard> tools/call", "log< tools/call input_required"]
        assert calls == [query, secret, asking, done]
    else:
        assert calls == [query, secret, done]
    if revision != MODERN:
        assert requests_of(events, "initialize") == [
            ["log> initialize", "guard> initialize", "log< initialize ok"]
        ]


async def test_a_host_app_runs_the_lifespan_when_it_mounts_the_asgi_app() -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    events: list[str] = []
    server = build(events.append)

    @contextlib.asynccontextmanager
    async def host_lifespan(app: Starlette) -> AsyncIterator[None]:
        async with server.lifespan_context():  # Starlette does not pass lifespan to mounts
            yield

    host = Starlette(routes=[Mount("/tools", app=server.http_app("/mcp"))], lifespan=host_lifespan)
    async with run_app(host) as base:
        async with Client(url=f"{base}/tools/mcp", timeout=TIMEOUT) as client:
            result = await client.call_tool("query", {"sql": "select 2"})
        assert result["content"][0]["text"] == "rows for 'select 2' (query 1)"
        assert events.count("lifespan enter") == 1 and "lifespan exit" not in events
    assert events[-1] == "lifespan exit" and events.count("lifespan exit") == 1
