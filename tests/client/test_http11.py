"""LeanHTTP, the Streamable HTTP transport's own HTTP/1.1 client, on real sockets.

Two kinds of peer: mcpkit and hand-written ASGI apps on uvicorn (what the client meets
in practice), and raw asyncio socket servers that write exact bytes (a connection closed
mid-body, chunks split anywhere, an answer that never comes). The raw tests run with
both parsers: httptools and h11 (the one used when httptools is not installed).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import json
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpkit import Client, MCPServer
from mcpkit.client.transports import http11
from mcpkit.client.transports.base import MessageTooLarge
from mcpkit.client.transports.http11 import LeanHTTP, usable
from mcpkit.client.transports.streamable_http import StreamableHTTPTransport
from mcpkit.errors import ConnectionClosed
from tests.client.http_servers import read_body, serve

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@pytest.fixture(params=["httptools", "h11"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test twice: with httptools' parser, then with h11's (httptools hidden)."""
    if request.param == "h11":
        monkeypatch.setattr(http11, "httptools", None)
    yield request.param


@contextlib.asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[str]:
    """A TCP server on 127.0.0.1 running ``handler`` per connection; yields its URL."""
    running: set[asyncio.Task[None]] = set()

    async def each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        running.add(task)
        try:
            await handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        finally:
            writer.close()

    server = await asyncio.start_server(each, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.close()
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One request's head and body (Content-Length framed, as LeanHTTP sends them)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    return head, await reader.readexactly(length)


async def echo_app(
    scope: dict[str, Any], receive: Any, send: Any, body: bytes | None = None
) -> None:
    body = body if body is not None else await read_body(scope, receive, send)
    if body is None:
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain")],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def read_all(client: LeanHTTP, url: str, body: bytes = b"") -> tuple[int, bytes]:
    async with client.stream("POST", url, content=body) as resp:
        data = b"".join([chunk async for chunk in resp.aiter_bytes()])
        return resp.status_code, data


# -- keep-alive ----------------------------------------------------------------------------------


async def test_sequential_requests_reuse_one_connection(parser: str) -> None:
    client = LeanHTTP()
    async with serve(echo_app) as url:
        try:
            for i in range(20):
                assert await read_all(client, url, b"ping %d" % i) == (200, b"ping %d" % i)
        finally:
            await client.aclose()
    assert client.connections_opened == 1


async def test_concurrent_requests_open_a_connection_each_then_reuse_them(parser: str) -> None:
    client = LeanHTTP()
    async with serve(echo_app) as url:
        try:
            for _ in range(3):
                answers = await asyncio.gather(*(read_all(client, url, b"x") for _ in range(4)))
                assert answers == [(200, b"x")] * 4
        finally:
            await client.aclose()
    assert client.connections_opened == 4


async def test_a_client_reuses_its_connection_for_every_call() -> None:
    server = MCPServer(name="s", version="1")

    @server.tool
    def echo(text: str) -> str:
        return text

    async with serve(server.http_app("/mcp")) as url, Client(url=url) as client:
        for i in range(10):
            assert (await client.call_tool("echo", {"text": str(i)}))["content"][0]["text"] == str(
                i
            )
        transport = client.session.transport
        assert isinstance(transport, StreamableHTTPTransport)
        lean = transport.http_client
        assert isinstance(lean, LeanHTTP)
        # One for the POSTs, one for the standalone GET stream that stays open.
        assert lean.connections_opened <= 2


async def test_a_connection_the_server_closes_is_not_reused(parser: str) -> None:
    served = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        await read_request(reader)
        served += 1
        writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    client = LeanHTTP()
    async with raw_server(handler) as url:
        try:
            for _ in range(3):
                assert await read_all(client, url) == (200, b"ok")
        finally:
            await client.aclose()
    assert (served, client.connections_opened) == (3, 3)


def test_a_connection_closed_while_idle_is_not_reused_even_before_the_loop_sees_it(
    parser: str,
) -> None:
    """A server that restarted between two requests: its end of the idle connection is
    closed, and the event loop has not run since (so no ``connection_lost`` yet)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve_one_request_per_connection() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            # closed at once: the client's idle connection is dead

    thread = threading.Thread(target=serve_one_request_per_connection, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}/mcp"

    async def two_requests() -> LeanHTTP:
        client = LeanHTTP()
        try:
            assert await read_all(client, url) == (200, b"ok")
            time.sleep(0.2)  # the loop stands still while the server closes its end
            assert await read_all(client, url) == (200, b"ok")
        finally:
            await client.aclose()
        return client

    try:
        assert asyncio.run(two_requests()).connections_opened == 2
    finally:
        thread.join(5)
        listener.close()


# -- bodies --------------------------------------------------------------------------------------


async def test_a_chunked_answer_split_anywhere_is_reassembled(parser: str) -> None:
    events = b'event: message\ndata: {"a": 1}\n\ndata: {"b": 2}\n\n'
    wire = b"%x\r\n%s\r\n" % (len(events), events) + b"0\r\n\r\n"

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n"
            )
            for i in range(0, len(wire), 3):  # three bytes per write: sizes and CRLFs split
                writer.write(wire[i : i + 3])
                await writer.drain()
                await asyncio.sleep(0)

    client = LeanHTTP()
    async with raw_server(handler) as url:
        try:
            for _ in range(2):
                async with client.stream("POST", url, content=b"{}") as resp:
                    assert resp.headers["content-type"] == "text/event-stream"
                    assert b"".join([c async for c in resp.aiter_bytes()]) == events
        finally:
            await client.aclose()
    assert client.connections_opened == 1


async def test_a_close_delimited_body_ends_with_the_connection(parser: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{"x":')
        await writer.drain()
        await asyncio.sleep(0.02)
        writer.write(b" 1}")
        writer.close()

    client = LeanHTTP()
    async with raw_server(handler) as url:
        try:
            assert await read_all(client, url) == (200, b'{"x": 1}')
        finally:
            await client.aclose()


async def test_a_connection_closed_mid_body_fails_the_read(parser: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b'transfer-encoding: chunked\r\n\r\n10\r\ndata: {"a": 1}\n\n\r\n'
        )
        await writer.drain()
        await asyncio.sleep(0.02)
        writer.close()  # no last chunk: the answer is cut

    client = LeanHTTP()
    async with raw_server(handler) as url:
        try:
            async with client.stream("POST", url, content=b"{}") as resp:
                got = []
                with pytest.raises(httpx.RemoteProtocolError, match="before the answer ended"):
                    async for chunk in resp.aiter_bytes():
                        got.append(chunk)
                assert b"".join(got) == b'data: {"a": 1}\n\n'
                assert not resp.reusable
        finally:
            await client.aclose()


async def test_a_connection_closed_before_the_answer_fails_the_request(parser: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.close()

    client = LeanHTTP()
    async with raw_server(handler) as url:
        try:
            with pytest.raises(httpx.RemoteProtocolError, match="before answering"):
                await read_all(client, url)
        finally:
            await client.aclose()


async def test_a_request_whose_sse_answer_is_cut_fails_the_call() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            _, body = await read_request(reader)
            message = json.loads(body) if body else {}
            if message.get("method") == "initialize":
                answer = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": {
                            "protocolVersion": "2025-11-25",
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "s", "version": "1"},
                        },
                    }
                ).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"mcp-session-id: s1\r\ncontent-length: %d\r\n\r\n%s" % (len(answer), answer)
                )
            elif message.get("method") == "tools/call":
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n"
                )
                await writer.drain()
                writer.close()  # the stream ends without the answer and without an event id
                return
            else:  # notifications: 202; the GET stream: no standalone stream
                status = b"202 Accepted" if body else b"405 Method Not Allowed"
                writer.write(b"HTTP/1.1 %s\r\ncontent-length: 0\r\n\r\n" % status)
            await writer.drain()

    async with raw_server(handler) as url, Client(url=url) as client:
        with pytest.raises(ConnectionClosed, match="ended the response stream"):
            await client.call_tool("echo", {"text": "x"})


# -- limits --------------------------------------------------------------------------------------


async def test_an_oversize_answer_is_refused_and_its_connection_dropped() -> None:
    async def endless(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        if body == b"small":
            await echo_app(scope, receive, send, body)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        for _ in range(1024):  # 64 MiB, far past the limit: the client stops first
            await send({"type": "http.response.body", "body": b" " * 65536, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    transport = StreamableHTTPTransport("http://unused", max_message_size=100_000)
    client = LeanHTTP()
    async with serve(endless) as url:
        try:
            with pytest.raises(MessageTooLarge):
                async with client.stream("POST", url, content=b"{}") as resp:
                    from mcpkit.client.transports.http_responses import read_body as bounded

                    await bounded(resp, transport.max_message_size, url)
            assert await read_all(client, url, b"small") == (200, b"small")
        finally:
            await client.aclose()
    assert client.connections_opened == 2  # the oversize answer's connection was not reused


async def test_an_answer_that_never_comes_times_out(parser: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(10)

    client = LeanHTTP(read_timeout=0.2)
    async with raw_server(handler) as url:
        try:
            with pytest.raises(httpx.ReadTimeout):
                await read_all(client, url)
        finally:
            await client.aclose()


async def test_a_body_that_stops_arriving_times_out(parser: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n")
        await writer.drain()
        await asyncio.sleep(10)

    client = LeanHTTP(read_timeout=0.2)
    async with raw_server(handler) as url:
        try:
            async with client.stream("POST", url, content=b"{}") as resp:
                with pytest.raises(httpx.ReadTimeout):
                    async for _ in resp.aiter_bytes():
                        pass
        finally:
            await client.aclose()


async def test_a_small_answer_is_handed_over_whole_or_times_out(parser: str) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"defghij")  # the rest, later: the request waits for it
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
        await writer.drain()
        await asyncio.sleep(10)

    client = LeanHTTP(read_timeout=1)
    async with raw_server(handler) as url:
        try:
            async with client.stream("POST", url, content=b"{}") as resp:
                assert resp.received() == b"abcdefghij"
            client.read_timeout = 0.2
            with pytest.raises(httpx.ReadTimeout):
                await read_all(client, url)
        finally:
            await client.aclose()
    assert client.connections_opened == 1


async def test_a_refused_connection_is_a_connect_error() -> None:
    from tests.client.http_servers import unused_port

    client = LeanHTTP()
    with pytest.raises(httpx.ConnectError):
        await read_all(client, f"http://127.0.0.1:{unused_port()}/mcp")


async def test_a_header_that_would_split_the_request_is_refused() -> None:
    client = LeanHTTP()
    with pytest.raises(httpx.LocalProtocolError):
        async with client.stream("GET", "http://127.0.0.1:1/", headers={"x": "a\r\nevil: 1"}):
            pass
    assert client.connections_opened == 0


# -- which client ----------------------------------------------------------------------------------


def test_httpx_does_what_the_lean_client_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    url = "http://127.0.0.1:8000/mcp"
    assert usable(url) and usable("https://example.com/mcp")
    assert not usable(url, auth=httpx.BasicAuth("a", "b"))
    assert not usable(url, http_client=httpx.AsyncClient())
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    assert not usable(url)
    assert usable("https://example.com/mcp")  # the proxy is for http:// only
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert usable(url)


async def test_the_transport_takes_httpx_when_a_proxy_is_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ALL_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    transport = StreamableHTTPTransport("http://127.0.0.1:9/mcp")
    await transport.start(None)  # type: ignore[arg-type]
    try:
        assert isinstance(transport.http_client, httpx.AsyncClient)
    finally:
        await transport.aclose()


# -- TLS -------------------------------------------------------------------------------------------


def _certificates(tmp: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate for 127.0.0.1 it signed: (CA file, certificate, key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)

    def build(subject: str, key: Any, issuer: str, signer: Any, ca: bool) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()),
                critical=False,
            )
        )
        if ca:
            builder = builder.add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
        else:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            ).add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
        return builder.sign(signer, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = build("test CA", ca_key, "test CA", ca_key, True)
    leaf = build("127.0.0.1", key, "test CA", ca_key, False)
    pem = serialization.Encoding.PEM
    paths = tmp / "ca.pem", tmp / "cert.pem", tmp / "key.pem"
    paths[0].write_bytes(ca.public_bytes(pem))
    paths[1].write_bytes(leaf.public_bytes(pem))
    paths[2].write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


async def test_https_with_the_given_context_and_refused_without_it(
    parser: str, tmp_path: Path
) -> None:
    ca, cert, key = _certificates(tmp_path)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            while True:
                _, body = await read_request(reader)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=served)
    url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/mcp"
    trusting, default = LeanHTTP(ssl_context=ssl.create_default_context(cafile=ca)), LeanHTTP()
    try:
        for _ in range(3):
            assert await read_all(trusting, url, b"secret") == (200, b"secret")
        assert trusting.connections_opened == 1
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await read_all(default, url, b"secret")  # certifi's roots do not know the test CA
    finally:
        await trusting.aclose()
        await default.aclose()
        server.close()


# -- requests made in the caller's task ----------------------------------------------------------


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_closing_the_client_ends_a_call_in_flight_with_an_error(era: str) -> None:
    # The lean transport makes a request in the caller's task (no task of its own to
    # cancel): closing the transport must still end the call, promptly and clearly.
    server = MCPServer(name="s", version="1")
    started = asyncio.Event()

    @server.tool
    async def slow() -> str:
        """Never answers in time."""
        started.set()
        await asyncio.sleep(60)
        return "late"

    async with serve(server.http_app()) as url:
        client = Client(url=url, protocol_version=era)
        await client.connect()
        call = asyncio.create_task(client.call_tool("slow", {}))
        await asyncio.wait_for(started.wait(), 10)
        began = time.monotonic()
        await client.aclose()
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(call, 10)
        assert time.monotonic() - began < 5


async def test_a_cancelled_call_leaves_the_connection_usable_for_the_next() -> None:
    server = MCPServer(name="s", version="1")

    @server.tool
    async def slow() -> str:
        """Answers after a while."""
        await asyncio.sleep(60)
        return "late"

    @server.tool
    def echo(text: str) -> str:
        """Return the text."""
        return text

    async with serve(server.http_app()) as url, Client(url=url) as client:
        call = asyncio.create_task(client.call_tool("slow", {}))
        await asyncio.sleep(0.3)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        result = await asyncio.wait_for(client.call_tool("echo", {"text": "next"}), 10)
        assert result["content"][0]["text"] == "next"


async def test_closing_a_client_loses_no_error_unseen(caplog: pytest.LogCaptureFixture) -> None:
    # A 2026-07-28 client holds its subscriptions/listen request open on the lean
    # transport; closing fails that request's future while its stream is still being
    # read: the error is seen there, and asyncio must not report one "never retrieved".
    import gc

    server = MCPServer(name="s", version="1")

    @server.tool
    def echo(text: str) -> str:
        """Return the text."""
        return text

    async with serve(server.http_app()) as url:
        for _ in range(3):
            async with Client(url=url) as client:
                await client.call_tool("echo", {"text": "x"})
    gc.collect()
    await asyncio.sleep(0)
    assert "never retrieved" not in caplog.text
