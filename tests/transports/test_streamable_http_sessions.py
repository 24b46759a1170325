"""Streamable HTTP: idle expiry, the session cap, memory per session, Origin/Host validation."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from types import SimpleNamespace
from typing import Any

import httpx
import orjson
import pytest

from mcpkit.errors import ConfigurationError
from mcpkit.transports import http_sessions
from mcpkit.transports.security import RequestGuard
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.transports.conftest import TIMEOUT, HTTPClient, demo_server

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


async def until(predicate: Any) -> None:
    async with asyncio.timeout(TIMEOUT):
        while not predicate():
            await asyncio.sleep(0.01)


# -- idle expiry and the cap ---------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The clock of session expiry, advanced by hand (no sleeping, no timing races)."""
    fake = FakeClock()
    monkeypatch.setattr(http_sessions, "clock", fake)
    return fake


async def test_idle_sessions_expire(serve_app: Any, make_client: Any, clock: FakeClock) -> None:
    server = demo_server()
    app = StreamableHTTPApp(server, session_idle_timeout=60)
    url = await serve_app(app) + "/mcp"
    a: HTTPClient = make_client(url)
    b: HTTPClient = make_client(url)
    await a.initialize()
    await b.initialize()
    clock.now += 59
    assert (await a.request("ping")).status == 200
    clock.now += 59  # b idle for 118 s, a for 59 s
    c: HTTPClient = make_client(url)
    await c.initialize()  # this lookup sweeps: b expires
    assert len(app) == 2
    assert (await b.request("ping")).status == 404
    clock.now += 7  # a idle for 66 s, c for 7 s
    assert (await a.request("ping")).status == 404  # expired on lookup
    assert (await c.request("ping")).status == 200
    assert len(app) == 1
    assert [s.session_id for s in server.sessions()] == [c.session_id]


async def test_activity_keeps_a_session_alive_and_an_open_stream_counts_as_activity(
    serve_app: Any, make_client: Any, clock: FakeClock
) -> None:
    app = StreamableHTTPApp(demo_server(), session_idle_timeout=60)
    url = await serve_app(app) + "/mcp"
    c: HTTPClient = make_client(url)
    await c.initialize()
    for _ in range(4):  # 160 s in all, never 60 s idle
        clock.now += 40
        assert (await c.request("ping")).status == 200
    entry = next(iter(app.sessions.values()))
    async with c.http.stream("GET", url, headers=c.headers("text/event-stream")) as resp:
        assert resp.status_code == 200
        await until(lambda: entry.busy == 1)
        clock.now += 600  # idle for ten minutes, but streaming
        other: HTTPClient = make_client(url)
        await other.initialize()  # sweeps: the streaming session stays
        assert (await c.request("ping")).status == 200
    await until(lambda: entry.busy == 0)
    clock.now += 61
    assert (await c.request("ping")).status == 404


async def test_session_cap_evicts_the_least_recently_used_idle_session(
    serve_app: Any, make_client: Any
) -> None:
    app = StreamableHTTPApp(demo_server(), max_sessions=2)
    url = await serve_app(app) + "/mcp"
    a: HTTPClient = make_client(url)
    b: HTTPClient = make_client(url)
    c: HTTPClient = make_client(url)
    await a.initialize()
    await b.initialize()
    assert (await a.request("ping")).status == 200  # b is now the least recently used
    await c.initialize()
    assert len(app) == 2
    assert (await b.request("ping")).status == 404
    assert (await a.request("ping")).status == 200
    assert (await c.request("ping")).status == 200


async def test_session_cap_answers_503_when_every_session_is_busy(
    serve_app: Any, make_client: Any
) -> None:
    app = StreamableHTTPApp(demo_server(), max_sessions=1)
    url = await serve_app(app) + "/mcp"
    a: HTTPClient = make_client(url)
    await a.initialize()
    async with a.http.stream("GET", url, headers=a.headers("text/event-stream")) as resp:
        assert resp.status_code == 200
        await until(lambda: next(iter(app.sessions.values())).busy == 1)
        b: HTTPClient = make_client(url)
        refused = await b.post(INIT)
        assert refused.status == 503
        assert "mcp-session-id" not in refused.headers
    entry = next(iter(app.sessions.values()))
    await until(lambda: entry.busy == 0)
    await b.initialize()  # idle again: a is evicted
    assert (await a.request("ping")).status == 404


# -- memory ------------------------------------------------------------------------------------------


async def _asgi_post(
    app: StreamableHTTPApp, body: bytes, headers: list[tuple[bytes, bytes]]
) -> list[Any]:
    sent: list[Any] = []
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "root_path": "",
        "headers": [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json"),
            *headers,
        ],
        "server": ("127.0.0.1", 8000),
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


async def test_an_idle_stateful_session_costs_less_than_8_kib() -> None:
    """The target is <= 4 KiB per idle session; this bound catches regressions."""
    app = StreamableHTTPApp(demo_server())
    init = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {}, "roots": {"listChanged": True}},
                "clientInfo": {"name": "memory-test-client", "version": "1.0.0"},
            },
        }
    )
    initialized = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'

    async def open_session() -> None:
        sent = await _asgi_post(app, init, [])
        sid = dict(sent[0]["headers"])[b"mcp-session-id"]
        await _asgi_post(app, initialized, [(b"mcp-session-id", sid)])

    for _ in range(20):  # warm up caches and lazily built structures
        await open_session()
    count = 500
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(count):
            await open_session()
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    per_session = grown / count
    print(f"\nbytes per idle stateful session: {per_session:.0f}")
    assert len(app) == count + 20
    assert 0 < per_session < 8192


# -- Origin and Host validation (DNS rebinding) ---------------------------------------------------------


