"""The round-robin proxy of the multi-node tests, against backends written here.

Backends are small ASGI apps on uvicorn (real sockets), or raw asyncio servers where
the framing matters (a body delimited by the close, a backend dying mid-stream). Each
test checks one promise of :mod:`tests.cluster.rr_proxy` the cluster tests rely on.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson

from tests.cluster.rr_proxy import Record, RoundRobinProxy, proxy_in_thread
from tests.redis_server import free_port
from tests.transports.conftest import run_app

TIMEOUT = 5.0


class Backend:
    """An ASGI app that says who it is, echoes headers, streams SSE and reads uploads."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.release = asyncio.Event()  # /gate sends its second event once set
        self.disconnected = asyncio.Event()  # /sse saw its client leave
        self.first_chunk = asyncio.Event()  # /upload got a first piece of the body
        self.sent = 0  # events /sse sent

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path = scope["path"]
        if path == "/sse":
            await self.sse(receive, send)
        elif path == "/gate":
            await self.gate(send)
        elif path == "/upload":
            await self.upload(receive, send)
        elif path == "/hang":  # no answer until the client leaves
            while (await receive())["type"] != "http.disconnect":
                pass
            self.disconnected.set()
        else:
            headers = {k.decode(): v.decode() for k, v in scope["headers"]}
            extra = [(b"mcp-session-id", f"s-{self.index}".encode())] if path == "/session" else []
            await self.json(send, {"backend": self.index, "headers": headers}, extra)

    async def json(self, send: Any, body: Any, extra: list[tuple[bytes, bytes]]) -> None:
        headers = [(b"content-type", b"application/json"), *extra]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": orjson.dumps(body)})

    async def start_sse(self, send: Any) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})

    async def sse(self, receive: Any, send: Any) -> None:
        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            self.disconnected.set()

        watcher = asyncio.ensure_future(watch())
        await self.start_sse(send)
        try:
            while not self.disconnected.is_set() and self.sent < 500:
                self.sent += 1
                body = f"data: {self.sent}\n\n".encode()
                await send({"type": "http.response.body", "body": body, "more_body": True})
                await asyncio.sleep(0.02)
            await send({"type": "http.response.body", "body": b""})
        finally:
            watcher.cancel()

    async def gate(self, send: Any) -> None:
        await self.start_sse(send)
        await send({"type": "http.response.body", "body": b"data: first\n\n", "more_body": True})
        await asyncio.wait_for(self.release.wait(), TIMEOUT)
        await send({"type": "http.response.body", "body": b"data: second\n\n"})

    async def upload(self, receive: Any, send: Any) -> None:
        total = chunks = 0
        while True:
            message = await receive()
            total += len(message.get("body", b""))
            chunks += 1
            self.first_chunk.set()
            if not message.get("more_body"):
                break
        await self.json(send, {"backend": self.index, "bytes": total}, [])


@contextlib.asynccontextmanager
async def backends(n: int) -> AsyncIterator[tuple[list[Backend], list[str]]]:
    apps = [Backend(i) for i in range(n)]
    async with contextlib.AsyncExitStack() as stack:
        urls = [await stack.enter_async_context(run_app(app)) for app in apps]
        yield apps, urls


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens: connection refused


async def data_lines(response: httpx.Response) -> AsyncIterator[str]:
    async for line in response.aiter_lines():
        if line.startswith("data: "):
            yield line[len("data: ") :]


async def test_each_request_goes_to_the_next_backend_even_on_one_keep_alive_connection() -> None:
    async with (
        backends(3) as (_, urls),
        RoundRobinProxy(urls) as proxy,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
    ):
        served = [(await http.get(proxy.url + "/who")).json()["backend"] for _ in range(7)]
        assert served == [0, 1, 2, 0, 1, 2, 0]
        assert proxy.log == [Record("GET", "/who", None, i, 200) for i in served]
        assert proxy.served() == served


async def test_concurrent_requests_take_turns_too() -> None:
    async with (
        backends(3) as (_, urls),
        RoundRobinProxy(urls) as proxy,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
    ):
        answers = await asyncio.gather(*(http.get(proxy.url + "/who") for _ in range(9)))
        served = sorted(a.json()["backend"] for a in answers)
        assert served == [0, 0, 0, 1, 1, 1, 2, 2, 2]
        # The log is in the order the requests arrived, each on the next backend.
        assert [r.backend for r in proxy.log] == [0, 1, 2] * 3


