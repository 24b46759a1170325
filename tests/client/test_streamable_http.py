"""The Streamable HTTP client transport against a real mcpkit server on uvicorn (127.0.0.1)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest

from mcpkit.client import Client
from mcpkit.client.transports.streamable_http import StreamableHTTPTransport
from mcpkit.errors import ConnectionClosed, PeerTimeout, RemoteError
from mcpkit.server.context import Context
from mcpkit.server.server import MCPServer
from mcpkit.stores import MemoryEventStore
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.client.conftest import Traffic
from tests.client.fixtures.demo_server import build_server
from tests.client.http_servers import Recorder, eventually, free_socket, read_body, serve

TIMEOUT = 10.0


def text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@pytest.fixture
def server() -> MCPServer:
    return build_server()


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "Paris"},
        "model": "m",
        "stopReason": "endTurn",
    }


SERVER_REQUESTS = {"sampling/createMessage", "elicitation/create", "roots/list"}


def _input_required(message: dict[str, Any]) -> bool:
    result = message.get("result")
    return isinstance(result, dict) and result.get("resultType") == "input_required"


# -- the basics -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_round_trips_with_sse_responses(
    server: MCPServer, traffic: Traffic, version: str
) -> None:
    async with (
        serve(server.http_app()) as url,
        Client(
            url=url,
            trace=traffic,
            timeout=TIMEOUT,
            protocol_version=version,
            sampling_handler=sample,
            elicitation_handler=lambda p: {"action": "accept", "content": {"name": "Ada"}},
            roots=["file:///w"],
        ) as client,
    ):
        assert client.server_info["name"] == "demo"
        assert client.protocol_version == version
        assert {t["name"] for t in await client.list_tools()} >= {"add", "hang"}
        assert text_of(await client.call_tool("add", {"a": 1, "b": 2})) == "3"
        # 2025-11-25: server requests arrive on the POST's SSE stream; answers go back as
        # POSTs. 2026-07-28: an input-required result; the retry carries the answers.
        assert text_of(await client.call_tool("ask_llm", {"question": "?"})) == "Paris"
        answer = await client.call_tool("ask_user")
        assert answer["structuredContent"]["content"]["age"] == 30
        assert text_of(await client.call_tool("roots")) == "file:///w"
        seen: list[Any] = []
        await client.call_tool("slow", {"steps": 3}, progress=lambda *a: seen.append(a))
        assert [s[0] for s in seen] == [1, 2, 3]
        results = await asyncio.gather(
            *(client.call_tool("echo", {"text": str(i)}) for i in range(20))
        )
        assert [text_of(r) for r in results] == [str(i) for i in range(20)]
        prompt = await client.get_prompt("review", {"code": "x"})
        assert prompt["messages"][0]["content"]["text"] == "Please review: x"
    asked = [m for m in traffic.received() if m.get("method") in SERVER_REQUESTS]
    rounds = [m for m in traffic.received() if _input_required(m)]
    if version == "2025-11-25":
        assert len(asked) == 3 and not rounds
    else:
        assert not asked and len(rounds) == 3


async def test_json_responses_and_the_standalone_stream(
    server: MCPServer, traffic: Traffic
) -> None:
    updated: list[str] = []
    async with (
        serve(server.http_app(json_response=True)) as url,
        Client(
            url=url,
            trace=traffic,
            timeout=TIMEOUT,
            sampling_handler=sample,
            on_resource_updated=updated.append,
        ) as client,
    ):
        assert text_of(await client.call_tool("add", {"a": 2, "b": 2})) == "4"
        await client.subscribe_resource("memo://greeting")
        # Unrelated notifications come on the GET stream the client opened by itself.
        await eventually(
            lambda: client.call_tool("touch", {"uri": "memo://greeting"}), lambda: bool(updated)
        )
        # In JSON mode the server's requests travel on that stream too.
        assert text_of(await client.call_tool("ask_llm", {"question": "?"})) == "Paris"


async def test_headers_session_id_and_delete_on_close(server: MCPServer) -> None:
    recorder = Recorder()
    app = StreamableHTTPApp(server, path="/mcp")
    async with (
        httpx.AsyncClient(event_hooks={"request": [recorder]}) as http,
        serve(app) as url,
    ):
        # Sessions, the GET stream and DELETE exist only in the handshake era.
        client = Client(
            url=url,
            headers={"X-Team": "blue"},
            http_client=http,
            timeout=TIMEOUT,
            protocol_version="2025-11-25",
        )
        async with client:
            await client.ping()
            transport = client.session.transport
            assert isinstance(transport, StreamableHTTPTransport)
            session_id = transport.session_id
            assert session_id and len(app) == 1
        assert len(app) == 0  # DELETE ended the server's session
        assert not http.is_closed  # an injected client belongs to the caller
    methods = recorder.methods()
    assert methods[:2] == ["POST", "POST"] and methods[-1] == "DELETE" and "GET" in methods
    (_, init_headers), *later = recorder.requests
    assert "mcp-session-id" not in init_headers
    assert "mcp-protocol-version" not in init_headers
    assert init_headers["accept"] == "application/json, text/event-stream"
    for _, headers in recorder.requests:
        assert headers["x-team"] == "blue"
    for method, headers in later:
        assert headers["mcp-session-id"] == session_id
        assert headers["mcp-protocol-version"] == "2025-11-25"
        if method == "GET":
            assert headers["accept"] == "text/event-stream"


# -- faults -----------------------------------------------------------------------------------------


async def test_server_restart_reinitializes_transparently(traffic: Traffic) -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    # Re-initialization on 404 is about handshake-era sessions.
    client = Client(
        url=f"http://127.0.0.1:{port}/mcp",
        trace=traffic,
        timeout=TIMEOUT,
        protocol_version="2025-11-25",
    )
    async with serve(build_server().http_app(), sock) as url:
        await client.connect()
        assert text_of(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
    # A new process on the same port knows nothing of our session: 404, then a new one.
    async with serve(build_server().http_app(), free_socket(port)) as url:
        assert url.endswith(f":{port}/mcp")
        results = await asyncio.gather(
            *(client.call_tool("add", {"a": i, "b": 1}) for i in range(3))
        )
        assert [text_of(r) for r in results] == ["1", "2", "3"]
        await client.aclose()
    assert len(traffic.sent("initialize")) == 2  # once more, however many calls saw the 404
    assert len(traffic.sent("notifications/initialized")) == 2


async def test_a_server_restart_needs_no_new_session_in_the_stateless_era(
    traffic: Traffic,
) -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    client = Client(url=f"http://127.0.0.1:{port}/mcp", trace=traffic, timeout=TIMEOUT)
    async with serve(build_server().http_app(), sock):
        await client.connect()
        assert client.protocol_version == "2026-07-28"
        assert text_of(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
        async with asyncio.timeout(TIMEOUT):  # the list-change subscription is open
            while not traffic.received("notifications/subscriptions/acknowledged"):
                await asyncio.sleep(0.01)
    # The stopping server answered the subscription (subscriptions § graceful closure).
    listen_id = traffic.sent("subscriptions/listen")[0]["id"]
    async with asyncio.timeout(TIMEOUT):
        while not any(m.get("id") == listen_id and "result" in m for m in traffic.received()):
            await asyncio.sleep(0.01)
    # A new process on the same port: nothing to re-establish, no handshake.
    async with serve(build_server().http_app(), free_socket(port)):
        results = await asyncio.gather(
            *(client.call_tool("add", {"a": i, "b": 1}) for i in range(3))
        )
        assert [text_of(r) for r in results] == ["1", "2", "3"]
        await client.aclose()
    assert not traffic.sent("initialize")
    assert len(traffic.sent("server/discover")) == 1


class ForgetfulServer:
    """A hand-written handshake-era server that answers a session id it does not know the
    way servers on the official TypeScript SDK do: HTTP 400 "Bad Request: No valid
    session ID provided" (instead of the specification's 404). ``restart()`` forgets
    every session; ``refusal`` is the 400's message; ``always`` refuses every session."""

    def __init__(self, *, refusal: str = "Bad Request: No valid session ID provided") -> None:
        self.refusal = refusal
        self.always = False
        self.sessions: set[str] = set()
        self.initializes = 0
        self.refused = 0

    def restart(self) -> None:
        self.sessions.clear()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        headers = dict(scope["headers"])
        sid = headers.get(b"mcp-session-id", b"").decode() or None
        if scope["method"] != "POST":
            await self._reply(send, 405 if sid in self.sessions else 400, None)
            return
        msg = json.loads(body)
        if msg.get("method") == "initialize":
            self.initializes += 1
            sid = f"session-{self.initializes}"
            self.sessions.add(sid)
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "forgetful", "version": "1"},
            }
            answer = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
            await self._reply(send, 200, answer, sid)
            return
        if self.always or sid not in self.sessions:
            self.refused += 1
            error = {"code": -32000, "message": self.refusal}
            await self._reply(send, 400, {"jsonrpc": "2.0", "error": error, "id": None})
            return
        if "id" not in msg or "method" not in msg:
            await self._reply(send, 202, None)
            return
        text = json.dumps(msg["params"]["arguments"]["n"] + 1)
        result = {"content": [{"type": "text", "text": text}]}
        await self._reply(send, 200, {"jsonrpc": "2.0", "id": msg["id"], "result": result})

    @staticmethod
    async def _reply(send: Any, status: int, body: Any, sid: str | None = None) -> None:
        headers = [(b"content-type", b"application/json")] if body is not None else []
        if sid is not None:
            headers.append((b"mcp-session-id", sid.encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        data = json.dumps(body).encode() if body is not None else b""
        await send({"type": "http.response.body", "body": data})


async def test_a_400_for_an_unknown_session_reinitializes_like_a_404(traffic: Traffic) -> None:
    server = ForgetfulServer()
    async with (
        serve(server) as url,
        Client(url=url, trace=traffic, timeout=TIMEOUT, protocol_version="2025-11-25") as client,
    ):
        assert text_of(await client.call_tool("inc", {"n": 1})) == "2"
        server.restart()
        results = await asyncio.gather(*(client.call_tool("inc", {"n": i}) for i in range(3)))
        assert [text_of(r) for r in results] == ["1", "2", "3"]
        assert server.refused >= 1
        assert text_of(await client.call_tool("inc", {"n": 9})) == "10"
    assert server.initializes == 2  # once more, however many calls saw the 400
    assert len(traffic.sent("notifications/initialized")) == 2


async def test_a_400_for_the_session_is_retried_once_per_request(traffic: Traffic) -> None:
    server = ForgetfulServer()
    async with (
        serve(server) as url,
        Client(url=url, trace=traffic, timeout=TIMEOUT, protocol_version="2025-11-25") as client,
    ):
        server.always = True  # every session is refused, the new one too: no loop
        with pytest.raises(ConnectionClosed, match="no longer knows session session-2"):
            await client.call_tool("inc", {"n": 1})
        assert server.initializes == 2
        # Once the server accepts sessions again, the next call makes one and succeeds.
        server.always = False
        assert text_of(await client.call_tool("inc", {"n": 1})) == "2"
        assert server.initializes == 3


async def test_a_400_that_is_not_about_the_session_is_an_error() -> None:
    server = ForgetfulServer(refusal="Bad Request: invalid arguments")
    async with (
        serve(server) as url,
        Client(url=url, timeout=TIMEOUT, protocol_version="2025-11-25") as client,
    ):
        server.restart()
        with pytest.raises(RemoteError, match=r"invalid arguments \(HTTP 400"):
            await client.call_tool("inc", {"n": 1})
    assert server.initializes == 1


class ListeningForgetfulServer(ForgetfulServer):
    """A :class:`ForgetfulServer` with a standalone GET stream. ``restart()`` also ends
    the open GET streams; a GET for a session it does not know is refused with
    ``status``: 404 (the specification) or 400 with the TypeScript SDK's message."""

    def __init__(self, status: int) -> None:
        super().__init__()
        self.status = status
        self.open_streams = 0
        self.refused_gets = 0
        self.seen: list[tuple[str, str | None]] = []  # (HTTP method, session id) in order
        self._drop = asyncio.Event()

    def restart(self) -> None:
        super().restart()
        self._drop.set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            sid = dict(scope["headers"]).get(b"mcp-session-id", b"").decode() or None
            self.seen.append((scope["method"], sid))
            if scope["method"] == "GET":
                await read_body(scope, receive, send)
                await self._get(sid, send)
                return
        await super().__call__(scope, receive, send)

    async def _get(self, sid: str | None, send: Any) -> None:
        if sid not in self.sessions:
            self.refused_gets += 1
            message = "Session not found" if self.status == 404 else self.refusal
            error = {"jsonrpc": "2.0", "error": {"code": -32000, "message": message}, "id": None}
            await self._reply(send, self.status, error)
            return
        self._drop.clear()
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b": open\n\n", "more_body": True})
        self.open_streams += 1
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drop.wait(), 30)
        finally:
            self.open_streams -= 1
        await send({"type": "http.response.body", "body": b""})


