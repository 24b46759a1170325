"""Streamable HTTP SSE streams: the standalone GET stream, resumability, SEP-1699 polling."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from mcpkit.stores import MemoryEventStore
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.transports.conftest import (
    TIMEOUT,
    Event,
    HTTPClient,
    demo_server,
    next_event,
    read_sse,
    sse_events,
)


def call(
    rid: int, name: str, arguments: dict[str, Any] | None = None, token: str | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def until(predicate: Any) -> None:
    async with asyncio.timeout(TIMEOUT):
        while not predicate():
            await asyncio.sleep(0.01)


class GetStream:
    """An open standalone (or resumed) GET stream."""

    def __init__(self, client: HTTPClient, last_event_id: str | None = None) -> None:
        self.client = client
        self.headers = client.headers("text/event-stream")
        if last_event_id is not None:
            self.headers["last-event-id"] = last_event_id
        self._cm: Any = None
        self.response: httpx.Response
        self.events: AsyncIterator[Event]

    async def __aenter__(self) -> GetStream:
        self._cm = self.client.http.stream("GET", self.client.url, headers=self.headers)
        self.response = await self._cm.__aenter__()
        self.events = sse_events(self.response)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._cm.__aexit__(*exc)

    async def next(self) -> Event:
        event = await next_event(self.events)
        if event.data:
            self.client.validate(event.json)
        return event


@pytest.fixture
async def setup(serve_app: Any, make_client: Any) -> Any:
    async def make(**options: Any) -> tuple[Any, StreamableHTTPApp, str]:
        server = demo_server()
        app = StreamableHTTPApp(server, **options)
        return server, app, await serve_app(app) + "/mcp"

    return make


# -- the standalone GET stream -------------------------------------------------------------------------


async def test_get_stream_gets_list_changed_and_only_subscribed_resource_updates(
    setup: Any, make_client: Any
) -> None:
    server, app, url = await setup()
    a: HTTPClient = make_client(url)
    b: HTTPClient = make_client(url)
    await a.initialize()
    await b.initialize()
    assert (await a.request("resources/subscribe", {"uri": "demo://greeting"})).status == 200
    async with GetStream(a) as ga, GetStream(b) as gb:
        assert ga.response.status_code == 200
        assert ga.response.headers["content-type"] == "text/event-stream"
        await until(lambda: all(e.get_queue is not None for e in app.sessions.values()))
        await server.tools.notify_list_changed()
        await server.resources.notify_updated("demo://greeting")
        await server.prompts.notify_list_changed()  # a marker: what B gets right after list_changed
        got_a = [(await ga.next()).json["method"] for _ in range(3)]
        got_b = [(await gb.next()).json["method"] for _ in range(2)]
    assert got_a == [
        "notifications/tools/list_changed",
        "notifications/resources/updated",
        "notifications/prompts/list_changed",
    ]
    assert got_b == ["notifications/tools/list_changed", "notifications/prompts/list_changed"]


async def test_second_get_stream_is_409_and_a_new_one_may_open_after(
    setup: Any, make_client: Any
) -> None:
    _, app, url = await setup()
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with GetStream(c) as first:
        assert first.response.status_code == 200
        await until(lambda: next(iter(app.sessions.values())).get_queue is not None)
        second = await c.http.get(url, headers=c.headers("text/event-stream"))
        assert second.status_code == 409
    entry = next(iter(app.sessions.values()))
    await until(lambda: entry.get_queue is None)  # the server noticed the disconnect
    async with GetStream(c) as third:
        assert third.response.status_code == 200


async def test_get_stream_sends_keepalive_pings(setup: Any, make_client: Any) -> None:
    _, _, url = await setup(keepalive_interval=0.05)
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with c.http.stream("GET", url, headers=c.headers("text/event-stream")) as resp:
        lines = resp.aiter_lines()
        async with asyncio.timeout(TIMEOUT):
            assert await anext(lines) == ": ping"


async def test_delete_ends_the_get_stream(setup: Any, make_client: Any) -> None:
    _, app, url = await setup()
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with GetStream(c) as g:
        await until(lambda: next(iter(app.sessions.values())).get_queue is not None)
        assert (await c.delete()).status_code == 204
        async with asyncio.timeout(TIMEOUT):
            remaining = [e async for e in g.events]
    assert remaining == []


async def test_related_messages_of_json_mode_go_to_the_get_stream(
    setup: Any, make_client: Any
) -> None:
    _, app, url = await setup(json_response=True)
    c: HTTPClient = make_client(url)
    await c.initialize(capabilities={"elicitation": {}})
    async with GetStream(c) as g:
        await until(lambda: next(iter(app.sessions.values())).get_queue is not None)
        call_task = asyncio.ensure_future(c.post(call(5, "ask")))
        request = (await g.next()).json
        assert request["method"] == "elicitation/create"
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}}
        assert (await c.post(answer)).status == 202
        async with asyncio.timeout(TIMEOUT):
            ex = await call_task
    assert ex.headers["content-type"] == "application/json"
    assert ex.result["content"][0]["text"] == "no name (decline)"


async def test_json_mode_request_without_a_get_stream_fails_fast(
    setup: Any, make_client: Any
) -> None:
    """No GET stream and no event store: the elicitation cannot reach the client.

    The tool must fail at once with a clear message, not wait out request_timeout.
    """
    _, _, url = await setup(json_response=True)
    c: HTTPClient = make_client(url)
    await c.initialize(capabilities={"elicitation": {}})
    async with asyncio.timeout(5):
        ex = await c.post(call(6, "ask"))
    assert ex.result["isError"] is True
    assert "GET stream" in ex.result["content"][0]["text"]


# -- disconnection is not cancellation ------------------------------------------------------------------


async def test_disconnecting_from_a_post_stream_does_not_cancel_the_tool(
    setup: Any, make_client: Any
) -> None:
    server, _, url = await setup()
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with c.stream(call(3, "steps", {"count": 3, "delay": 0.05}, token="t")) as resp:
        first = await next_event(sse_events(resp))
        assert first.json["method"] == "notifications/progress"
    # the connection is gone; the tool runs to its end anyway
    await until(lambda: server.finished == [3])


# -- resumability --------------------------------------------------------------------------------------


async def test_every_event_has_an_id_and_a_cut_stream_is_replayed_and_continued(
    setup: Any, make_client: Any
) -> None:
    server, _, url = await setup(event_store=MemoryEventStore())
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with c.stream(call(3, "steps", {"count": 4, "delay": 0.1}, token="t")) as resp:
        events = sse_events(resp)
        priming = await next_event(events)
        assert priming.id and not priming.data  # 2025-11-25: priming event first
        first = await next_event(events)
        assert first.id and first.json["params"]["progress"] == 1
    # cut after step 1; resume while the tool is still running
    async with GetStream(c, last_event_id=first.id) as g:
        assert g.response.status_code == 200
        async with asyncio.timeout(TIMEOUT):
            rest = [e async for e in g.events]
    assert all(e.id for e in rest)
    messages = [e.json for e in rest]
    assert [m["params"]["progress"] for m in messages[:-1]] == [2, 3, 4]
    assert messages[-1]["id"] == 3 and messages[-1]["result"]["content"][0]["text"] == "4 steps"
    assert server.finished == [4]


async def test_resume_after_the_request_finished_replays_the_response(
    setup: Any, make_client: Any
) -> None:
    server, _, url = await setup(event_store=MemoryEventStore())
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with c.stream(call(4, "steps", {"count": 2, "delay": 0.05}, token="t")) as resp:
        priming = await next_event(sse_events(resp))
    await until(lambda: server.finished == [2])
    async with GetStream(c, last_event_id=priming.id) as g:
        async with asyncio.timeout(TIMEOUT):
            replayed = [e.json for e in [e async for e in g.events]]
    assert [m.get("method") for m in replayed] == ["notifications/progress"] * 2 + [None]
    assert replayed[-1]["result"]["content"][0]["text"] == "2 steps"


class BytesEventStore(MemoryEventStore):
    """A memory store that also takes serialised messages (``store_event_bytes``), keeping
    what it was given of each kind."""

    def __init__(self) -> None:
        super().__init__()
        self.given_bytes: list[tuple[str, bytes]] = []
        self.given_messages: list[dict[str, Any] | None] = []

    async def store_event(self, stream_id: str, message: dict[str, Any] | None) -> str:
        self.given_messages.append(message)
        return await super().store_event(stream_id, message)

    async def store_event_bytes(self, stream_id: str, data: bytes) -> str:
        self.given_bytes.append((stream_id, bytes(data)))
        return await super().store_event(stream_id, orjson.loads(data))


async def test_a_store_with_store_event_bytes_gets_the_bytes_sent_on_the_wire(
    setup: Any, make_client: Any
) -> None:
    store = BytesEventStore()
    _, _, url = await setup(event_store=store)
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with c.stream(call(5, "steps", {"count": 2, "delay": 0.01}, token="t")) as resp:
        async with asyncio.timeout(TIMEOUT):
            events = [e async for e in sse_events(resp)]
    priming, *sent = events
    assert not priming.data and len(sent) == 3  # two progress notifications, the result
    # Each message was serialised once: the store got the very bytes of the SSE data line.
    assert [data.decode() for _, data in store.given_bytes] == [e.data for e in sent]
    assert store.given_messages == [None]  # only the priming event came as a message
    async with GetStream(c, last_event_id=priming.id) as g:  # and they replay
        async with asyncio.timeout(TIMEOUT):
            assert [e.data async for e in g.events] == [e.data for e in sent]


async def test_sep_1699_priming_retry_server_close_and_replay_of_the_result(
    setup: Any, make_client: Any
) -> None:
    _, _, url = await setup(event_store=MemoryEventStore(), retry_interval_ms=50)
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with c.stream(call(9, "reconnect")) as resp:
        assert resp.headers["content-type"] == "text/event-stream"
        events = await read_sse(resp, until_response=False)  # ends when the server closes it
    priming, log_event, *tail = events
    assert priming.id and priming.data == "" and priming.retry == 50
    assert log_event.json["params"]["data"] == "before close"
    assert [e.retry for e in tail] == [50]  # the retry hint sent before the close
    assert not any(e.has_data for e in tail)  # retry only, no data
    async with GetStream(c, last_event_id=log_event.id) as g:
        async with asyncio.timeout(TIMEOUT):
            resumed = [e async for e in g.events]
    messages = [e.json for e in resumed]
    assert messages[0]["params"]["data"] == "after close"
    assert messages[-1] == {
        "jsonrpc": "2.0",
        "id": 9,
        "result": {"content": [{"type": "text", "text": "reconnected"}]},
    }


async def test_no_priming_and_no_close_before_2025_11_25(setup: Any, make_client: Any) -> None:
    _, _, url = await setup(event_store=MemoryEventStore(), retry_interval_ms=50)
    c: HTTPClient = make_client(url, protocol_version="2025-06-18")
    await c.initialize()
    ex = await c.post(call(9, "reconnect"))
    assert all(e.data for e in ex.events)  # no priming event
    assert all(e.id for e in ex.events)  # ids still, the stream is resumable
    assert ex.result["content"][0]["text"] == "reconnected"  # close_sse_stream was a no-op


async def test_close_sse_stream_is_a_no_op_without_an_event_store(
    setup: Any, make_client: Any
) -> None:
    _, _, url = await setup(retry_interval_ms=50)
    c: HTTPClient = make_client(url)
    await c.initialize()
    ex = await c.post(call(9, "reconnect"))
    assert all(e.id is None for e in ex.events)
    assert [m.get("method") for m in ex.messages] == ["notifications/message"] * 2 + [None]
    assert ex.result["content"][0]["text"] == "reconnected"


async def test_get_stream_missed_messages_are_replayed_with_last_event_id(
    setup: Any, make_client: Any
) -> None:
    server, app, url = await setup(event_store=MemoryEventStore())
    c: HTTPClient = make_client(url)
    await c.initialize()
    entry = next(iter(app.sessions.values()))
    async with GetStream(c) as g:
        await until(lambda: entry.get_queue is not None)
        await server.tools.notify_list_changed()
        seen = await g.next()
    assert seen.id
    await until(lambda: entry.get_queue is None)
    await server.prompts.notify_list_changed()  # sent while nobody listens: kept
    async with GetStream(c, last_event_id=seen.id) as g2:
        missed = await g2.next()
        assert missed.json["method"] == "notifications/prompts/list_changed"
        await server.resources.notify_list_changed()  # and the stream goes on live
        live = await g2.next()
        assert live.json["method"] == "notifications/resources/list_changed"


async def test_last_event_id_of_another_session_is_not_replayed(
    setup: Any, make_client: Any
) -> None:
    server, app, url = await setup(event_store=MemoryEventStore())
    a: HTTPClient = make_client(url)
    b: HTTPClient = make_client(url)
    await a.initialize()
    await b.initialize()
    async with a.stream(call(3, "steps", {"count": 2, "delay": 0}, token="t")) as resp:
        priming = await next_event(sse_events(resp))
    await until(lambda: server.finished == [2])
    entry_b = app.sessions[str(b.session_id)]
    for bogus in (priming.id, "garbage", "no-such-stream#1"):
        async with GetStream(b, last_event_id=bogus) as g:  # treated as a plain GET
            assert g.response.status_code == 200
            await until(lambda: entry_b.get_queue is not None)
            await entry_b.session.notify("notifications/tools/list_changed")
            first = await g.next()
            assert first.json["method"] == "notifications/tools/list_changed"
        await until(lambda: entry_b.get_queue is None)


# -- keep-alive and cancellation on POST streams --------------------------------------------------------


async def test_a_quiet_post_stream_gets_keepalive_pings(setup: Any, make_client: Any) -> None:
    _, _, url = await setup(keepalive_interval=0.05)
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with c.stream(call(3, "sleepy", {"seconds": 0.4})) as resp:
        async with asyncio.timeout(TIMEOUT):
            lines = [line async for line in resp.aiter_lines()]
    assert lines.count(": ping") >= 2
    assert lines[-2].startswith("data: ") and '"slept"' in lines[-2]


async def test_a_cancelled_request_ends_its_stream_without_a_response(
    setup: Any, make_client: Any
) -> None:
    server, _, url = await setup()
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with c.stream(call(21, "steps", {"count": 50, "delay": 0.05}, token="t")) as resp:
        events = sse_events(resp)
        assert (await next_event(events)).json["method"] == "notifications/progress"
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 21},
        }
        assert (await c.post(cancel)).status == 202
        async with asyncio.timeout(TIMEOUT):
            rest = [e.json async for e in events]
    assert all("method" in m for m in rest)  # progress only: no response after a cancel
    assert server.finished == []


async def test_a_cancelled_json_request_is_answered_202_without_body(
    setup: Any, make_client: Any
) -> None:
    _, _, url = await setup(json_response=True)
    c: HTTPClient = make_client(url)
    await c.initialize()
    pending = asyncio.ensure_future(c.post(call(22, "sleepy", {"seconds": 5})))
    await asyncio.sleep(0.2)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 22}}
    assert (await c.post(cancel)).status == 202
    async with asyncio.timeout(TIMEOUT):
        ex = await pending
    assert ex.status == 202 and ex.messages == []


async def test_delete_during_a_request_ends_its_stream(setup: Any, make_client: Any) -> None:
    _, app, url = await setup()
    c: HTTPClient = make_client(url)
    await c.initialize()
    async with c.stream(call(23, "sleepy", {"seconds": 5}, token="t")) as resp:
        events = sse_events(resp)
        assert (await next_event(events)).json["method"] == "notifications/progress"
        assert (await c.delete()).status_code == 204
        async with asyncio.timeout(TIMEOUT):
            rest = [e async for e in events]
    assert rest == []
    assert len(app) == 0


async def test_resuming_the_get_stream_takes_over_a_stale_connection(
    setup: Any, make_client: Any
) -> None:
    server, app, url = await setup(event_store=MemoryEventStore())
    c: HTTPClient = make_client(url)
    await c.initialize()
    entry = next(iter(app.sessions.values()))
    async with GetStream(c) as old:
        await until(lambda: entry.get_queue is not None)
        await server.tools.notify_list_changed()
        seen = await old.next()
        # the server still thinks `old` is open; a resume with its last id wins
        async with GetStream(c, last_event_id=seen.id) as new:
            assert new.response.status_code == 200
            async with asyncio.timeout(TIMEOUT):
                assert [e async for e in old.events] == []  # the old connection was ended
            await server.prompts.notify_list_changed()
            assert (await new.next()).json["method"] == "notifications/prompts/list_changed"