async def test_headers_pass_through_and_host_names_the_backend() -> None:
    sent = {
        "Mcp-Session-Id": "abc",
        "Last-Event-ID": "abc/1#7",
        "MCP-Protocol-Version": "2025-11-25",
        "Authorization": "Bearer t0k3n",
    }
    async with (
        backends(2) as (_, urls),
        RoundRobinProxy(urls) as proxy,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
    ):
        for index in (0, 1):
            got = (await http.get(proxy.url + "/who?x=1", headers=sent)).json()
            assert got["backend"] == index
            for name, value in sent.items():
                assert got["headers"][name.lower()] == value
            assert got["headers"]["host"] == urls[index].removeprefix("http://")
            assert got["headers"]["connection"] == "close"  # one upstream connection each
        assert [(r.path, r.session_id) for r in proxy.log] == [("/who?x=1", "abc")] * 2


async def test_an_sse_response_streams_through_event_by_event() -> None:
    async with (
        backends(1) as (apps, urls),
        RoundRobinProxy(urls) as proxy,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
    ):
        async with asyncio.timeout(TIMEOUT), http.stream("GET", proxy.url + "/gate") as resp:
            lines = data_lines(resp)
            # The backend holds its second event until released: the first one can only
            # arrive now if the proxy did not wait for the end of the response.
            assert await anext(lines) == "first"
            assert proxy.log == [Record("GET", "/gate", None, 0, 200)]  # logged at the head
            apps[0].release.set()
            assert [line async for line in lines] == ["second"]


async def raw_backend(
    handler: Any,
) -> tuple[asyncio.Server, str]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def test_a_body_delimited_by_the_close_streams_through() -> None:
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        # No Content-Length, no chunking: the body ends when the connection closes.
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: one\n\n")
        await writer.drain()
        await asyncio.wait_for(release.wait(), TIMEOUT)
        writer.write(b"data: two\n\n")
        writer.close()

    server, url = await raw_backend(handler)
    async with server, RoundRobinProxy([url]) as proxy, httpx.AsyncClient(timeout=TIMEOUT) as http:
        async with asyncio.timeout(TIMEOUT), http.stream("GET", proxy.url + "/x") as resp:
            assert resp.headers["connection"] == "close"  # the client must not reuse it
            lines = data_lines(resp)
            assert await anext(lines) == "one"
            release.set()
            assert [line async for line in lines] == ["two"]


async def test_a_backend_dying_mid_stream_cuts_the_client_stream() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\nb\r\ndata: one\n\n\r\n"
        )
        await writer.drain()
        await asyncio.sleep(0.1)
        writer.transport.abort()  # a killed node: no final chunk

    server, url = await raw_backend(handler)
    async with server, RoundRobinProxy([url]) as proxy, httpx.AsyncClient(timeout=TIMEOUT) as http:
        received: list[str] = []
        async with asyncio.timeout(TIMEOUT), http.stream("GET", proxy.url + "/x") as resp:
            try:
                async for line in data_lines(resp):
                    received.append(line)
            except httpx.RemoteProtocolError:
                pass  # the cut is an error, as without a proxy
            else:
                raise AssertionError("a stream cut by the backend ended cleanly at the client")
        assert received == ["one"]


async def test_a_request_body_streams_through() -> None:
    async with (
        backends(1) as (apps, urls),
        RoundRobinProxy(urls) as proxy,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
    ):

        async def body() -> AsyncIterator[bytes]:
            yield b"x" * 1000
            # The backend sees the first piece before the client sends the rest.
            await asyncio.wait_for(apps[0].first_chunk.wait(), TIMEOUT)
            yield b"y" * 500

        resp = await http.post(proxy.url + "/upload", content=body())  # chunked
        assert resp.json() == {"backend": 0, "bytes": 1500}
        fixed = await http.post(proxy.url + "/upload", content=b"z" * 70000)  # Content-Length
        assert fixed.json() == {"backend": 0, "bytes": 70000}
        assert [r.method for r in proxy.log] == ["POST", "POST"]


