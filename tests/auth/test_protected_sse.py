"""A protected legacy HTTP+SSE (2024-11-05) server over real sockets."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from mcpkit.auth import parse_www_authenticate
from tests.auth.protected_support import (
    ISSUER,
    bearer,
    error_answer,
    protected,
    scoped_server,
)
from tests.transports.conftest import TIMEOUT, next_event, run_app, sse_events
from tests.transports.test_sse_legacy import LegacyClient

RESOURCE = "https://mcp.example.com/sse"
METADATA_URL = "https://mcp.example.com/.well-known/oauth-protected-resource/sse"


class AuthLegacyClient(LegacyClient):
    token: str = ""

    async def post(self, message: Any, **headers: str) -> httpx.Response:
        return await super().post(message, **{**bearer(self.token), **headers})


@contextlib.asynccontextmanager
async def connect(
    http: httpx.AsyncClient, base: str, token: str
) -> AsyncIterator[AuthLegacyClient]:
    headers = {"accept": "text/event-stream", **bearer(token)}
    async with http.stream("GET", base + "/sse", headers=headers) as resp:
        assert resp.status_code == 200
        events = sse_events(resp)
        first = await next_event(events)
        assert first.event == "endpoint"
        client = AuthLegacyClient(http, base, events, first.data)
        client.token = token
        yield client


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        yield client


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, Any]]:
    server = scoped_server()
    async with run_app(server.sse_app(auth=protected(resource=RESOURCE))) as base:
        yield base, server


async def test_metadata_names_the_sse_resource(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, _ = served
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/sse",
    ):
        resp = await http.get(base + path)
        assert resp.status_code == 200
        doc = resp.json()
        assert doc["resource"] == RESOURCE and doc["authorization_servers"] == [ISSUER]


async def test_the_stream_and_the_messages_need_a_token(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, server = served
    stream = await http.get(base + "/sse", headers={"accept": "text/event-stream"})
    assert stream.status_code == 401
    assert stream.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{METADATA_URL}", scope="mcp:read mcp:write"'
    )
    bad = await http.get(base + "/sse", headers={"accept": "text/event-stream", **bearer("nope")})
    assert bad.status_code == 401
    assert parse_www_authenticate(bad.headers["www-authenticate"])["error"] == "invalid_token"  # type: ignore[index]
    async with connect(http, base, "alice-rw") as alice:
        await alice.initialize()
        anonymous = await http.post(
            base + alice.endpoint,
            content=b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"whoami"}}',
            headers={"content-type": "application/json"},
        )
        assert anonymous.status_code == 401
        error_answer(anonymous, "2024-11-05")
    assert server.ran == []


async def test_ctx_auth_scopes_and_the_session_owner(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, server = served
    async with connect(http, base, "alice-r") as alice:
        await alice.initialize(revision="2025-11-25")  # structured results over the old transport
        who = await alice.request("tools/call", {"name": "whoami", "arguments": {}})
        assert who["result"]["structuredContent"]["subject"] == "alice"
        assert who["result"]["structuredContent"]["same_everywhere"] is True
        # 403 on the POST itself, before anything runs; nothing arrives on the stream.
        refused = await alice.post(
            {
                "jsonrpc": "2.0",
                "id": 50,
                "method": "tools/call",
                "params": {"name": "write_note", "arguments": {"text": "x"}},
            }
        )
        assert refused.status_code == 403
        challenge = parse_www_authenticate(refused.headers["www-authenticate"])
        assert challenge == {
            "resource_metadata": METADATA_URL,
            "error": "insufficient_scope",
            "scope": "mcp:read mcp:write",
            "error_description": "this request needs the scopes mcp:write",
        }
        assert error_answer(refused, "2025-11-25")["id"] == 50
        # Bob's valid token on Alice's session id: as if the session did not exist.
        stolen = await http.post(
            base + alice.endpoint,
            content=b'{"jsonrpc":"2.0","id":51,"method":"tools/call","params":{"name":"whoami"}}',
            headers={"content-type": "application/json", **bearer("bob-rw")},
        )
        assert stolen.status_code == 404
        assert "Session not found" in stolen.text
        # Alice's stream got nothing from either: her next answer is the next message.
        again = await alice.request("tools/call", {"name": "whoami", "arguments": {}})
        assert again["result"]["structuredContent"]["subject"] == "alice"
    assert server.ran == ["whoami", "whoami"]
