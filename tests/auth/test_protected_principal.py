"""Who a token speaks for: tokens without a usable string ``sub`` never share a principal.

Real JWTs (signed here, their keys served by a real JWKS endpoint) of two different
users in each shape a ``sub`` can take: numeric, a list, empty, or absent with and
without the same ``client_id``. A malformed ``sub`` is refused (401 invalid_token);
a token without one is its own principal, so the other user's token is never served
on its session (404) nor accepted with its ``requestState``: over Streamable HTTP,
legacy SSE and 2026-07-28 on real sockets, for introspection answers and static
tokens too, and across two nodes sharing a real Redis.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from uuid import uuid4

import httpx
import pytest
from joserfc.jwk import RSAKey

from mcpkit.auth import (
    AuthInfo,
    IntrospectionVerifier,
    JWTVerifier,
    StaticTokenVerifier,
    parse_www_authenticate,
)
from mcpkit.stores.redis import RedisStore
from tests.auth.protected_support import (
    bearer,
    client_with,
    initialize_message,
    protected,
    raw_post,
    scoped_server,
)
from tests.auth.test_protected_sse import connect
from tests.auth.test_protected_streamable_http import answer_2026, call_2026, post_2026
from tests.auth.verifier_endpoints import (
    ISSUER,
    RESOURCE,
    IntrospectionEndpoint,
    JWKSEndpoint,
    claims_for,
    sign,
)
from tests.redis_server import RedisServer
from tests.transports.conftest import TIMEOUT, run_app

RSA = RSAKey.generate_key(2048, parameters={"kid": "default"})
SSE_RESOURCE = "https://mcp.example.com/sse"
BAD_SUB = "token claim 'sub' is not a non-empty string"

# Two users' claims per shape; "uid" is where such a provider would name the user.
SHAPES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "numeric-sub": ({"sub": 1001}, {"sub": 1002}),
    "list-sub": ({"sub": ["alice"]}, {"sub": ["bob"]}),
    "empty-sub": ({"sub": ""}, {"sub": ""}),
    "no-sub-same-client": ({"sub": None, "uid": "alice"}, {"sub": None, "uid": "bob"}),
    "no-sub-no-client": (
        {"sub": None, "client_id": None, "uid": "alice"},
        {"sub": None, "client_id": None, "uid": "bob"},
    ),
}
REFUSED = {"numeric-sub", "list-sub", "empty-sub"}


def tokens(shape: str, aud: str = RESOURCE) -> tuple[str, str]:
    a, b = SHAPES[shape]
    return sign(RSA, a, aud=aud), sign(RSA, b, aud=aud)


def invalid_token(resp: httpx.Response) -> str:
    assert resp.status_code == 401, resp.text
    challenge = parse_www_authenticate(resp.headers["www-authenticate"])
    assert challenge is not None and challenge["error"] == "invalid_token"
    return challenge["error_description"]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        yield client


@pytest.fixture
async def jwks_uri() -> AsyncIterator[str]:
    endpoint = JWKSEndpoint(keys=[RSA])
    async with run_app(endpoint.app()) as base:
        yield f"{base}/jwks"


def jwt_auth(jwks_uri: str, resource: str = RESOURCE) -> Any:
    verifier = JWTVerifier(jwks_uri=jwks_uri, issuer=ISSUER, audience=resource)
    return protected(resource=resource, verifier=verifier)


@pytest.fixture
async def jwt_app(jwks_uri: str) -> AsyncIterator[tuple[str, Any]]:
    server = scoped_server()
    async with run_app(server.http_app(auth=jwt_auth(jwks_uri))) as base:
        yield base + "/mcp", server


async def assert_not_on_the_session(
    http: httpx.AsyncClient, url: str, owner: Any, token: str
) -> None:
    """``token`` on ``owner``'s session: 404 for POST, GET and DELETE, as an unknown one."""
    other = client_with(http, url, token)
    other.session_id, other.protocol_version = owner.session_id, owner.protocol_version
    post = await other.call_tool("whoami")
    get = await http.get(url, headers=other.headers("text/event-stream"))
    delete = await http.delete(url, headers=other.headers())
    assert (post.status, get.status_code, delete.status_code) == (404, 404, 404)


