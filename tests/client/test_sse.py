"""The legacy HTTP+SSE client transport and the choice of HTTP transport, on real sockets.

The servers are mcpkit's own ``server.sse_app()`` (2024-11-05 HTTP+SSE) and
``server.http_app()`` (Streamable HTTP) on uvicorn, plus a few raw ASGI apps
that misbehave on purpose.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from mcpkit.client import Client
from mcpkit.client.transports.base import HTTPErrorStatus, Unreachable
from mcpkit.client.transports.sse import SSETransport
from mcpkit.client.transports.streamable_http import StreamableHTTPTransport
from mcpkit.errors import SHUTTING_DOWN, PeerTimeout, RemoteError
from tests.client.conftest import Traffic
from tests.client.fixtures.demo_server import build_server
from tests.client.http_servers import Recorder, free_socket, serve, unused_port

TIMEOUT = 10.0

Scope = dict[str, Any]


def text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def sse_url(url: str) -> str:
    """``serve`` yields ``…/mcp``; mcpkit's SSE app streams on ``/sse`` by default."""
    return url.removesuffix("/mcp") + "/sse"


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "Paris"},
        "model": "m",
        "stopReason": "endTurn",
    }


def transport_of(client: Client) -> Any:
    return client.session.transport


async def wait_for(predicate: Any, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return bool(predicate())


# -- the transport -----------------------------------------------------------------------------------


async def test_an_sse_url_speaks_legacy_sse_with_every_feature(traffic: Traffic) -> None:
    server = build_server()
    logs: list[Any] = []
    recorder = Recorder()
    async with (
        httpx.AsyncClient(event_hooks={"request": [recorder]}) as http,
        serve(server.sse_app()) as url,
        Client(
            url=sse_url(url),
            http_client=http,
            trace=traffic,
            timeout=TIMEOUT,
            sampling_handler=sample,
            elicitation_handler=lambda p: {"action": "accept", "content": {"name": "Ada"}},
            roots=["file:///w"],
            log_handler=logs.append,
        ) as client,
    ):
        assert isinstance(transport_of(client), SSETransport)
        # HTTP+SSE is a handshake-era transport: the default client does not probe on it.
        assert client.protocol_version == "2025-11-25"
        assert [m["method"] for m in traffic.sent()][:1] == ["initialize"]
        assert {t["name"] for t in await client.list_tools()} >= {"add", "hang"}
        assert text_of(await client.call_tool("add", {"a": 1, "b": 2})) == "3"
        # Server requests arrive on the stream; the answers are POSTed to the endpoint.
        assert text_of(await client.call_tool("ask_llm", {"question": "?"})) == "Paris"
        answer = await client.call_tool("ask_user")
        assert answer["structuredContent"]["content"]["name"] == "Ada"
        assert answer["structuredContent"]["content"]["age"] == 30  # a schema default
        assert text_of(await client.call_tool("roots")) == "file:///w"
        seen: list[Any] = []
        await client.call_tool("slow", {"steps": 3}, progress=lambda *a: seen.append(a))
        assert [s[0] for s in seen] == [1, 2, 3]
        await client.call_tool("chatty")
        assert [entry["data"] for entry in logs] == ["hello from the tool", {"detail": 42}]
        results = await asyncio.gather(
            *(client.call_tool("echo", {"text": str(i)}) for i in range(20))
        )
        assert [text_of(r) for r in results] == [str(i) for i in range(20)]
        contents = (await client.read_resource("memo://greeting"))["contents"]
        assert contents[0]["text"] == "hello"
    # No POST to the SSE URL: straight to GET, then POSTs to the announced endpoint.
    assert recorder.methods()[0] == "GET"
    assert recorder.urls[0] == sse_url(url)
    posts = {u for m, u in zip(recorder.methods(), recorder.urls, strict=True) if m == "POST"}
    assert len(posts) == 1 and "/message?sessionId=" in posts.pop()


async def test_headers_go_on_the_stream_and_every_post() -> None:
    recorder = Recorder()
    app = build_server().sse_app()
    async with (
        httpx.AsyncClient(event_hooks={"request": [recorder]}) as http,
        serve(app) as url,
    ):
        client = Client(
            url=sse_url(url), headers={"Authorization": "Bearer t"}, http_client=http, timeout=5
        )
        async with client:
            await client.ping()
            assert len(app) == 1
        # Closing the stream ends the server's session.
        assert await wait_for(lambda: len(app) == 0)
        assert not http.is_closed  # an injected client belongs to the caller
    assert len(recorder.requests) >= 4  # GET, initialize, initialized, ping
    for _, headers in recorder.requests:
        assert headers["authorization"] == "Bearer t"


async def test_a_server_that_never_answers_times_out() -> None:
    async def mute(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "POST":
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = b"event: endpoint\ndata: /messages?sessionId=1\n\n"
        await send({"type": "http.response.body", "body": body, "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass

    async with serve(mute, path="/sse") as url:
        start = time.monotonic()
        with pytest.raises(PeerTimeout, match=r"did not answer initialize within 0\.3 s"):
            async with Client(url=url, timeout=0.3):
                pass
        assert time.monotonic() - start < 3.0


async def test_an_endpoint_on_another_origin_is_refused() -> None:
    async def evil(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = b"event: endpoint\ndata: http://attacker.example/collect\n\n"
        await send({"type": "http.response.body", "body": body, "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass

    async with serve(evil, path="/sse") as url:
        with pytest.raises(RemoteError, match="another origin"):
            async with Client(url=url, timeout=TIMEOUT, headers={"Authorization": "Bearer t"}):
                pass


async def test_a_get_that_is_not_an_event_stream_is_a_clear_error() -> None:
    async def plain(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = [(b"content-type", b"text/html")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"<html></html>"})

    async with serve(plain, path="/sse") as url:
        with pytest.raises(RemoteError, match="not an SSE stream"):
            async with Client(url=url, timeout=TIMEOUT):
                pass


async def test_a_dropped_stream_fails_waiting_calls_and_a_restart_reinitializes(
    traffic: Traffic,
) -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    client = Client(url=f"http://127.0.0.1:{port}/sse", trace=traffic, timeout=TIMEOUT)
    async with serve(build_server().sse_app(), sock):
        await client.connect()
        assert text_of(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
        hanging = asyncio.create_task(client.call_tool("hang"))
        await asyncio.sleep(0.1)
        start = time.monotonic()
    # The server went away with our session: the waiting call fails when its graceful period
    # is over, saying why (the server answered it on its stream before ending that), not at
    # its timeout.
    with pytest.raises(RemoteError, match="shutting down") as failed:
        await asyncio.wait_for(hanging, TIMEOUT)
    assert failed.value.code == SHUTTING_DOWN
    assert time.monotonic() - start < 3.0
    # A new server on the same port: the next calls open a new stream and a new session.
    async with serve(build_server().sse_app(), free_socket(port)):
        results = await asyncio.gather(
            *(client.call_tool("add", {"a": i, "b": 1}) for i in range(3))
        )
        assert [text_of(r) for r in results] == ["1", "2", "3"]
        await client.aclose()
    assert len(traffic.sent("initialize")) == 2
    assert len(traffic.sent("notifications/initialized")) == 2


async def test_calls_fail_clearly_while_the_server_is_down_and_work_when_it_is_back() -> None:
    sock = free_socket()
    port = sock.getsockname()[1]
    async with serve(build_server().sse_app(), sock) as url:
        client = Client(url=sse_url(url), timeout=TIMEOUT)
        await client.connect()
        await client.ping()
    try:
        for _ in range(2):  # each call tries again, and says why it failed
            start = time.monotonic()
            with pytest.raises(Unreachable, match="ConnectError"):
                await client.call_tool("add", {"a": 1, "b": 1})
            assert time.monotonic() - start < 3.0
        async with serve(build_server().sse_app(), free_socket(port)):
            assert text_of(await client.call_tool("add", {"a": 1, "b": 1})) == "2"
    finally:
        await client.aclose()


# -- choosing the transport ---------------------------------------------------------------------------


def posts_answered(app: Any, status: int) -> Any:
    """``app``, except that a POST to ``/mcp`` is answered with ``status``."""

    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/mcp":
            headers = [(b"content-type", b"text/plain")]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b"no"})
            return
        await app(scope, receive, send)

    return wrapped


@pytest.mark.parametrize("status", [400, 404, 405])
@pytest.mark.parametrize(
    ("version", "posts"),
    [
        # The default client POSTs the 2026-07-28 probe, and on a non-modern 4xx the
        # handshake (2026-07-28 basic/versioning § dual-era client, legacy server).
        (None, ["server/discover", "initialize"]),
        ("2025-11-25", ["initialize"]),
    ],
)
async def test_a_url_falls_back_to_sse_on_400_404_405(
    status: int, version: str | None, posts: list[str], traffic: Traffic
) -> None:
    app = build_server().sse_app(sse_path="/mcp", message_path="/messages")
    recorder = Recorder()
    pinned = {"protocol_version": version} if version else {}
    async with (
        httpx.AsyncClient(event_hooks={"request": [recorder]}) as http,
        serve(posts_answered(app, status)) as url,
        Client(url=url, http_client=http, trace=traffic, timeout=TIMEOUT, **pinned) as client,
    ):
        assert isinstance(transport_of(client), SSETransport)
        assert client.protocol_version == "2025-11-25"  # HTTP+SSE carries the handshake era
        assert text_of(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
    # First the Streamable HTTP POSTs to the URL, then the legacy GET on it.
    methods = [*(["POST"] * len(posts)), "GET"]
    assert recorder.methods()[: len(methods)] == methods
    assert recorder.urls[: len(methods)] == [url] * len(methods)
    assert [m["method"] for m in traffic.sent()[: len(posts) + 1]] == [*posts, "initialize"]


async def test_a_url_serving_streamable_http_does_not_fall_back(traffic: Traffic) -> None:
    async with (
        serve(build_server().http_app()) as url,
        Client(url=url, trace=traffic, timeout=TIMEOUT) as client,
    ):
        assert isinstance(transport_of(client), StreamableHTTPTransport)
        assert text_of(await client.call_tool("add", {"a": 2, "b": 3})) == "5"


@pytest.mark.parametrize("status", [401, 403, 500])
async def test_other_statuses_do_not_fall_back(status: int) -> None:
    app = build_server().sse_app(sse_path="/mcp", message_path="/messages")
    recorder = Recorder()
    async with (
        httpx.AsyncClient(event_hooks={"request": [recorder]}) as http,
        serve(posts_answered(app, status)) as url,
    ):
        with pytest.raises(HTTPErrorStatus) as info:
            async with Client(url=url, http_client=http, timeout=TIMEOUT):
                pass
    assert info.value.status == status
    assert "GET" not in recorder.methods()


async def test_streamable_http_only_does_not_fall_back() -> None:
    app = build_server().sse_app(sse_path="/mcp", message_path="/messages")
    async with serve(app) as url:
        with pytest.raises(HTTPErrorStatus) as info:
            async with Client(url=url, http_transport="streamable-http", timeout=TIMEOUT):
                pass
    assert info.value.status == 405


async def test_sse_can_be_chosen_for_any_url(traffic: Traffic) -> None:
    app = build_server().sse_app(sse_path="/events", message_path="/messages")
    recorder = Recorder()
    async with (
        httpx.AsyncClient(event_hooks={"request": [recorder]}) as http,
        serve(app, path="/events") as url,
        Client(url=url, http_transport="sse", http_client=http, trace=traffic) as client,
    ):
        assert isinstance(transport_of(client), SSETransport)
        await client.ping()
    assert recorder.methods()[0] == "GET"


async def test_nothing_listening_tries_both_and_says_so() -> None:
    port = unused_port()
    start = time.monotonic()
    with pytest.raises(Unreachable) as info:
        async with Client(url=f"http://127.0.0.1:{port}/mcp", timeout=TIMEOUT):
            pass
    assert time.monotonic() - start < 3.0
    message = str(info.value)
    assert "Streamable HTTP" in message and "legacy HTTP+SSE" in message
    assert f"127.0.0.1:{port}" in message


async def test_an_unknown_path_reports_both_404s() -> None:
    async with serve(build_server().http_app()) as url:
        with pytest.raises(HTTPErrorStatus, match="HTTP 404") as info:
            async with Client(url=url.replace("/mcp", "/elsewhere"), timeout=TIMEOUT):
                pass
    assert info.value.status == 404


def test_the_http_transport_choice_is_validated() -> None:
    from mcpkit.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="http_transport"):
        Client(url="http://x/mcp", http_transport="websocket")  # type: ignore[arg-type]


def test_sse_urls_are_recognised() -> None:
    from mcpkit.client.client import _is_sse_url

    assert _is_sse_url("http://h/sse")
    assert _is_sse_url("http://h/api/sse/")
    assert _is_sse_url("http://h/sse?token=1")
    assert not _is_sse_url("http://h/mcp")
    assert not _is_sse_url("http://h/classes")


async def test_closing_ends_a_stream_that_lost_its_cancellation() -> None:
    # Python 3.11's asyncio.wait_for (in httpx's stack or the application's) can drop a
    # cancellation (CPython gh-86296): the stream runs on, and close must not wait forever.
    app = build_server().sse_app()
    async with serve(app) as url:
        transport = SSETransport(sse_url(url))
        read_stream = transport._read_stream
        lost: list[int] = []

        async def loses_one_cancellation(ready: asyncio.Future[str]) -> Any:
            try:
                return await read_stream(ready)
            except asyncio.CancelledError:
                lost.append(1)
            await asyncio.sleep(3600)  # runs on until cancelled again

        transport._read_stream = loses_one_cancellation  # type: ignore[method-assign]
        client = Client(transport=transport, timeout=5)
        await client.__aenter__()
        await client.ping()
        closing = asyncio.ensure_future(client.__aexit__(None, None, None))
        done, _ = await asyncio.wait({closing}, timeout=4.0)
        if not done:
            closing.cancel()
            raise AssertionError("closing the client waits forever on a lost cancellation")
        closing.result()
        assert lost == [1]
