"""Streamable HTTP: POST handling, status codes, sessions, JSON and SSE answers (real sockets)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.transports.conftest import BOTH, TIMEOUT, HTTPClient, demo_server, sse_events

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


@pytest.fixture
async def endpoint(serve_app: Any) -> tuple[StreamableHTTPApp, str]:
    app = StreamableHTTPApp(demo_server())
    return app, await serve_app(app) + "/mcp"


@pytest.fixture
async def client(endpoint: tuple[StreamableHTTPApp, str], make_client: Any) -> HTTPClient:
    c: HTTPClient = make_client(endpoint[1])
    await c.initialize()
    return c


# -- session lifecycle -------------------------------------------------------------------------------


async def test_initialize_returns_a_random_visible_ascii_session_id(
    endpoint: Any, make_client: Any
) -> None:
    app, url = endpoint
    a, b = make_client(url), make_client(url)
    await a.initialize()
    await b.initialize()
    assert a.session_id != b.session_id
    for sid in (a.session_id, b.session_id):
        assert sid is not None and len(sid) >= 32
        assert all(0x21 <= ord(ch) <= 0x7E for ch in sid)
    assert len(app) == 2


async def test_requests_reuse_the_session_until_delete_then_404(client: HTTPClient) -> None:
    ex = await client.call_tool("add", {"a": 2, "b": 3})
    assert ex.status == 200
    assert ex.result["content"][0]["text"] == "5"
    assert (await client.request("tools/list")).status == 200
    deleted = await client.delete()
    assert deleted.status_code == 204
    after = await client.request("tools/list")
    assert after.status == 404
    assert after.messages[0]["error"]["code"] == -32600
    assert (await client.delete()).status_code == 404


async def test_missing_session_id_is_400_and_unknown_is_404(
    client: HTTPClient, http: httpx.AsyncClient
) -> None:
    body = orjson.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
    hdrs = {"accept": BOTH, "content-type": "application/json"}
    missing = await http.post(client.url, content=body, headers=hdrs)
    assert missing.status_code == 400
    assert missing.json()["id"] is None  # the request id is unknown: null (JSON-RPC §5)
    unknown = await http.post(client.url, content=body, headers={**hdrs, "mcp-session-id": "nope"})
    assert unknown.status_code == 404
    for method in ("GET", "DELETE"):
        assert (
            await http.request(method, client.url, headers={"accept": "text/event-stream"})
        ).status_code == 400
        assert (
            await http.request(
                method, client.url, headers={"accept": "text/event-stream", "mcp-session-id": "x"}
            )
        ).status_code == 404


async def test_initialize_with_a_server_session_id_is_refused_by_the_session(
    client: HTTPClient,
) -> None:
    ex = await client.post({**INIT, "id": 77})
    assert ex.status == 200
    assert ex.response["error"]["code"] == -32600
    assert "mcp-session-id" not in ex.headers


async def test_on_session_initialized_gets_the_id_sync_and_async(
    serve_app: Any, make_client: Any
) -> None:
    seen: list[str] = []

    async def async_cb(sid: str) -> None:
        await asyncio.sleep(0)
        seen.append("async:" + sid)

    url1 = await serve_app(StreamableHTTPApp(demo_server(), on_session_initialized=seen.append))
    url2 = await serve_app(StreamableHTTPApp(demo_server(), on_session_initialized=async_cb))
    a, b = make_client(url1 + "/mcp"), make_client(url2 + "/mcp")
    await a.initialize()
    await b.initialize()
    assert seen == [a.session_id, "async:" + str(b.session_id)]


async def test_custom_session_id_generator(serve_app: Any, make_client: Any) -> None:
    ids = iter(["first-id", "second-id"])
    url = await serve_app(StreamableHTTPApp(demo_server(), session_id_generator=lambda: next(ids)))
    c = make_client(url + "/mcp")
    await c.initialize()
    assert c.session_id == "first-id"


async def test_a_failed_initialize_creates_no_session(endpoint: Any, make_client: Any) -> None:
    app, url = endpoint
    c: HTTPClient = make_client(url)
    bad = {**INIT, "params": {**INIT["params"], "capabilities": "not an object"}}  # type: ignore[dict-item]
    ex = await c.post(bad)
    assert ex.status == 200
    assert ex.response["error"]["code"] == -32602
    assert "mcp-session-id" not in ex.headers
    assert len(app) == 0


# -- response types ----------------------------------------------------------------------------------


async def test_sse_by_default_json_when_asked_or_when_only_json_is_accepted(
    serve_app: Any, make_client: Any
) -> None:
    url = await serve_app(StreamableHTTPApp(demo_server())) + "/mcp"
    c: HTTPClient = make_client(url)
    await c.initialize()
    sse = await c.call_tool("add", {"a": 1, "b": 1})
    assert sse.headers["content-type"] == "text/event-stream"
    assert sse.events and sse.events[-1].event == "message"
    only_json = await c.call_tool("add", {"a": 1, "b": 1}, accept="application/json")
    assert only_json.headers["content-type"] == "application/json"
    assert only_json.result["content"][0]["text"] == "2"
    anything = await c.call_tool("add", {"a": 1, "b": 1}, accept="*/*")
    assert anything.headers["content-type"] == "application/json"

    json_url = await serve_app(StreamableHTTPApp(demo_server(), json_response=True)) + "/mcp"
    j: HTTPClient = make_client(json_url)
    init = await j.initialize()
    assert init.headers["content-type"] == "application/json"
    ex = await j.call_tool("add", {"a": 20, "b": 22})
    assert ex.headers["content-type"] == "application/json"
    assert ex.result["content"][0]["text"] == "42"


async def test_changing_json_response_applies_to_the_next_request(
    serve_app: Any, make_client: Any
) -> None:
    # The app remembers the response mode per Accept value; a change must not be hidden by it.
    app = StreamableHTTPApp(demo_server())
    c: HTTPClient = make_client(await serve_app(app) + "/mcp")
    await c.initialize()
    before = await c.call_tool("add", {"a": 1, "b": 1})
    assert before.headers["content-type"] == "text/event-stream"
    app.json_response = True
    after = await c.call_tool("add", {"a": 1, "b": 1})
    assert after.headers["content-type"] == "application/json"
    app.json_response = False
    again = await c.call_tool("add", {"a": 1, "b": 1})
    assert again.headers["content-type"] == "text/event-stream"


async def test_progress_and_logs_arrive_on_the_post_stream_before_the_response(
    client: HTTPClient,
) -> None:
    await client.request("logging/setLevel", {"level": "debug"})
    msg = {
        "jsonrpc": "2.0",
        "id": 50,
        "method": "tools/call",
        "params": {"name": "work", "arguments": {"steps": 3}, "_meta": {"progressToken": "tok"}},
    }
    ex = await client.post(msg)
    methods = [m.get("method", "response") for m in ex.messages]
    assert methods == ["notifications/progress", "notifications/message"] * 3 + ["response"]
    progress = ex.notifications("notifications/progress")
    assert [p["params"]["progress"] for p in progress] == [1, 2, 3]
    assert all(p["params"]["progressToken"] == "tok" for p in progress)
    assert ex.result["content"][0]["text"] == "worked 3"


async def test_elicitation_answered_by_a_second_post_while_the_first_stream_waits(
    endpoint: Any, make_client: Any
) -> None:
    c: HTTPClient = make_client(endpoint[1])
    await c.initialize(capabilities={"elicitation": {}})
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": {}},
    }
    async with c.stream(call) as resp:
        assert resp.status_code == 200
        events = sse_events(resp)
        async with asyncio.timeout(TIMEOUT):
            first = await anext(events)
        request = first.json
        assert request["method"] == "elicitation/create"
        c.validate(request)
        answer = {
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"action": "accept", "content": {"name": "Ada"}},
        }
        posted = await c.post(answer)
        assert posted.status == 202
        assert posted.messages == []
        async with asyncio.timeout(TIMEOUT):
            final = (await anext(events)).json
    assert final["id"] == 7
    assert final["result"]["content"][0]["text"] == "hello Ada"


async def test_notifications_only_get_202_without_body(client: HTTPClient) -> None:
    ex = await client.post({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    assert ex.status == 202
    assert ex.messages == []
    # a response to a request nobody made is accepted too (and ignored)
    ex = await client.post({"jsonrpc": "2.0", "id": "unknown", "result": {}})
    assert ex.status == 202


async def test_tool_errors_do_not_leak_internals(client: HTTPClient) -> None:
    ex = await client.call_tool("boom")
    assert ex.status == 200
    text = orjson.dumps(ex.response).decode()
    assert "secret internal detail" not in text
    assert "Traceback" not in text


async def test_batches_work_in_2025_03_26_and_are_refused_later(
    endpoint: Any, make_client: Any
) -> None:
    old: HTTPClient = make_client(endpoint[1], protocol_version="2025-03-26")
    await old.initialize()
    batch = [
        {
            "jsonrpc": "2.0",
            "id": 11,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
        },
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": 12, "method": "ping"},
    ]
    ex = await old.post(batch, accept="application/json")
    assert ex.status == 200
    (answers,) = ex.messages
    assert sorted(a["id"] for a in answers) == [11, 12]
    sse = await old.post(batch)
    assert [sorted(a["id"] for a in m) for m in sse.messages] == [[11, 12]]
    notes = await old.post([{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}])
    assert notes.status == 202

    new: HTTPClient = make_client(endpoint[1])
    await new.initialize()
    refused = await new.post(batch)
    assert refused.status == 400
    assert refused.messages[0]["error"]["code"] == -32600


# -- status codes ------------------------------------------------------------------------------------


async def test_406_when_the_client_accepts_neither_json_nor_sse(
    client: HTTPClient, http: httpx.AsyncClient
) -> None:
    ex = await client.request("tools/list", accept="text/html")
    assert ex.status == 406
    get = await http.get(client.url, headers={**client.headers(), "accept": "application/json"})
    assert get.status_code == 406


async def test_missing_accept_is_treated_as_anything(
    client: HTTPClient, http: httpx.AsyncClient
) -> None:
    hdrs = {k: v for k, v in client.headers().items() if k != "accept"}
    body = orjson.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    resp = await http.post(client.url, content=body, headers={**hdrs, "accept": ""})
    assert resp.status_code == 406  # an empty Accept accepts nothing
    req = http.build_request("POST", client.url, content=body, headers=hdrs)
    del req.headers["accept"]
    resp = await http.send(req)
    assert resp.status_code == 200
    assert resp.json() == {"jsonrpc": "2.0", "id": 3, "result": {}}


async def test_415_unless_content_type_is_json(client: HTTPClient) -> None:
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    assert (await client.post(ping, headers={"content-type": "text/plain"})).status == 415
    ok = await client.post(ping, headers={"content-type": "Application/JSON; charset=utf-8"})
    assert ok.status == 200


async def test_400_for_malformed_json_and_invalid_json_rpc(
    client: HTTPClient, http: httpx.AsyncClient
) -> None:
    resp = await http.post(client.url, content=b'{"jsonrpc": "2.0", ', headers=client.headers())
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == -32700
    for bad in ({"hello": "world"}, {"jsonrpc": "2.0", "id": 5, "method": 12}, 42, "text"):
        ex = await client.post(bad)
        assert ex.status == 400, bad
        assert ex.messages[0]["error"]["code"] == -32600


async def test_400_for_an_unsupported_protocol_version_header(
    client: HTTPClient, http: httpx.AsyncClient
) -> None:
    ex = await client.request("ping", headers={"mcp-protocol-version": "1999-01-01"})
    assert ex.status == 400
    assert "1999-01-01" in ex.messages[0]["error"]["message"]
    for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        assert (
            await client.request("ping", headers={"mcp-protocol-version": version})
        ).status == 200
    # absent: accepted (assumed 2025-03-26; the session knows its revision anyway)
    hdrs = {k: v for k, v in client.headers().items() if k != "mcp-protocol-version"}
    resp = await http.post(
        client.url, content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}', headers=hdrs
    )
    assert resp.status_code == 200
    get = await http.get(client.url, headers={**client.headers(), "mcp-protocol-version": "bogus"})
    assert get.status_code == 400


async def test_413_for_bodies_over_the_limit_with_and_without_content_length(
    serve_app: Any, make_client: Any, http: httpx.AsyncClient
) -> None:
    url = await serve_app(StreamableHTTPApp(demo_server(), max_body_size=2048)) + "/mcp"
    c: HTTPClient = make_client(url)
    await c.initialize()
    big = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"x": "y" * 4000}},
    }
    assert (await c.post(big)).status == 413

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: chunked upload
        body = orjson.dumps(big)
        for i in range(0, len(body), 500):
            yield body[i : i + 500]

    resp = await http.post(url, content=chunks(), headers=c.headers())
    assert resp.status_code == 413
    assert "2048" in resp.json()["error"]["message"]
    small = await c.call_tool("add", {"a": 1, "b": 1})
    assert small.status == 200


async def test_405_for_other_methods_and_404_for_other_paths(
    client: HTTPClient, http: httpx.AsyncClient
) -> None:
    resp = await http.put(client.url, headers=client.headers(), content=b"{}")
    assert resp.status_code == 405
    assert resp.headers["allow"] == "GET, POST, DELETE"
    other = await http.post(
        client.url.replace("/mcp", "/other"), headers=client.headers(), content=b"{}"
    )
    assert other.status_code == 404
    assert (
        await http.post(client.url + "/", headers=client.headers(), content=b"{}")
    ).status_code != 404


async def test_internal_errors_are_500_without_details_and_the_server_survives(
    serve_app: Any, make_client: Any
) -> None:
    def broken() -> str:
        raise RuntimeError("generator exploded with a secret")

    for debug in (False, True):
        url = (
            await serve_app(
                StreamableHTTPApp(demo_server(), session_id_generator=broken, debug=debug)
            )
            + "/mcp"
        )
        c: HTTPClient = make_client(url)
        ex = await c.post(INIT)
        assert ex.status == 500
        message = ex.messages[0]["error"]["message"]
        assert ("secret" in message) is debug
        assert "Traceback" not in message
        again = await c.post(INIT)
        assert again.status == 500  # still serving


# -- hosting -----------------------------------------------------------------------------------------


async def test_mounts_in_starlette(
    serve_app: Any, make_client: Any, http: httpx.AsyncClient
) -> None:
    mcp_app = demo_server().http_app()
    outer = Starlette(routes=[Mount("/api", app=mcp_app)])
    base = await serve_app(outer)
    c: HTTPClient = make_client(base + "/api/mcp")
    await c.initialize()
    ex = await c.call_tool("add", {"a": 4, "b": 5})
    assert ex.result["content"][0]["text"] == "9"
    assert (
        await http.post(base + "/api/elsewhere", content=b"{}", headers=c.headers())
    ).status_code == 404
    assert (await http.post(base + "/mcp", content=b"{}", headers=c.headers())).status_code == 404


async def test_lifespan_shutdown_closes_every_session(make_client: Any) -> None:
    from tests.transports.conftest import run_app

    server = demo_server()
    app = StreamableHTTPApp(server)
    async with run_app(app) as base:
        c: HTTPClient = make_client(base + "/mcp")
        await c.initialize()
        assert len(app) == 1 and len(server.sessions()) == 1
    assert len(app) == 0
    assert server.sessions() == []


async def test_lifespan_protocol_directly() -> None:
    app = StreamableHTTPApp(demo_server())
    inbox = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return inbox.pop(0)

    async def send(message: Any) -> None:
        sent.append(message)

    await asyncio.wait_for(app({"type": "lifespan"}, receive, send), TIMEOUT)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