async def test_dns_rebinding_is_refused_and_the_own_host_is_served(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    url = await serve_app(StreamableHTTPApp(demo_server())) + "/mcp"
    own = url.split("/")[2]
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    evil = await http.post(
        url,
        content=orjson.dumps(INIT),
        headers={**base, "host": "evil.example.com", "origin": "http://evil.example.com"},
    )
    assert evil.status_code == 421
    assert "mcp-session-id" not in evil.headers
    ok = await http.post(
        url, content=orjson.dumps(INIT), headers={**base, "host": own, "origin": f"http://{own}"}
    )
    assert ok.status_code == 200
    sid = ok.headers["mcp-session-id"]
    note = await http.post(
        url,
        content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        headers={**base, "host": own, "origin": f"http://{own}", "mcp-session-id": sid},
    )
    assert note.status_code == 202
    # a foreign Origin with the right Host is 403 (2025-11-25 transports: MUST)
    bad_origin = await http.post(
        url, content=b"{}", headers={**base, "origin": "https://evil.example.com"}
    )
    assert bad_origin.status_code == 403
    assert bad_origin.json()["error"]["message"].startswith("Forbidden")
    for method in ("GET", "DELETE"):
        resp = await http.request(
            method, url, headers={"host": "evil.example.com", "mcp-session-id": sid}
        )
        assert resp.status_code == 421
    for origin in ("http://localhost:5173", "https://127.0.0.1", "http://[::1]:9"):
        resp = await http.post(url, content=orjson.dumps(INIT), headers={**base, "origin": origin})
        assert resp.status_code == 200, origin
    port = own.split(":")[1]
    assert (
        await http.post(
            url, content=orjson.dumps(INIT), headers={**base, "host": f"localhost:{port}"}
        )
    ).status_code == 200


async def test_allowed_hosts_and_origins_are_configurable(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    app = StreamableHTTPApp(
        demo_server(),
        allowed_hosts=["mcp.example.com", "api.example.com:*"],
        allowed_origins=["https://app.example.com"],
    )
    url = await serve_app(app) + "/mcp"
    base = {"content-type": "application/json", "accept": "application/json"}
    body = orjson.dumps(INIT)
    assert (
        await http.post(url, content=body, headers=base)
    ).status_code == 421  # 127.0.0.1:port not listed
    assert (
        await http.post(url, content=body, headers={**base, "host": "mcp.example.com"})
    ).status_code == 200
    assert (
        await http.post(url, content=body, headers={**base, "host": "mcp.example.com:8080"})
    ).status_code == 421
    assert (
        await http.post(url, content=body, headers={**base, "host": "api.example.com:8080"})
    ).status_code == 200
    good = {**base, "host": "mcp.example.com", "origin": "https://app.example.com"}
    assert (await http.post(url, content=body, headers=good)).status_code == 200
    for origin in (
        "http://app.example.com",
        "https://app.example.com:8443",
        "http://localhost:3000",
        "null",
    ):
        resp = await http.post(url, content=body, headers={**good, "origin": origin})
        assert resp.status_code == 403, origin

    open_url = (
        await serve_app(
            StreamableHTTPApp(demo_server(), allowed_hosts=["*"], allowed_origins=["*"])
        )
        + "/mcp"
    )
    wild = {**base, "host": "anything.example", "origin": "https://elsewhere.example"}
    assert (await http.post(open_url, content=body, headers=wild)).status_code == 200


def test_guard_defaults_when_not_bound_to_localhost() -> None:
    guard = RequestGuard()
    public = ("10.1.2.3", 443)
    # Names are unknown: a host name is refused (fail closed), IP literals are served.
    assert guard.check(public, b"mcp.example.com", None) == (
        421,
        "Misdirected request: host 'mcp.example.com' is not served here",
    )
    assert guard.check(public, b"10.1.2.3:443", b"https://10.1.2.3:443") is None  # same origin
    verdict = guard.check(public, b"10.1.2.3", b"https://evil.example.com")
    assert verdict is not None and verdict[0] == 403
    local = ("127.0.0.1", 8000)
    assert guard.check(local, None, None) is None  # no Host: not a browser, not a rebinding
    assert guard.check(local, b"[::1]:8000", None) is None
    assert guard.check(("::1", 8000), b"evil.example.com", None) == (
        421,
        "Misdirected request: host 'evil.example.com' is not served here",
    )
    with pytest.raises(TypeError):
        RequestGuard(allowed_hosts="localhost")  # a str is a Sequence[str]: refused at run time
    with pytest.raises(ConfigurationError):
        RequestGuard(allowed_origins=["localhost"])


def test_the_session_table_expires_in_least_recently_used_order(clock: FakeClock) -> None:
    server = demo_server()
    settings = SimpleNamespace(event_store=None, keepalive_interval=None, retry_field=b"")
    table = http_sessions.SessionTable(idle_timeout=10, max_sessions=3)
    s0, s1, s2 = (
        http_sessions.HTTPSession(settings, sid, server.create_session(session_id=sid))
        for sid in ("s0", "s1", "s2")
    )
    for entry in (s0, s1, s2):
        table.add(entry)
    start = clock.now
    clock.now = start + 5
    table.touch(s0)  # a long request of s0 just ended
    clock.now = start + 9
    table.touch(s2)
    clock.now = start + 12
    table.sweep(clock.now)
    assert [e.sid for e in table.values()] == ["s0", "s2"]  # s1 idle for 12 s
    s0.busy = 1  # streaming: never expires, counts as used
    clock.now = start + 30
    table.sweep(clock.now)
    assert [e.sid for e in table.values()] == ["s0"]
    assert s0.last_seen == clock.now
    assert s2.session.state.name == "CLOSED"
