"""A 2026-07-28 envelope with a wrong-typed member is refused as -32602 on every transport.

The envelope is read before anything runs, and on HTTP before any session exists, so a
member of the wrong JSON type (or one nested ~1,000 levels deep, which the JSON decoder
still accepts) must become an ``Invalid params`` answer naming the member: HTTP 400 on
Streamable HTTP (with or without sessions), the error on the stream on legacy HTTP+SSE,
an error line on stdio. Never a 500, a traceback, or a request left unanswered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import orjson
import pytest

from mcpkit.transports.sse_legacy import SSEApp
from tests import schema
from tests.transports.conftest import BOTH, TIMEOUT, demo_server, next_event, sse_events
from tests.transports.stdio_peer import LAUNCHERS, StdioPeer

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LEVEL = "io.modelcontextprotocol/logLevel"

DEEP = b"[" * 1000 + b'"debug"' + b"]" * 1000  # orjson decodes up to 1,024 levels


def body(rid: int, member: str, value: bytes) -> bytes:
    """A tools/list request whose envelope member ``member`` holds the raw JSON ``value``
    (built as bytes: no encoder writes 1,000 levels)."""
    meta = b'{"%s":"%s","%s":{},"%s":%s}' % (
        PV.encode(),
        V.encode(),
        CAPS.encode(),
        member.encode(),
        value,
    )
    return b'{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"_meta":%s}}' % (rid, meta)


CASES = [
    pytest.param(LEVEL, b"[]", LEVEL, id="logLevel-array"),
    pytest.param(LEVEL, b"{}", LEVEL, id="logLevel-object"),
    pytest.param(LEVEL, b"7", LEVEL, id="logLevel-number"),
    pytest.param(LEVEL, b'"loud"', LEVEL, id="logLevel-unknown"),
    pytest.param(LEVEL, DEEP, LEVEL, id="logLevel-deep"),
    pytest.param(INFO, b"[]", INFO, id="clientInfo-array"),
    pytest.param(CAPS, b"[]", CAPS, id="clientCapabilities-array"),
]


def check_refusal(answer: dict[str, Any], rid: int, named: str) -> None:
    schema.validate_message(answer, V)
    assert answer["id"] == rid, answer
    assert answer["error"]["code"] == -32602, answer
    assert named in answer["error"]["message"], answer
    assert "Traceback" not in answer["error"]["message"]


@pytest.mark.parametrize("stateless", [False, True], ids=["sessions", "stateless"])
@pytest.mark.parametrize(("member", "value", "named"), CASES)
async def test_streamable_http_answers_400_invalid_params(
    serve_app: Any,
    http: httpx.AsyncClient,
    stateless: bool,
    member: str,
    value: bytes,
    named: str,
) -> None:
    url = await serve_app(demo_server().http_app(stateless=stateless)) + "/mcp"
    headers = {"accept": BOTH, "content-type": "application/json", "mcp-method": "tools/list"}
    resp = await http.post(url, content=body(41, member, value), headers=headers)
    assert resp.status_code == 400, resp.text
    check_refusal(resp.json(), 41, named)
    # the server is unharmed: the same request with a good envelope is served
    good = {
        "jsonrpc": "2.0",
        "id": 42,
        "method": "tools/list",
        "params": {"_meta": {PV: V, CAPS: {}}},
    }
    ok = await http.post(url, content=orjson.dumps(good), headers=headers)
    assert ok.status_code == 200 and "tools" in ok.json()["result"]


async def test_the_same_deep_envelope_twice_is_refused_twice(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    # The second request compares its envelope with the first one's (a one-entry cache):
    # the comparison must not exhaust the stack either.
    url = await serve_app(demo_server().http_app()) + "/mcp"
    headers = {"accept": BOTH, "content-type": "application/json", "mcp-method": "tools/list"}
    deep_extra = b'"x":' + DEEP + b","
    for rid in (1, 2):
        raw = body(rid, LEVEL, b'"info"').replace(b'"_meta":{', b'"_meta":{' + deep_extra, 1)
        resp = await http.post(url, content=raw, headers=headers)
        assert resp.status_code == 200, resp.text
        assert "tools" in resp.json()["result"]
    for rid in (3, 4):
        resp = await http.post(url, content=body(rid, LEVEL, DEEP), headers=headers)
        assert resp.status_code == 400, resp.text
        check_refusal(resp.json(), rid, LEVEL)


@pytest.mark.parametrize(("member", "value", "named"), CASES)
async def test_stdio_answers_invalid_params(member: str, value: bytes, named: str) -> None:
    peer = await StdioPeer.spawn(LAUNCHERS["run_stdio"])
    try:
        peer.revision = V
        await peer.send_bytes(body(7, member, value) + b"\n")
        check_refusal(await peer.recv(), 7, named)
        listed = await peer.request("tools/list", {"_meta": {PV: V, CAPS: {}}})
        assert "tools" in listed["result"]
        assert "Traceback" not in peer.stderr
    finally:
        await peer.kill()


@pytest.mark.parametrize(("member", "value", "named"), CASES)
async def test_legacy_sse_answers_invalid_params_on_the_stream(
    serve_app: Any, http: httpx.AsyncClient, member: str, value: bytes, named: str
) -> None:
    base = await serve_app(SSEApp(demo_server()))
    async with http.stream("GET", base + "/sse", headers={"accept": "text/event-stream"}) as resp:
        events = sse_events(resp)
        endpoint = (await next_event(events)).data
        posted = await http.post(
            base + endpoint,
            content=body(9, member, value),
            headers={"content-type": "application/json"},
            timeout=TIMEOUT,
        )
        assert posted.status_code == 202
        event = await next_event(events)  # bounded: a request never answered fails here
        check_refusal(event.json, 9, named)


async def test_a_parse_error_carries_a_null_id_over_http_and_legacy_sse(
    serve_app: Callable[[Any], Awaitable[str]], http: httpx.AsyncClient
) -> None:
    # JSON-RPC 2.0 §5: an error whose request id cannot be read has "id": null.
    server = demo_server()
    base = await serve_app(server.http_app())
    r = await http.post(
        base + "/mcp",
        content=b"{not json",
        headers={"accept": BOTH, "content-type": "application/json"},
    )
    assert r.status_code == 400
    assert r.json()["id"] is None and r.json()["error"]["code"] == -32700
    sse_base = await serve_app(demo_server().sse_app())
    async with http.stream("GET", sse_base + "/sse") as stream:
        lines = stream.aiter_lines()
        async with asyncio.timeout(TIMEOUT):
            assert await anext(lines) == "event: endpoint"
            path = (await anext(lines)).removeprefix("data: ")
        r = await http.post(
            sse_base + path, content=b"{not json", headers={"content-type": "application/json"}
        )
    assert r.status_code == 400
    assert r.json()["id"] is None and r.json()["error"]["code"] == -32700
