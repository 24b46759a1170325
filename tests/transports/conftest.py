"""Real-socket fixtures for the HTTP transport tests.

``serve_app(app)`` runs an ASGI app on uvicorn (httptools when installed, else h11) on a free
127.0.0.1 port, in the test's own event loop, and tears it down at the end of
the test. ``HTTPClient`` is a deliberately small raw Streamable HTTP client on
httpx: it shows exactly what is on the wire (status codes, headers, SSE
fields) and validates every JSON-RPC message it receives against the schema of
the session's revision.

``demo_server()`` builds the server the tests talk to.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import pytest
import uvicorn
from pydantic import BaseModel

from mcpkit import Context, MCPServer, PromptMessage
from mcpkit.transports.asgi import ASGIApp, end_all_streams
from tests import schema

TIMEOUT = 10.0  # every wait in these tests is bounded
BOTH = "application/json, text/event-stream"


# -- the demo server ---------------------------------------------------------------------------------


class Answer(BaseModel):
    name: str


def demo_server(**options: Any) -> MCPServer:
    server = MCPServer(name="http-demo", version="1.0.0", **options)
    finished: list[int] = []
    server.finished = finished  # type: ignore[attr-defined]  # what `steps` completed, for tests

    @server.tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool
    async def work(steps: int, ctx: Context) -> str:
        """Report progress and log each step."""
        for i in range(1, steps + 1):
            await ctx.progress(i, steps, f"step {i}")
            await ctx.info(f"did step {i}")
        return f"worked {steps}"

    @server.tool
    async def ask(ctx: Context) -> str:
        """Elicit a name."""
        result = await ctx.elicit("What is your name?", Answer)
        if result.action == "accept" and result.content is not None:
            return f"hello {result.content.name}"
        return f"no name ({result.action})"

    @server.tool
    async def reconnect(ctx: Context) -> str:
        """Log, close the SSE stream (SEP-1699), keep working, answer by replay."""
        await ctx.info("before close")
        await ctx.close_sse_stream()
        await asyncio.sleep(0.2)
        await ctx.info("after close")
        return "reconnected"

    @server.tool
    async def sleepy(seconds: float, ctx: Context) -> str:
        """Announce the start with progress, then sleep."""
        await ctx.progress(0, 1, "started")
        await asyncio.sleep(seconds)
        return "slept"

    @server.tool
    async def steps(count: int, delay: float, ctx: Context) -> str:
        """Report progress ``count`` times, ``delay`` seconds apart; count finished runs."""
        for i in range(1, count + 1):
            await ctx.progress(i, count, f"step {i}")
            await asyncio.sleep(delay)
        finished.append(count)
        return f"{count} steps"

    @server.tool
    async def boom() -> str:
        """Fail with an internal error."""
        raise RuntimeError("secret internal detail")

    @server.resource("demo://greeting", mime_type="text/plain", description="A greeting.")
    def greeting() -> str:
        return "hello from a resource"

    @server.resource("demo://items/{item_id}", mime_type="application/json", description="An item.")
    def item(item_id: str) -> dict[str, str]:
        return {"id": item_id}

    @server.prompt
    def review(code: str) -> list[PromptMessage]:
        """Ask for a review."""
        return [PromptMessage(role="user", content=f"Review:\n{code}")]

    return server


# -- running an app on uvicorn -----------------------------------------------------------------------


class _TestServer(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # the test process keeps its own handlers
        yield


@contextlib.asynccontextmanager
async def run_app(app: ASGIApp | Any) -> AsyncIterator[str]:
    """Serve ``app`` on 127.0.0.1:<free port>; yields the base URL ``http://127.0.0.1:<port>``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = _TestServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(TIMEOUT):
            while not server.started:
                if task.done():
                    task.result()
                    raise RuntimeError("uvicorn stopped before it started")
                await asyncio.sleep(0.005)
        yield f"http://127.0.0.1:{port}"
    finally:
        end_all_streams()
        server.should_exit = True
        try:
            async with asyncio.timeout(TIMEOUT):
                await task
        finally:
            sock.close()