async def test_the_json_rpc_method_of_a_request_is_logged() -> None:
    async with (
        backends(1) as (_, urls),
        RoundRobinProxy(urls) as proxy,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
    ):
        await http.post(proxy.url + "/upload", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        await http.post(proxy.url + "/upload", json={"jsonrpc": "2.0", "id": 1, "result": {}})
        assert [r.rpc for r in proxy.log] == ["ping", None]


async def test_a_client_disconnect_reaches_the_backend() -> None:
    async with (
        backends(1) as (apps, urls),
        RoundRobinProxy(urls) as proxy,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
    ):
        async with asyncio.timeout(TIMEOUT):
            async with http.stream("GET", proxy.url + "/sse") as resp:
                lines = data_lines(resp)
                assert [await anext(lines), await anext(lines)] == ["1", "2"]
            # The client left: the backend's request sees http.disconnect soon after.
            await asyncio.wait_for(apps[0].disconnected.wait(), 2)
        sent = apps[0].sent
        await asyncio.sleep(0.1)
        assert apps[0].sent == sent < 100  # and stops sending
        assert proxy.disconnects == 1


async def test_a_client_leaving_before_the_answer_reaches_the_backend() -> None:
    # A cancelled 2026-07-28 call: the node answers with one JSON body at the end, so the
    # client leaves before any response head; the node must still see the disconnect.
    async with (
        backends(1) as (apps, urls),
        RoundRobinProxy(urls) as proxy,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
    ):
        request = asyncio.ensure_future(http.post(proxy.url + "/hang", content=b"{}"))
        async with asyncio.timeout(TIMEOUT):
            while not proxy.log:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
            request.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await request
            await asyncio.wait_for(apps[0].disconnected.wait(), 2)
        assert proxy.disconnects == 1 and proxy.log[0].status == 0


async def test_a_dead_backend_is_skipped_and_no_live_one_gives_502() -> None:
    async with backends(2) as (_, (a, b)), httpx.AsyncClient(timeout=TIMEOUT) as http:
        async with RoundRobinProxy([a, dead_url(), b]) as proxy:
            served = [(await http.get(proxy.url + "/who")).json()["backend"] for _ in range(4)]
            assert served == [0, 1, 0, 1]  # the apps' own indexes: slots 0 and 2 of the proxy
            assert proxy.served() == [0, 2, 0, 2]
            proxy.pin(1)  # pinned to a dead backend: 502, nothing else tried
            assert (await http.get(proxy.url + "/who")).status_code == 502
        async with RoundRobinProxy([dead_url(), dead_url()]) as proxy:
            resp = await http.post(proxy.url + "/mcp", content=b"{}")
            assert resp.status_code == 502
            assert proxy.log == [Record("POST", "/mcp", None, None, 502)]


async def test_pin_and_sticky_sessions() -> None:
    async with (
        backends(3) as (_, urls),
        RoundRobinProxy(urls) as proxy,
        httpx.AsyncClient(timeout=TIMEOUT) as http,
    ):
        proxy.pin(2)
        assert {(await http.get(proxy.url + "/who")).json()["backend"] for _ in range(3)} == {2}
        proxy.sticky()
        # Each session id is issued by the backend the request landed on (round robin) ...
        issued = [(await http.get(proxy.url + "/session")).headers["mcp-session-id"] for _ in "ab"]
        assert issued == ["s-0", "s-1"]
        # ... and requests carrying it go back there, whatever the turn.
        for sid in ["s-1", "s-0", "s-1", "s-1"]:
            got = await http.get(proxy.url + "/who", headers={"Mcp-Session-Id": sid})
            assert got.json()["backend"] == int(sid[-1])
        assert (await http.get(proxy.url + "/who")).json()["backend"] == 2  # no id: the turn
        proxy.unpin()
        with_id = {"Mcp-Session-Id": "s-1"}
        seen = [(await http.get(proxy.url + "/who", headers=with_id)).json() for _ in "abc"]
        assert sorted(s["backend"] for s in seen) == [0, 1, 2]


async def test_the_proxy_runs_in_a_thread_for_blocking_clients() -> None:
    async with backends(2) as (_, urls):
        with proxy_in_thread(urls) as proxy:

            def blocking() -> list[int]:
                with httpx.Client(timeout=TIMEOUT) as http:
                    return [http.get(proxy.url + "/who").json()["backend"] for _ in range(4)]

            assert await asyncio.to_thread(blocking) == [0, 1, 0, 1]
            assert proxy.served() == [0, 1, 0, 1]