@pytest.mark.parametrize("status", [404, 400])
async def test_a_get_stream_refused_for_the_session_expires_it_without_retrying(
    status: int, traffic: Traffic
) -> None:
    server = ListeningForgetfulServer(status)
    async with serve(server) as url:
        # A short reconnection delay: a retry loop would GET again within 0.2, 0.6, 1.4 s.
        transport = StreamableHTTPTransport(url, reconnect_delay=0.1)
        async with Client(
            transport=transport, trace=traffic, timeout=TIMEOUT, protocol_version="2025-11-25"
        ) as client:
            assert text_of(await client.call_tool("inc", {"n": 1})) == "2"
            async with asyncio.timeout(TIMEOUT):
                while server.open_streams != 1:
                    await asyncio.sleep(0.01)
            server.restart()  # forgets session-1 and ends its GET stream
            async with asyncio.timeout(TIMEOUT):
                while server.refused_gets < 1:
                    await asyncio.sleep(0.01)
            mark = len(server.seen)
            await asyncio.sleep(2.0)
            assert server.refused_gets == 1, "the refused GET was retried"
            # The next call does not offer the forgotten session again: it makes a new one.
            assert text_of(await client.call_tool("inc", {"n": 2})) == "3"
            assert server.initializes == 2
            after = server.seen[mark:]
            assert after and all(sid != "session-1" for _, sid in after), after
            # The new session opens its own GET stream.
            async with asyncio.timeout(TIMEOUT):
                while server.open_streams != 1:
                    await asyncio.sleep(0.01)
            assert ("GET", "session-2") in server.seen
            server.restart()  # end the stream, so closing does not wait for it


