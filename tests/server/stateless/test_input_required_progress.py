"""Progress of a tool resumed after an input-required round reaches the client.

On 2026-07-28 each retry of an input-required call is a new request with its own
``_meta.progressToken``; the client forgets the token of the request the retry
answers. Progress the tool reports after it is resumed must therefore carry the
retry's token. The tool below reports progress, elicits, then reports progress
again; a real mcpkit client must see both reports, whatever the transport and
whatever the era.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpkit.client import Client
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.transports.conftest import run_app

REPO = Path(__file__).resolve().parents[3]
# Its tool `coffee` reports progress, asks how to make the coffee, reports progress again.
ASKING = str(REPO / "tests" / "fixtures" / "cli_asking.py")
ANSWER = {"action": "accept", "content": {"size": "small", "sugar": 1}}
EXPECTED = [(1, 2, "taking the order"), (2, 2, "done")]
REVISIONS = ["2026-07-28", "2025-11-25"]


def load_asking_server() -> Any:
    """A fresh copy of the fixture's server (the same one the stdio tests run)."""
    spec = importlib.util.spec_from_file_location("cli_asking_for_progress", ASKING)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the model's annotations there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module.server


async def order_coffee(client: Client) -> list[tuple[Any, Any, Any]]:
    seen: list[tuple[Any, Any, Any]] = []

    def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    result = await client.call_tool("coffee", {}, progress=progress, timeout=20)
    assert result["content"][0]["text"] == "a small coffee, 1 sugar, no milk", result
    return seen


@pytest.mark.parametrize("revision", REVISIONS)
async def test_progress_after_the_resume_reaches_the_client_over_streamable_http(
    revision: str,
) -> None:
    sent: list[dict[str, Any]] = []
    async with (
        run_app(StreamableHTTPApp(load_asking_server(), path="/mcp")) as base,
        Client(
            url=f"{base}/mcp",
            protocol_version=revision,
            elicitation_handler=lambda params: ANSWER,
            trace=lambda direction, msg: sent.append(msg) if direction == "sent" else None,
            timeout=20,
        ) as client,
    ):
        assert client.protocol_version == revision
        assert await order_coffee(client) == EXPECTED
    retried = [m for m in sent if "requestState" in (m.get("params") or {})]
    assert len(retried) == (1 if revision == "2026-07-28" else 0)


@pytest.mark.parametrize("revision", REVISIONS)
async def test_progress_after_the_resume_reaches_the_client_over_stdio(revision: str) -> None:
    async with Client(
        command=sys.executable,
        args=["-m", "mcpkit", "run", ASKING],
        protocol_version=revision,
        elicitation_handler=lambda params: ANSWER,
        connect_timeout=20,
        timeout=20,
    ) as client:
        assert client.protocol_version == revision
        assert await order_coffee(client) == EXPECTED


async def test_progress_after_the_resume_reaches_the_client_in_memory() -> None:
    async with Client(
        server=load_asking_server(),
        protocol_version="2026-07-28",
        elicitation_handler=lambda params: ANSWER,
        timeout=20,
    ) as client:
        assert client.protocol_version == "2026-07-28"
        assert await order_coffee(client) == EXPECTED


async def test_a_retry_without_a_progress_token_gets_no_progress_of_the_resumed_run() -> None:
    """The first request's token is stale after the resume: nothing may be sent to it."""
    server = load_asking_server()
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    first_stream: list[dict[str, Any]] = []
    retry_stream: list[dict[str, Any]] = []

    async def to_first(message: dict[str, Any]) -> None:
        first_stream.append(message)

    async def to_retry(message: dict[str, Any]) -> None:
        retry_stream.append(message)

    session = server.create_session(stateless=True, revision="2026-07-28")
    asked = await session.serve(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "coffee", "_meta": {**meta, "progressToken": "first"}},
        },
        to_first,
    )
    assert asked is not None and asked["result"]["resultType"] == "input_required"
    retry = server.create_session(stateless=True, revision="2026-07-28")
    done = await retry.serve(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "coffee",
                "_meta": meta,
                "inputResponses": {"elicitation": ANSWER},
                "requestState": asked["result"]["requestState"],
            },
        },
        to_retry,
    )
    assert done is not None and done["result"]["content"][0]["text"].startswith("a small")
    assert [m["params"]["progressToken"] for m in first_stream] == ["first"]
    assert [m for m in retry_stream if m.get("method") == "notifications/progress"] == []