# -- Streamable HTTP ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
async def test_streamable_http_serves_no_token_on_another_users_session(
    shape: str, jwt_app: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    url, server = jwt_app
    alice, bob = tokens(shape)
    if shape in REFUSED:
        for token in (alice, bob):
            assert invalid_token(
                await raw_post(http, url, initialize_message(), bearer(token))
            ) == (BAD_SUB)
        assert server.ran == []
        return
    owner = client_with(http, url, alice)
    assert (await owner.initialize()).status == 200
    await assert_not_on_the_session(http, url, owner, bob)
    assert server.ran == []
    # The owner's own token still fits; a token without sub has no subject to show.
    mine = await owner.call_tool("whoami")
    assert mine.status == 200 and mine.result["structuredContent"]["subject"] is None
    assert server.ran == ["whoami"]


async def test_a_string_sub_keeps_its_session_across_refreshed_tokens_but_1_is_not_one(
    jwt_app: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    url, server = jwt_app
    owner = client_with(http, url, sign(RSA, sub="1"))
    await owner.initialize()
    refreshed = client_with(http, url, sign(RSA, sub="1"))  # another jti, same subject
    refreshed.session_id, refreshed.protocol_version = owner.session_id, owner.protocol_version
    assert (await refreshed.call_tool("whoami")).result["structuredContent"]["subject"] == "1"
    numeric = sign(RSA, sub=1)
    resp = await raw_post(
        http,
        url,
        initialize_message(),
        {**bearer(numeric), "mcp-session-id": owner.session_id or ""},
    )
    assert invalid_token(resp) == BAD_SUB
    await assert_not_on_the_session(http, url, owner, sign(RSA, sub="user-2"))
    assert server.ran == ["whoami"]


# -- 2026-07-28: requestState -----------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
async def test_a_request_state_serves_no_other_user(
    shape: str, jwt_app: tuple[str, Any], http: httpx.AsyncClient
) -> None:
    url, _ = jwt_app
    alice, bob = tokens(shape)
    first = await post_2026(http, url, call_2026(1, "ask"), alice)
    if shape in REFUSED:
        assert invalid_token(first) == BAD_SUB
        return
    state = answer_2026(first)["result"]["requestState"]
    answers = {"elicitation": {"action": "accept", "content": {"name": "Mallory"}}}
    stolen = answer_2026(
        await post_2026(
            http, url, call_2026(2, "ask", requestState=state, inputResponses=answers), bob
        )
    )
    assert stolen["error"]["code"] == -32602
    assert "another principal" in stolen["error"]["message"]
    answers = {"elicitation": {"action": "accept", "content": {"name": "Ada"}}}
    done = answer_2026(
        await post_2026(
            http, url, call_2026(3, "ask", requestState=state, inputResponses=answers), alice
        )
    )
    assert done["result"]["content"][0]["text"] == "hello Ada"


# -- legacy HTTP+SSE ----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
async def test_legacy_sse_serves_no_token_on_another_users_stream(
    shape: str, jwks_uri: str, http: httpx.AsyncClient
) -> None:
    server = scoped_server()
    alice, bob = tokens(shape, aud=SSE_RESOURCE)
    async with run_app(server.sse_app(auth=jwt_auth(jwks_uri, SSE_RESOURCE))) as base:
        if shape in REFUSED:
            for token in (alice, bob):
                resp = await http.get(
                    base + "/sse", headers={"accept": "text/event-stream", **bearer(token)}
                )
                assert invalid_token(resp) == BAD_SUB
            return
        async with connect(http, base, alice) as owner:
            await owner.initialize(revision="2025-11-25")
            stolen = await http.post(
                base + owner.endpoint,
                content=b'{"jsonrpc":"2.0","id":51,"method":"tools/call","params":{"name":"whoami"}}',
                headers={"content-type": "application/json", **bearer(bob)},
            )
            assert stolen.status_code == 404
            # The owner's stream got nothing from it: its next answer is its own.
            again = await owner.request("tools/call", {"name": "whoami", "arguments": {}})
            assert again["result"]["structuredContent"]["subject"] is None
    assert server.ran == ["whoami"]


# -- introspection answers, static tokens, verify functions ----------------------------------------


async def test_introspection_answers_follow_the_same_rule(http: httpx.AsyncClient) -> None:
    answers = {
        f"opaque-{shape}-{who}": {
            "active": True,
            "iss": ISSUER,
            "aud": RESOURCE,
            "scope": "mcp:read",
            **claims_for(claims, iat=None, jti=None),
        }
        for shape, pair in SHAPES.items()
        for who, claims in zip(("a", "b"), pair, strict=True)
    }
    endpoint = IntrospectionEndpoint(answers=answers)
    async with run_app(endpoint.app()) as ep_base:
        verifier = IntrospectionVerifier(
            endpoint=f"{ep_base}/introspect",
            audience=RESOURCE,
            client_id=endpoint.client_id,
            client_secret=endpoint.client_secret,
            allow_insecure_http=True,
        )
        server = scoped_server()
        async with run_app(server.http_app(auth=protected(verifier=verifier))) as base:
            url = base + "/mcp"
            for shape in SHAPES:
                alice, bob = f"opaque-{shape}-a", f"opaque-{shape}-b"
                if shape in REFUSED:
                    resp = await raw_post(http, url, initialize_message(), bearer(alice))
                    assert invalid_token(resp) == BAD_SUB, shape
                    continue
                owner = client_with(http, url, alice)
                assert (await owner.initialize()).status == 200
                await assert_not_on_the_session(http, url, owner, bob)
    assert server.ran == []


async def test_static_tokens_without_a_subject_are_each_their_own_principal(
    http: httpx.AsyncClient,
) -> None:
    verifier = StaticTokenVerifier(
        {"ci-token-1": ["mcp:read"], "ci-token-2": ["mcp:read"]}, default_client_id="ci"
    )
    server = scoped_server()
    async with run_app(server.http_app(auth=protected(verifier=verifier))) as base:
        url = base + "/mcp"
        owner = client_with(http, url, "ci-token-1")
        await owner.initialize()
        await assert_not_on_the_session(http, url, owner, "ci-token-2")
        assert (await owner.call_tool("whoami")).status == 200
    assert server.ran == ["whoami"]


async def test_a_verify_function_giving_a_subject_that_is_not_a_string_is_refused(
    http: httpx.AsyncClient,
) -> None:
    subjects: dict[str, Any] = {"t-str": "1", "t-int": 1, "t-list": ["1"], "t-empty": ""}

    async def verify(token: str, resource: str) -> AuthInfo | None:
        return AuthInfo(token=token, subject=subjects[token], issuer=ISSUER, client_id="c")

    server = scoped_server()
    async with run_app(server.http_app(auth=protected(verifier=verify))) as base:
        url = base + "/mcp"
        owner = client_with(http, url, "t-str")
        await owner.initialize()
        for token in ("t-int", "t-list", "t-empty"):
            resp = await raw_post(
                http,
                url,
                initialize_message(),
                {**bearer(token), "mcp-session-id": owner.session_id or ""},
            )
            assert invalid_token(resp) == "the access token's subject is not a non-empty string"
    assert server.ran == []


# -- two nodes sharing a real Redis -------------------------------------------------------------


@pytest.fixture
async def two_nodes(
    jwks_uri: str, redis_server: RedisServer
) -> AsyncIterator[list[tuple[str, Any]]]:
    prefix = f"p-{uuid4().hex[:8]}:"
    nodes: list[tuple[str, Any]] = []
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(2):
            store = RedisStore(redis_server.url, prefix=prefix, node_ttl=1.0)
            server = scoped_server(store=store)
            base = await stack.enter_async_context(
                run_app(server.http_app(auth=jwt_auth(jwks_uri)))
            )
            nodes.append((base + "/mcp", server))
        yield nodes


@pytest.mark.parametrize("shape", SHAPES)
async def test_across_nodes_no_token_is_served_on_another_users_session_or_state(
    shape: str, two_nodes: list[tuple[str, Any]], http: httpx.AsyncClient
) -> None:
    (url_a, server_a), (url_b, server_b) = two_nodes
    alice, bob = tokens(shape)
    if shape in REFUSED:
        for url in (url_a, url_b):
            assert invalid_token(await raw_post(http, url, initialize_message(), bearer(bob))) == (
                BAD_SUB
            )
        return
    owner = client_with(http, url_a, alice)
    assert (await owner.initialize()).status == 200
    # The other node rebuilds the session from its record in Redis: the recorded
    # principal is the token's own, not the client's.
    await assert_not_on_the_session(http, url_b, owner, bob)
    owner.url = url_b
    assert (await owner.call_tool("whoami")).status == 200
    # A requestState issued on one node, stolen on the other.
    first = answer_2026(await post_2026(http, url_a, call_2026(1, "ask"), alice))
    state = first["result"]["requestState"]
    answers = {"elicitation": {"action": "accept", "content": {"name": "Mallory"}}}
    stolen = answer_2026(
        await post_2026(
            http, url_b, call_2026(2, "ask", requestState=state, inputResponses=answers), bob
        )
    )
    assert "another principal" in stolen["error"]["message"]
    assert server_a.ran == ["ask"] and server_b.ran == ["whoami"]
