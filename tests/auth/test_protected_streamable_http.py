"""A protected Streamable HTTP server over real sockets: metadata, 401/403/503, auth info
in tools, sessions bound to their principal; stateful, stateless and 2026-07-28."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from mcpkit.auth import parse_www_authenticate
from mcpkit.auth.resource_server import ProtectedApp
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests import schema
from tests.auth.protected_support import (
    DOWN,
    ISSUER,
    METADATA_URL,
    RESOURCE,
    bearer,
    client_with,
    error_answer,
    initialize_message,
    protected,
    raw_post,
    scoped_server,
)
from tests.transports.conftest import BOTH, TIMEOUT, HTTPClient, run_app

MISSING = f'Bearer resource_metadata="{METADATA_URL}", scope="mcp:read mcp:write"'
INVALID = (
    f'Bearer resource_metadata="{METADATA_URL}", error="invalid_token", '
    'scope="mcp:read mcp:write", '
    'error_description="the access token is not valid for this resource"'
)
EXPECTED_METADATA = {
    "resource": RESOURCE,
    "authorization_servers": [ISSUER],
    "bearer_methods_supported": ["header"],
    "scopes_supported": ["mcp:read", "mcp:write"],
    "resource_name": "Protected test server",
    "resource_documentation": "https://docs.example.com/mcp",
}


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        yield client


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, Any]]:
    """(base URL, server) of a stateful protected app."""
    server = scoped_server()
    app = server.http_app(auth=protected(resource_documentation="https://docs.example.com/mcp"))
    async with run_app(app) as base:
        yield base, server


# -- metadata ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]
)
async def test_metadata_is_served_without_a_token_at_both_urls(
    served: tuple[str, Any], http: httpx.AsyncClient, path: str
) -> None:
    base, _ = served
    resp = await http.get(base + path)
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "application/json"
    assert resp.headers["access-control-allow-origin"] == "*"
    assert resp.json() == EXPECTED_METADATA
    head = await http.head(base + path)
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == len(resp.content)


async def test_metadata_answers_a_cors_preflight_and_refuses_other_methods(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, _ = served
    url = base + "/.well-known/oauth-protected-resource/mcp"
    pre = await http.options(
        url,
        headers={
            "origin": "https://app.example.com",
            "access-control-request-method": "GET",
            "access-control-request-headers": "mcp-protocol-version",
        },
    )
    assert pre.status_code == 204
    assert pre.headers["access-control-allow-origin"] == "*"
    assert "GET" in pre.headers["access-control-allow-methods"]
    assert pre.headers["access-control-allow-headers"] == "*"
    post = await http.post(url, content=b"{}")
    assert post.status_code == 405
    assert post.headers["allow"] == "GET, HEAD, OPTIONS"


# -- 401, 400, 503 ---------------------------------------------------------------------------------


async def test_no_token_gets_401_with_the_metadata_url_and_scopes(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, server = served
    url = base + "/mcp"
    for resp in (
        await raw_post(http, url, initialize_message()),
        await http.get(url, headers={"accept": "text/event-stream"}),
        await http.delete(url, headers={"mcp-session-id": "whatever"}),
        # Another scheme is no bearer token at all (RFC 6750 § 3.1: no error code).
        await raw_post(http, url, initialize_message(), {"authorization": "Basic YTpi"}),
    ):
        assert resp.status_code == 401
        assert resp.headers["www-authenticate"] == MISSING
        assert error_answer(resp)["error"]["message"].startswith("Unauthorized")
    assert server.ran == []


@pytest.mark.parametrize(
    "authorization",
    ["Bearer not-a-known-token", "bearer not-a-known-token", "BEARER  not-a-known-token"],
)
async def test_a_bad_token_gets_401_invalid_token(
    served: tuple[str, Any], http: httpx.AsyncClient, authorization: str
) -> None:
    base, server = served
    resp = await raw_post(
        http,
        base + "/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami"}},
        {"authorization": authorization},
    )
    assert resp.status_code == 401
    assert resp.headers["www-authenticate"] == INVALID
    challenge = parse_www_authenticate(resp.headers["www-authenticate"])
    assert challenge is not None and challenge["error"] == "invalid_token"
    assert "not-a-known-token" not in resp.text
    error_answer(resp)
    assert server.ran == []


async def test_a_malformed_token_is_invalid_and_a_query_token_is_refused(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, server = served
    bad = await raw_post(
        http, base + "/mcp", initialize_message(), {"authorization": 'Bearer a"b c'}
    )
    assert bad.status_code == 401
    assert parse_www_authenticate(bad.headers["www-authenticate"]) == {
        "resource_metadata": METADATA_URL,
        "error": "invalid_token",
        "scope": "mcp:read mcp:write",
        "error_description": "the access token is malformed",
    }
    # MCP authorization § token requirements: never in the query string (RFC 6750 § 2.3).
    for headers in ({}, bearer("alice-rw")):
        query = await raw_post(
            http, base + "/mcp?access_token=alice-rw", initialize_message(), headers
        )
        assert query.status_code == 400
        assert query.headers["www-authenticate"] == 'Bearer error="invalid_request"'
    # A parameter merely ending in the name is no token.
    other = await raw_post(
        http, base + "/mcp?no_access_token=1", initialize_message(), bearer("alice-rw")
    )
    assert other.status_code == 200
    twice = await http.post(
        base + "/mcp",
        content=orjson.dumps(initialize_message()),
        headers=[
            ("accept", BOTH),
            ("content-type", "application/json"),
            ("authorization", "Bearer alice-rw"),
            ("authorization", "Bearer bob-rw"),
        ],
    )
    assert twice.status_code == 400
    assert server.ran == []


async def test_an_unreachable_verifier_is_503_not_401(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, server = served
    resp = await raw_post(http, base + "/mcp", initialize_message(), bearer(DOWN))
    assert resp.status_code == 503
    assert "www-authenticate" not in resp.headers
    assert resp.headers["retry-after"] == "5"
    assert error_answer(resp)["error"]["code"] == -32603
    assert server.ran == []


# -- a good token ----------------------------------------------------------------------------------


async def test_a_good_token_reaches_the_tool_as_ctx_auth(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, server = served
    client = client_with(http, base + "/mcp", "alice-rw")
    await client.initialize()
    ex = await client.call_tool("whoami")
    assert ex.status == 200
    assert ex.result["structuredContent"] == {
        "subject": "alice",
        "client_id": "test-client",
        "scopes": ["mcp:read", "mcp:write"],
        "same_everywhere": True,
        "token_seen": "alice-rw",
    }
    ((mw_auth, mw_auth_info),) = server.seen_by_middleware
    assert mw_auth is mw_auth_info and mw_auth.subject == "alice"
    # GET stream and DELETE with the token work as on an unprotected server.
    async with http.stream(
        "GET", base + "/mcp", headers={**client.headers("text/event-stream")}
    ) as stream:
        assert stream.status_code == 200
    assert (await client.delete()).status_code == 204


# -- 403 insufficient_scope -------------------------------------------------------------------------


async def test_a_tool_needing_a_scope_the_token_lacks_gets_403_and_does_not_run(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, server = served
    reader = client_with(http, base + "/mcp", "alice-r")
    await reader.initialize()
    listed = await reader.request("tools/list")
    assert "write_note" not in [t["name"] for t in listed.result["tools"]]
    ex = await reader.call_tool("write_note", {"text": "hi"})
    assert ex.status == 403
    assert ex.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{METADATA_URL}", error="insufficient_scope", '
        'scope="mcp:read mcp:write", error_description="this request needs the scopes mcp:write"'
    )
    (answer,) = ex.messages
    schema.validate_message(answer, "2025-11-25")
    assert answer["id"] is not None
    assert answer["error"]["data"] == {"requiredScopes": ["mcp:write"]}
    # The stepped-up token of the same subject works at once, on the same session.
    writer = client_with(http, base + "/mcp", "alice-rw")
    writer.session_id, writer.protocol_version = reader.session_id, reader.protocol_version
    done = await writer.call_tool("write_note", {"text": "hi"})
    assert done.result["content"][0]["text"] == "noted hi"
    assert server.ran == ["write_note hi"]


async def test_resource_wide_required_scopes_refuse_every_request(
    http: httpx.AsyncClient,
) -> None:
    server = scoped_server()
    app = server.http_app(auth=protected(required_scopes=["mcp:read"]))
    async with run_app(app) as base:
        resp = await raw_post(http, base + "/mcp", initialize_message(), bearer("nobody"))
        assert resp.status_code == 403
        assert parse_www_authenticate(resp.headers["www-authenticate"]) == {
            "resource_metadata": METADATA_URL,
            "error": "insufficient_scope",
            "scope": "mcp:read",
            "error_description": "this request needs the scopes mcp:read",
        }
        error_answer(resp)
        ok = await raw_post(http, base + "/mcp", initialize_message(), bearer("alice-r"))
        assert ok.status_code == 200


# -- sessions belong to their principal -------------------------------------------------------------


async def test_another_subjects_token_cannot_use_a_session(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, server = served
    url = base + "/mcp"
    alice = client_with(http, url, "alice-rw")
    await alice.initialize()
    sid = alice.session_id
    assert sid is not None
    mallory = client_with(http, url, "bob-rw")
    mallory.session_id, mallory.protocol_version = sid, alice.protocol_version
    post = await mallory.call_tool("whoami")
    get = await http.get(url, headers=mallory.headers("text/event-stream"))
    delete = await http.delete(url, headers=mallory.headers())
    for status, text in (
        (post.status, orjson.dumps(post.messages).decode()),
        (get.status_code, get.text),
        (delete.status_code, delete.text),
    ):
        assert status == 404
        assert "Session not found" in text
        assert "alice" not in text
    assert server.ran == []
    # Alice's session is untouched, and a refreshed token of hers still fits it.
    assert (await alice.call_tool("whoami")).result["structuredContent"]["subject"] == "alice"
    refreshed = client_with(http, url, "alice-rw-2")
    refreshed.session_id, refreshed.protocol_version = sid, alice.protocol_version
    assert (await refreshed.call_tool("whoami")).status == 200
    assert server.ran == ["whoami", "whoami"]


# -- stateless mode and 2026-07-28 ------------------------------------------------------------------


async def test_stateless_mode_is_protected_the_same_way(http: httpx.AsyncClient) -> None:
    server = scoped_server()
    async with run_app(server.http_app(stateless=True, auth=protected())) as base:
        url = base + "/mcp"
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}}
        missing = await raw_post(http, url, call)
        assert missing.status_code == 401 and missing.headers["www-authenticate"] == MISSING
        ok = await raw_post(
            http, url, call, {**bearer("bob-rw"), "mcp-protocol-version": "2025-11-25"}
        )
        assert ok.status_code == 200
        answer = ok.json()
        schema.validate_message(answer, "2025-11-25", request_method="tools/call")
        assert answer["result"]["structuredContent"]["subject"] == "bob"
        write = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "write_note", "arguments": {"text": "x"}},
        }
        refused = await raw_post(http, url, write, bearer("alice-r"))
        assert refused.status_code == 403
        assert error_answer(refused)["id"] == 3
        assert server.ran == ["whoami"]


V26 = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V26,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "auth-test", "version": "0"},
}


def call_2026(rid: int, name: str, **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": params.pop("arguments", {}), "_meta": META, **params},
    }


async def post_2026(
    http: httpx.AsyncClient, url: str, msg: dict[str, Any], token: str | None
) -> httpx.Response:
    headers = {
        "mcp-protocol-version": V26,
        "mcp-method": "tools/call",
        "mcp-name": msg["params"]["name"],
    }
    if token is not None:
        headers.update(bearer(token))
    return await raw_post(http, url, msg, headers)


def answer_2026(resp: httpx.Response) -> dict[str, Any]:
    if resp.headers["content-type"].startswith("text/event-stream"):
        datas = [line[6:] for line in resp.text.splitlines() if line.startswith("data: ")]
        answer: dict[str, Any] = orjson.loads(datas[-1])
    else:
        answer = resp.json()
    schema.validate_message(answer, V26, request_method="tools/call")
    return answer


async def test_2026_requests_are_protected_and_see_ctx_auth(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, server = served
    url = base + "/mcp"
    missing = await post_2026(http, url, call_2026(1, "whoami"), None)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == MISSING
    ok = await post_2026(http, url, call_2026(2, "whoami"), "alice-rw")
    assert ok.status_code == 200
    assert answer_2026(ok)["result"]["structuredContent"]["subject"] == "alice"
    refused = await post_2026(
        http, url, call_2026(3, "write_note", arguments={"text": "x"}), "alice-r"
    )
    assert refused.status_code == 403
    assert parse_www_authenticate(refused.headers["www-authenticate"])["scope"] == (  # type: ignore[index]
        "mcp:read mcp:write"
    )
    assert error_answer(refused, V26)["id"] == 3
    assert server.ran == ["whoami"]


async def test_a_2026_request_state_of_one_subject_is_refused_for_another(
    served: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    base, _ = served
    url = base + "/mcp"
    first = answer_2026(await post_2026(http, url, call_2026(1, "ask"), "alice-rw"))
    assert first["result"]["resultType"] == "input_required"
    state = first["result"]["requestState"]
    answers = {"elicitation": {"action": "accept", "content": {"name": "Mallory"}}}
    stolen = answer_2026(
        await post_2026(
            http,
            url,
            call_2026(2, "ask", requestState=state, inputResponses=answers),
            "bob-rw",
        )
    )
    assert stolen["error"]["code"] == -32602
    assert "another principal" in stolen["error"]["message"]
    assert "Mallory" not in orjson.dumps(stolen).decode()
    answers = {"elicitation": {"action": "accept", "content": {"name": "Ada"}}}
    done = answer_2026(
        await post_2026(
            http,
            url,
            call_2026(3, "ask", requestState=state, inputResponses=answers),
            "alice-rw-2",
        )
    )
    assert done["result"]["content"][0]["text"] == "hello Ada"


# -- wiring: MCPServer(auth=...), the unprotected path ----------------------------------------------


async def test_the_servers_own_auth_protects_its_apps_by_default(http: httpx.AsyncClient) -> None:
    server = scoped_server(auth=protected())
    app = server.http_app()
    assert isinstance(app, ProtectedApp) and isinstance(app.app, StreamableHTTPApp)
    assert app.path == "/mcp"  # the wrapped app's attributes stay reachable
    async with run_app(app) as base:
        resp = await raw_post(http, base + "/mcp", initialize_message())
        assert resp.status_code == 401 and resp.headers["www-authenticate"] == MISSING
    other = protected(resource="http://127.0.0.1:9/other")
    overridden = server.http_app(auth=other)
    assert isinstance(overridden, ProtectedApp) and overridden.resource is other


async def test_an_unprotected_app_is_not_wrapped_and_needs_no_token(
    http: httpx.AsyncClient,
) -> None:
    server = scoped_server()
    app = server.http_app()
    assert type(app) is StreamableHTTPApp
    async with run_app(app) as base:
        meta = await http.get(base + "/.well-known/oauth-protected-resource")
        assert meta.status_code == 404
        client = HTTPClient(http, base + "/mcp")
        await client.initialize()
        ex = await client.call_tool("write_note", {"text": "free"})
        assert ex.result["content"][0]["text"] == "noted free"


def test_the_metadata_url_inserts_the_resource_path() -> None:
    auth = protected(resource="https://mcp.example.com/api/mcp")
    assert auth.resource_metadata_url == (
        "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp"
    )
    assert auth.metadata_paths("/mcp") == {
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/api/mcp",
        "/.well-known/oauth-protected-resource/mcp",
    }