@pytest.mark.parametrize(
    ("retry_ms", "own_delay", "low", "high"),
    [
        (300, 5.0, 0.3, 2.5),  # the server's short retry, not the client's own 5 s
        (1500, 0.05, 1.5, 4.0),  # the server's long retry, not the client's own 50 ms
    ],
)
async def test_a_closed_stream_is_resumed_after_retry(
    traffic: Traffic, retry_ms: int, own_delay: float, low: float, high: float
) -> None:
    server = MCPServer(name="resumable", version="1")

    @server.tool
    async def poll(ctx: Context) -> str:
        await ctx.info("before the cut")
        await ctx.close_sse_stream()  # SEP-1699: the server ends the connection, not the stream
        await ctx.info("after the cut")
        await asyncio.sleep(0.05)
        return "finished"

    recorder = Recorder()
    logs: list[Any] = []
    app = server.http_app(event_store=MemoryEventStore(), retry_interval_ms=retry_ms)
    async with httpx.AsyncClient(event_hooks={"request": [recorder]}) as http, serve(app) as url:
        transport = StreamableHTTPTransport(url, http_client=http, reconnect_delay=own_delay)
        # Resuming with Last-Event-ID on a GET is the handshake era's (2026-07-28 has no GET;
        # there the close is a no-op and the stream simply carries on).
        async with Client(
            transport=transport,
            trace=traffic,
            timeout=TIMEOUT,
            log_handler=logs.append,
            protocol_version="2025-11-25",
        ) as client:
            start = time.monotonic()
            result = await client.call_tool("poll")
            elapsed = time.monotonic() - start
    assert text_of(result) == "finished"
    assert low <= elapsed < high  # waited for the server's `retry`, then resumed
    assert [entry["data"] for entry in logs] == ["before the cut", "after the cut"]
    resumes = [h for m, h in recorder.requests if m == "GET" and "last-event-id" in h]
    assert len(resumes) == 1
    answers = [m for m in traffic.received() if "result" in m and "content" in m["result"]]
    assert len(answers) == 1  # neither lost nor duplicated