@pytest.fixture
async def serve_app() -> AsyncIterator[Callable[[Any], Awaitable[str]]]:
    """``url = await serve_app(app)``; every server started is stopped after the test."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(app: Any) -> str:
            return await stack.enter_async_context(run_app(app))

        yield start


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        yield client


# -- a raw Streamable HTTP client ---------------------------------------------------------------------


@dataclass
class Event:
    data: str = ""
    event: str = "message"
    id: str | None = None
    retry: int | None = None
    has_data: bool = False

    @property
    def json(self) -> Any:
        return orjson.loads(self.data)


async def sse_events(response: httpx.Response) -> AsyncIterator[Event]:
    """Parse an SSE body (WHATWG event-stream rules, enough for these tests)."""
    event = Event()
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data or event.id is not None or event.retry is not None:
                event.data = "\n".join(data)
                event.has_data = bool(data)
                yield event
            event, data = Event(), []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            event.event = value
        elif name == "id":
            event.id = value
        elif name == "retry":
            event.retry = int(value)


async def next_event(events: AsyncIterator[Event]) -> Event:
    async with asyncio.timeout(TIMEOUT):
        return await anext(events)


async def read_sse(response: httpx.Response, *, until_response: bool = True) -> list[Event]:
    """Every event of a stream, until it ends (or until the first JSON-RPC response)."""
    events: list[Event] = []
    async with asyncio.timeout(TIMEOUT):
        async for event in sse_events(response):
            events.append(event)
            if until_response and event.data:
                msg = event.json
                if (
                    isinstance(msg, dict)
                    and "method" not in msg
                    and ("result" in msg or "error" in msg)
                ):
                    break
    return events


@dataclass
class Exchange:
    """What one POST produced."""

    status: int
    headers: httpx.Headers
    messages: list[Any] = field(default_factory=list)  # JSON-RPC messages, in order
    events: list[Event] = field(default_factory=list)  # raw SSE events (empty for JSON)

    @property
    def response(self) -> dict[str, Any]:
        answers = [m for m in self.messages if isinstance(m, dict) and "method" not in m]
        assert len(answers) == 1, self.messages
        return answers[0]

    @property
    def result(self) -> dict[str, Any]:
        resp = self.response
        assert "result" in resp, resp
        result: dict[str, Any] = resp["result"]
        return result

    def notifications(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if isinstance(m, dict) and m.get("method") == method]


class HTTPClient:
    """A raw MCP client over Streamable HTTP for one session."""

    def __init__(
        self, http: httpx.AsyncClient, url: str, *, protocol_version: str = "2025-11-25"
    ) -> None:
        self.http = http
        self.url = url
        self.protocol_version = protocol_version
        self.session_id: str | None = None
        self._ids = iter(range(1, 1_000_000))
        self._methods: dict[Any, str] = {}

    def headers(self, accept: str = BOTH, **extra: str) -> dict[str, str]:
        headers = {"accept": accept, "content-type": "application/json"}
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
            headers["mcp-protocol-version"] = self.protocol_version
        headers.update(extra)
        return headers

    def next_id(self) -> int:
        return next(self._ids)

    def validate(self, msg: Any, revision: str | None = None) -> None:
        if not isinstance(msg, dict):
            return
        method = None
        if "method" not in msg:
            method = self._methods.get(msg.get("id"))
        schema.validate_message(msg, revision or self.protocol_version, request_method=method)

    async def initialize(
        self, capabilities: dict[str, Any] | None = None, accept: str = BOTH
    ) -> Exchange:
        ex = await self.post(
            {
                "jsonrpc": "2.0",
                "id": self.next_id(),
                "method": "initialize",
                "params": {
                    "protocolVersion": self.protocol_version,
                    "capabilities": capabilities or {},
                    "clientInfo": {"name": "raw-test-client", "version": "0.0.1"},
                },
            },
            accept=accept,
        )
        assert ex.status == 200, ex
        self.session_id = ex.headers["mcp-session-id"]
        self.protocol_version = ex.result["protocolVersion"]
        notified = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert notified.status == 202
        return ex

    @contextlib.asynccontextmanager
    async def stream(
        self, message: Any, *, accept: str = BOTH, headers: dict[str, str] | None = None
    ) -> AsyncIterator[httpx.Response]:
        """POST and keep the response open (for SSE tests that read step by step)."""
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict) and "method" in item and "id" in item:
                self._methods[item["id"]] = item["method"]
        hdrs = self.headers(accept)
        hdrs.update(headers or {})
        async with self.http.stream(
            "POST", self.url, content=orjson.dumps(message), headers=hdrs
        ) as resp:
            yield resp

    async def post(
        self, message: Any, *, accept: str = BOTH, headers: dict[str, str] | None = None
    ) -> Exchange:
        async with self.stream(message, accept=accept, headers=headers) as resp:
            ex = Exchange(resp.status_code, resp.headers)
            ctype = resp.headers.get("content-type", "")
            if ctype.startswith("text/event-stream"):
                ex.events = await read_sse(resp, until_response=False)
                ex.messages = [e.json for e in ex.events if e.data]
            elif ctype.startswith("application/json"):
                ex.messages = [orjson.loads(await resp.aread())]
            else:
                await resp.aread()
        if resp.status_code == 200:
            revision = (headers or {}).get("mcp-protocol-version")  # a test overriding the revision
            for msg in ex.messages:
                for item in msg if isinstance(msg, list) else [msg]:
                    self.validate(item, revision)
        return ex

    async def request(
        self, method: str, params: dict[str, Any] | None = None, **kw: Any
    ) -> Exchange:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id(), "method": method}
        if params is not None:
            msg["params"] = params
        return await self.post(msg, **kw)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, **kw: Any
    ) -> Exchange:
        return await self.request("tools/call", {"name": name, "arguments": arguments or {}}, **kw)

    async def delete(self) -> httpx.Response:
        return await self.http.delete(self.url, headers=self.headers())


@pytest.fixture
def make_client(http: httpx.AsyncClient) -> Callable[..., HTTPClient]:
    def make(url: str, **kw: Any) -> HTTPClient:
        return HTTPClient(http, url, **kw)

    return make
