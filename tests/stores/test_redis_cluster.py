"""Two nodes of one cluster in one test process: each its own server, store and port,
sharing one real ``redis-server`` under one prefix; a raw client sends each request
to the node the test names.

What must hold across nodes: a session made on one serves on the other and ends
on both; log level and resource subscriptions set on one apply on the other; a
client's answer to a request one node sent reaches it through the other; a
cancellation reaches the node running the request; notifications raised on one
node reach the GET stream held by the other, once; a request stream resumed on the
other node is replayed and followed to its response; a node that dies mid-request
leaves the resumed stream a JSON-RPC error, not silence.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

import httpx
import orjson
import pytest
from redis.asyncio import Redis

from mcpkit import MCPServer
from mcpkit.stores.redis import RedisStore
from mcpkit.transports.sse_legacy import SSEApp
from tests.redis_server import RedisServer
from tests.transports.conftest import TIMEOUT, HTTPClient, demo_server, next_event, sse_events
from tests.transports.test_sse_legacy import connect
from tests.transports.test_streamable_http_stateless_era import CAPS, headers_for, post, request
from tests.transports.test_streamable_http_streams import GetStream, call


@dataclass
class Node:
    server: MCPServer
    store: RedisStore
    url: str


Start = Callable[..., Awaitable[list[Node]]]


@pytest.fixture
def cluster(serve_app: Any, redis_url: str) -> Start:
    prefix = f"c-{uuid4().hex[:8]}:"

    async def start(n: int = 2, **app_options: Any) -> list[Node]:
        nodes = []
        for _ in range(n):
            store = RedisStore(redis_url, prefix=prefix, node_ttl=1.0)
            server = demo_server(store=store)
            app = server.http_app(**app_options)
            nodes.append(Node(server, store, await serve_app(app) + "/mcp"))
        return nodes

    return start


async def until(predicate: Callable[[], Any]) -> None:
    async with asyncio.timeout(TIMEOUT):
        while not predicate():
            await asyncio.sleep(0.01)


def on(c: HTTPClient, node: Node) -> HTTPClient:
    c.url = node.url
    return c


async def test_a_session_made_on_one_node_serves_on_the_other_and_ends_on_both(
    cluster: Start, make_client: Any
) -> None:
    a, b = await cluster()
    c: HTTPClient = make_client(a.url)
    await c.initialize(capabilities={"elicitation": {}})
    listed = await on(c, b).request("tools/list")
    assert listed.status == 200
    assert "add" in {t["name"] for t in listed.result["tools"]}
    added = await on(c, b).call_tool("add", {"a": 2, "b": 3})
    assert added.result["content"][0]["text"] == "5"
    back = await on(c, a).call_tool("add", {"a": 1, "b": 1})
    assert back.result["content"][0]["text"] == "2"
    assert (await on(c, b).delete()).status_code == 204
    assert (await on(c, b).request("tools/list")).status == 404
    # The other node drops its copy when the bus tells it: within milliseconds, not at once.
    async with asyncio.timeout(1.0):
        while (await on(c, a).request("tools/list")).status != 404:
            await asyncio.sleep(0.01)
    # A made-up session id is unknown everywhere too.
    c.session_id = "no-such-session"
    assert (await on(c, a).request("tools/list")).status == 404


async def test_log_level_set_on_one_node_filters_logs_on_the_other(
    cluster: Start, make_client: Any
) -> None:
    a, b = await cluster()
    c: HTTPClient = make_client(a.url)
    await c.initialize()
    await on(c, b).call_tool("add", {"a": 1, "b": 1})  # b caches the session first
    assert (await on(c, a).request("logging/setLevel", {"level": "error"})).status == 200
    quiet = await on(c, b).post(call(c.next_id(), "work", {"steps": 2}, token="q"))
    assert quiet.notifications("notifications/message") == []
    assert len(quiet.notifications("notifications/progress")) == 2
    assert (await on(c, b).request("logging/setLevel", {"level": "debug"})).status == 200
    loud = await on(c, a).post(call(c.next_id(), "work", {"steps": 2}, token="l"))
    assert len(loud.notifications("notifications/message")) == 2


async def test_an_answer_posted_to_the_other_node_reaches_the_waiting_tool(
    cluster: Start, make_client: Any
) -> None:
    a, b = await cluster()
    c: HTTPClient = make_client(a.url)
    await c.initialize(capabilities={"elicitation": {}})
    async with on(c, a).stream(call(c.next_id(), "ask")) as resp:
        events = sse_events(resp)
        while True:
            event = await next_event(events)
            if event.data and event.json.get("method") == "elicitation/create":
                asked = event.json
                break
        assert isinstance(asked["id"], str) and asked["id"].startswith("mcpkit-")
        answer = {
            "jsonrpc": "2.0",
            "id": asked["id"],
            "result": {"action": "accept", "content": {"name": "Ada"}},
        }
        sent = await on(c, b).post(answer)
        assert sent.status == 202
        while True:
            event = await next_event(events)
            if event.data and "result" in event.json:
                assert event.json["result"]["content"][0]["text"] == "hello Ada"
                break


async def test_a_cancellation_posted_to_the_other_node_stops_the_tool(
    cluster: Start, make_client: Any
) -> None:
    a, b = await cluster()
    c: HTTPClient = make_client(a.url)
    await c.initialize()
    rid = c.next_id()
    async with on(c, a).stream(call(rid, "steps", {"count": 50, "delay": 0.05}, token="s")) as resp:
        events = sse_events(resp)
        first = await next_event(events)
        while not first.data:
            first = await next_event(events)
        assert first.json["method"] == "notifications/progress"
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": "changed my mind"},
        }
        assert (await on(c, b).post(cancel)).status == 202
        async with asyncio.timeout(TIMEOUT):
            async for event in events:  # the stream ends without a response
                assert not (event.data and "result" in event.json), event
    await asyncio.sleep(0.1)
    assert 50 not in a.server.finished  # type: ignore[attr-defined]


async def test_list_changed_on_one_node_reaches_the_get_stream_on_the_other_once(
    cluster: Start, make_client: Any
) -> None:
    a, b, c3 = await cluster(3)
    c: HTTPClient = make_client(a.url)
    await c.initialize()
    await on(c, c3).call_tool("add", {"a": 1, "b": 1})  # cached on every node
    async with GetStream(on(c, b)) as get:
        await asyncio.sleep(0.2)  # the GET's node has joined the session's channel

        await a.server.tools.notify_list_changed()
        event = await get.next()
        assert event.json["method"] == "notifications/tools/list_changed"
        assert event.id is not None  # logged: resumable on any node
        # Once: a second notification is the next thing on the stream, not a duplicate.
        await a.server.resources.notify_list_changed()
        second = await get.next()
        assert second.json["method"] == "notifications/resources/list_changed"


async def test_a_subscription_made_on_one_node_is_notified_from_another(
    cluster: Start, make_client: Any
) -> None:
    a, b = await cluster()
    c: HTTPClient = make_client(a.url)
    await c.initialize()
    sub = await on(c, a).request("resources/subscribe", {"uri": "demo://greeting"})
    assert sub.status == 200
    async with GetStream(on(c, b)) as get:
        await asyncio.sleep(0.2)
        await a.server.resources.notify_updated("demo://other")  # nobody subscribed
        await a.server.resources.notify_updated("demo://greeting")
        event = await get.next()
        assert event.json == {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "demo://greeting"},
        }


async def test_a_stream_resumed_on_the_other_node_is_replayed_and_followed(
    cluster: Start, make_client: Any
) -> None:
    a, b = await cluster(retry_interval_ms=100)
    c: HTTPClient = make_client(a.url)
    await c.initialize()
    seen: list[dict[str, Any]] = []
    last_id = None
    async with on(c, a).stream(
        call(c.next_id(), "steps", {"count": 20, "delay": 0.05}, token="r")
    ) as resp:
        events = sse_events(resp)
        while len(seen) < 3:
            event = await next_event(events)
            if event.id is not None:
                last_id = event.id
            if event.data:
                seen.append(event.json)
    # The client dropped the stream after 3 progress events; it resumes on node b.
    assert last_id is not None
    async with GetStream(on(c, b), last_event_id=last_id) as get:
        while True:
            event = await get.next()
            if event.data:
                seen.append(event.json)
                if "result" in event.json:
                    break
    progress = [
        m["params"]["progress"] for m in seen if m.get("method") == "notifications/progress"
    ]
    assert progress == list(range(1, 21))  # each once, in order
    assert seen[-1]["result"]["content"][0]["text"] == "20 steps"


async def test_a_resumed_stream_whose_node_died_ends_with_an_error(
    cluster: Start, make_client: Any
) -> None:
    a, b = await cluster()
    c: HTTPClient = make_client(a.url)
    await c.initialize()
    rid = c.next_id()
    last_id = None
    async with on(c, a).stream(call(rid, "sleepy", {"seconds": 30}, token="z")) as resp:
        events = sse_events(resp)
        while last_id is None:
            event = await next_event(events)
            if event.data:
                last_id = event.id
    # Node a "dies": it leaves the bus (its liveness key goes) and its handler stops.
    app = next(iter(a.server.sessions())).standalone.settings  # type: ignore[attr-defined]
    await app.cluster.aclose()
    for session in a.server.sessions():
        session.close()
    async with GetStream(on(c, b), last_event_id=last_id) as get:
        event = await get.next()
        while not event.data:
            event = await get.next()
    assert event.json["id"] == rid
    assert event.json["error"]["code"] == -32603
    assert event.json["error"]["data"] == {"node": a.store.bus.node_id}
    assert orjson.dumps(event.json)  # a plain JSON-RPC error response


async def test_a_resumed_stream_outlives_its_node_reconnecting_to_redis(
    cluster: Start, make_client: Any
) -> None:
    # Liveness counts a node's pub/sub connection (issue 18 item 9): while node a gets a
    # new one (0.5 s after losing it) it looks dead, and the follower must wait for a
    # second check before answering for it.
    a, b = await cluster()
    c: HTTPClient = make_client(a.url)
    await c.initialize()
    last_id = None
    async with on(c, a).stream(call(c.next_id(), "sleepy", {"seconds": 2.5}, token="s")) as resp:
        events = sse_events(resp)
        while last_id is None:
            event = await next_event(events)
            if event.data:
                last_id = event.id
    pubsub = a.store.bus._pubsub
    assert pubsub is not None and pubsub.connection is not None
    host, port = pubsub.connection._writer.get_extra_info("sockname")[:2]  # type: ignore[union-attr]
    raw = Redis.from_url(a.store.url)
    try:
        await raw.client_kill_filter(_type="pubsub", addr=f"{host}:{port}")
    finally:
        await raw.aclose()
    assert await b.store.bus.node_alive(a.store.bus.node_id) is False
    async with GetStream(on(c, b), last_event_id=last_id) as get:
        event = await get.next()
        while not event.data or "method" in event.json:
            event = await get.next()
    assert event.json["result"]["content"][0]["text"] == "slept", event.json
    assert await b.store.bus.node_alive(a.store.bus.node_id) is True


async def test_a_2026_round_lands_on_the_other_node_without_configured_keys(
    cluster: Start, http: httpx.AsyncClient
) -> None:
    # No request_state_keys: the nodes sign with the cluster's own key, kept in Redis.
    a, b = await cluster()
    msg = request("tools/call", {"name": "ask", "arguments": {}})
    msg["params"]["_meta"][CAPS] = {"elicitation": {}}
    first = (await post(http, a.url, msg)).result
    assert first["resultType"] == "input_required"
    msg["id"] = 2
    msg["params"]["requestState"] = first["requestState"]
    msg["params"]["inputResponses"] = {
        "elicitation": {"action": "accept", "content": {"name": "Bo"}}
    }
    assert (await post(http, b.url, msg)).result["content"][0]["text"] == "hello Bo"
    refused = await post(http, a.url, msg)  # single use, whichever node sees it again
    assert refused.error["code"] == -32602 and "already used" in refused.error["message"]


async def test_a_2026_listen_stream_gets_a_change_raised_on_the_other_node(
    cluster: Start, http: httpx.AsyncClient
) -> None:
    a, b = await cluster()
    listen = request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, 7)
    async with http.stream(
        "POST", a.url, content=orjson.dumps(listen), headers=headers_for(listen)
    ) as resp:
        events = sse_events(resp)
        ack = await next_event(events)
        while not ack.data:
            ack = await next_event(events)
        assert ack.json["method"] == "notifications/subscriptions/acknowledged"
        await b.server.tools.notify_list_changed()
        event = await next_event(events)
        while not event.data:
            event = await next_event(events)
        assert event.json["method"] == "notifications/tools/list_changed"


async def test_legacy_sse_posts_reaching_another_node_are_forwarded_to_the_stream(
    serve_app: Any, http: httpx.AsyncClient, redis_url: str
) -> None:
    # A 2024-11-05 session lives with its stream on one node; its POSTs may land anywhere.
    prefix = f"l-{uuid4().hex[:8]}:"
    bases = []
    for _ in range(2):
        server = demo_server(store=RedisStore(redis_url, prefix=prefix))
        bases.append(await serve_app(SSEApp(server)))
    async with connect(http, bases[0]) as c:
        node = c.endpoint.partition("sessionId=")[2].partition(".")[0]
        assert len(node) == 8  # the session id names the node holding the stream
        c.base = bases[1]  # every POST goes to the other node from now on
        answer = await c.initialize(capabilities={"elicitation": {}}, revision="2025-11-25")
        assert answer["result"]["serverInfo"]["name"] == "http-demo"
        await c.post(call(6, "ask"))
        c._methods[6] = "tools/call"
        asked = await c.receive()
        assert asked.get("method") == "elicitation/create", asked
        reply = {
            "jsonrpc": "2.0",
            "id": asked["id"],
            "result": {"action": "accept", "content": {"name": "Lin"}},
        }
        assert (await c.post(reply)).status_code == 202
        final = await c.receive()
        assert final["id"] == 6 and final["result"]["content"][0]["text"] == "hello Lin"
        # A session no node holds is unknown: 404 from the node that cannot reach it.
        lost = await http.post(
            bases[1] + "/message?sessionId=zzzzzzzz.0123",
            content=b'{"jsonrpc":"2.0","method":"x"}',
            headers={"content-type": "application/json"},
        )
        assert lost.status_code == 404


async def test_a_node_drops_its_copy_of_a_session_whose_record_is_gone(
    cluster: Start, make_client: Any, redis_url: str
) -> None:
    # The record expired (or another node ended it and the message was lost): the next
    # ttl refresh from a node that still caches the session finds nothing and ends its copy.
    a, b = await cluster(session_idle_timeout=2.0)  # refreshed every 0.5 s at most
    c: HTTPClient = make_client(a.url)
    await c.initialize()
    assert (await on(c, b).call_tool("add", {"a": 1, "b": 1})).status == 200
    raw = Redis.from_url(redis_url)
    try:
        assert await raw.delete(b.store.prefix + "session:" + str(c.session_id)) == 1
    finally:
        await raw.aclose()
    await asyncio.sleep(0.6)
    assert (await on(c, b).call_tool("add", {"a": 1, "b": 1})).status == 200  # still cached
    async with asyncio.timeout(TIMEOUT):
        while (await on(c, b).call_tool("add", {"a": 1, "b": 1})).status != 404:
            await asyncio.sleep(0.05)


async def test_the_shared_request_state_key_survives_a_redis_that_lost_its_data(
    serve_app: Any, http: httpx.AsyncClient, own_redis: RedisServer
) -> None:
    # Node a signs with the cluster's key; Redis restarts empty; a node started after that
    # must still open a's requestState: a re-offers its key once its bus is back.
    prefix = f"k-{uuid4().hex[:8]}:"
    a_store = RedisStore(own_redis.url, prefix=prefix, connect_timeout=0.5, timeout=0.5)
    a_url = await serve_app(demo_server(store=a_store).http_app()) + "/mcp"
    msg = request("tools/call", {"name": "ask", "arguments": {}})
    msg["params"]["_meta"][CAPS] = {"elicitation": {}}
    assert (await post(http, a_url, msg)).result["resultType"] == "input_required"
    own_redis.stop()
    own_redis.start()
    raw = Redis.from_url(own_redis.url)
    try:
        async with asyncio.timeout(TIMEOUT):  # a's bus reconnects and offers its key again
            while not await raw.exists(prefix + "rsk"):
                await asyncio.sleep(0.05)
    finally:
        await raw.aclose()
    first = (await post(http, a_url, msg)).result
    b_url = await serve_app(demo_server(store=RedisStore(own_redis.url, prefix=prefix)).http_app())
    msg["id"] = 2
    msg["params"]["requestState"] = first["requestState"]
    msg["params"]["inputResponses"] = {
        "elicitation": {"action": "accept", "content": {"name": "Al"}}
    }
    assert (await post(http, b_url + "/mcp", msg)).result["content"][0]["text"] == "hello Al"


async def test_a_session_that_idles_out_takes_its_event_log_with_it(
    cluster: Start, make_client: Any, redis_url: str
) -> None:
    # No node ends a session that idles out (each drops its cache entry; the record's ttl
    # ends it), so none deletes its event log: a node caps the log's ttl at the record's,
    # or the events would stay event_ttl (1 h) after the session is gone.
    from redis.asyncio import Redis

    a, b = await cluster(session_idle_timeout=1.0)
    record_ttl = 1.0 + 1.0 / 4
    assert a.store.events.ttl == record_ttl
    c: HTTPClient = make_client(a.url)
    await c.initialize()
    called = await on(c, b).call_tool("add", {"a": 1, "b": 1})
    assert called.events[-1].id  # the answer went to the session's log
    raw = Redis.from_url(redis_url)
    try:
        log_key = f"{a.store.prefix}events:{c.session_id}"
        assert 0 < await raw.pttl(log_key) <= record_ttl * 1000
        async with asyncio.timeout(record_ttl + 3):
            while await raw.exists(log_key, f"{a.store.prefix}session:{c.session_id}"):
                await asyncio.sleep(0.05)
    finally:
        await raw.aclose()
    assert (await on(c, a).request("tools/list")).status == 404