async def test_a_notification_the_server_never_accepts_times_out() -> None:
    """Every wait is bounded: here the POST of notifications/initialized is never answered."""
    release = asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        msg = json.loads(body) if body else {}
        if scope["method"] != "POST":  # no standalone stream; DELETE ends the session
            await send({"type": "http.response.start", "status": 405, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if msg.get("method") != "initialize":
            await release.wait()  # the notification: never answered in time
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mute", "version": "1"},
        }
        reply = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
        headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": reply})

    async with serve(app) as url:
        start = time.monotonic()
        try:
            with pytest.raises(PeerTimeout, match="did not accept notifications/initialized"):
                async with Client(url=url, timeout=0.5, protocol_version="2025-11-25"):
                    pass
        finally:
            release.set()
        assert time.monotonic() - start < 5.0


async def test_timeout_over_http_cancels_on_the_server(server: MCPServer, traffic: Traffic) -> None:
    async with (
        serve(server.http_app()) as url,
        Client(url=url, trace=traffic, timeout=TIMEOUT) as client,
    ):
        with pytest.raises(PeerTimeout):
            await client.call_tool("hang", timeout=0.3)
        call_id = traffic.sent("tools/call")[0]["id"]
        for _ in range(100):
            if server.cancelled:  # type: ignore[attr-defined]
                break
            await asyncio.sleep(0.01)
        assert server.cancelled == [call_id]  # type: ignore[attr-defined]
        assert text_of(await client.call_tool("add", {"a": 1, "b": 2})) == "3"


async def test_an_unreachable_server_fails_fast() -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there
    start = time.monotonic()
    with pytest.raises(ConnectionClosed, match=f"127.0.0.1:{port}"):
        async with Client(url=f"http://127.0.0.1:{port}/mcp", timeout=TIMEOUT):
            pass
    assert time.monotonic() - start < 5.0  # a refused connection, not the 10 s timeout


async def test_an_http_error_is_reported_with_its_status(server: MCPServer) -> None:
    async with serve(server.http_app()) as url:
        with pytest.raises(RemoteError, match="HTTP 404"):
            async with Client(url=url.replace("/mcp", "/elsewhere"), timeout=TIMEOUT):
                pass


def test_importing_the_client_does_not_import_httpx() -> None:
    code = (
        "import sys, mcpkit.client\n"
        "from mcpkit.client import Client\n"
        "import mcpkit.client.session, mcpkit.client.transports.stdio\n"
        "assert 'httpx' not in sys.modules, 'httpx imported eagerly'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


async def test_a_connection_cut_mid_response_is_resumed_once(traffic: Traffic) -> None:
    """Not a graceful end of the stream: the TCP connection dies in the middle of the
    chunked body (the server's app crashes after the first event). The client resumes
    from that event's id and gets the answer exactly once."""
    gets: list[str | None] = []

    def sse(event_id: str, message: dict[str, Any], retry: int | None = None) -> bytes:
        head = f"retry: {retry}\n" if retry is not None else ""
        return f"{head}id: {event_id}\ndata: {json.dumps(message)}\n\n".encode()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        stream = [(b"content-type", b"text/event-stream"), (b"mcp-session-id", b"s1")]
        if scope["method"] == "GET":
            headers = dict(scope["headers"])
            gets.append(headers.get(b"last-event-id", b"").decode() or None)
            if not gets[-1]:  # the standalone stream: not offered
                await send({"type": "http.response.start", "status": 405, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
            answer = {"jsonrpc": "2.0", "id": call_id[0], "result": {"content": []}}
            answer["result"]["content"] = [{"type": "text", "text": "whole"}]
            await send({"type": "http.response.start", "status": 200, "headers": stream})
            await send({"type": "http.response.body", "body": sse("e2", answer)})
            return
        msg = json.loads(body)
        if "id" not in msg:  # notifications/initialized
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if msg["method"] == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "cut", "version": "1"},
            }
            reply = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            json_headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1")]
            await send({"type": "http.response.start", "status": 200, "headers": json_headers})
            await send({"type": "http.response.body", "body": reply.encode()})
            return
        call_id.append(msg["id"])
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "halfway"},
        }
        await send({"type": "http.response.start", "status": 200, "headers": stream})
        await send({"type": "http.response.body", "body": sse("e1", note, 50), "more_body": True})
        raise RuntimeError("the connection dies here")  # uvicorn aborts the chunked body

    call_id: list[Any] = []
    logs: list[Any] = []
    async with (
        serve(app) as url,
        Client(
            url=url,
            trace=traffic,
            timeout=TIMEOUT,
            log_handler=logs.append,
            protocol_version="2025-11-25",
        ) as client,
    ):
        result = await client.call_tool("anything")
    assert text_of(result) == "whole"
    assert [entry["data"] for entry in logs] == ["halfway"]
    assert "e1" in gets  # resumed from the last event it saw
    answers = [m for m in traffic.received() if "result" in m and "content" in m["result"]]
    assert len(answers) == 1
