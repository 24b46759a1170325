"""A requestState is good only for the principal it was issued to, and only as issued.

Over real HTTP: a small ASGI middleware stands in for authentication and puts the
principal named by the ``x-test-user`` header in the scope (``mcpkit.auth``), as
real auth middleware does.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from mcpkit import Context, MCPServer
from mcpkit.server.stateless.input_required import RequestStateCodec, principal_of
from mcpkit.transports.asgi import AUTH_SCOPE_KEY, ASGIApp, Receive, Scope, Send
from tests import schema
from tests.transports.conftest import BOTH, TIMEOUT, run_app

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def with_principal(app: ASGIApp) -> ASGIApp:
    """Test auth: ``x-test-user: ada`` authenticates as subject ``ada``; no header, nobody."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for name, value in scope["headers"]:
                if name == b"x-test-user":
                    # A fresh token per request: only the subject stays the same.
                    token = base64.b16encode(value + bytes(8)).decode()
                    scope = {**scope, AUTH_SCOPE_KEY: {"sub": value.decode(), "token": token}}
        await app(scope, receive, send)

    return middleware


@pytest.fixture
async def url() -> AsyncIterator[str]:
    server = MCPServer(name="principals", version="1")
    ran: list[str] = []

    @server.tool
    async def ask(ctx: Context) -> str:
        """Ask for a name."""
        answer = await ctx.elicit("Name?", NAME)
        ran.append(str(answer.content))
        return f"hello {(answer.content or {})['name']}"

    async with run_app(with_principal(server.http_app())) as base:
        yield base + "/mcp"


def call(rid: int, state: str | None = None, name: str = "Ada") -> dict[str, Any]:
    params: dict[str, Any] = {
        "name": "ask",
        "arguments": {},
        "_meta": {PV: V, CAPS: {"elicitation": {}}, INFO: {"name": "t", "version": "1"}},
    }
    if state is not None:
        params["requestState"] = state
        params["inputResponses"] = {"elicitation": {"action": "accept", "content": {"name": name}}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def post(url: str, msg: dict[str, Any], user: str | None) -> dict[str, Any]:
    headers = {
        "accept": BOTH,
        "content-type": "application/json",
        "mcp-protocol-version": V,
        "mcp-method": "tools/call",
        "mcp-name": "ask",
    }
    if user is not None:
        headers["x-test-user"] = user
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        resp = await http.post(url, content=orjson.dumps(msg), headers=headers)
    text = resp.text
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        datas = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
        answer: dict[str, Any] = orjson.loads(datas[-1])
    else:
        answer = orjson.loads(text)
    schema.validate_message(answer, V, request_method="tools/call")
    return answer


async def test_a_state_issued_to_one_principal_is_refused_for_another(url: str) -> None:
    first = (await post(url, call(1), "ada"))["result"]
    assert first["resultType"] == "input_required"
    state = first["requestState"]
    for user, why in (
        ("bob", "another principal"),
        (None, "request has none"),
    ):
        refused = await post(url, call(2, state, name="Mallory"), user)
        assert refused["error"]["code"] == -32602
        assert why in refused["error"]["message"], refused
        assert "Mallory" not in str(refused)
    # The refusals did not use the state up: its owner (with a new token) still can.
    done = await post(url, call(3, state), "ada")
    assert done["result"]["content"][0]["text"] == "hello Ada"


async def test_an_unauthenticated_state_is_refused_for_a_principal(url: str) -> None:
    state = (await post(url, call(1), None))["result"]["requestState"]
    refused = await post(url, call(2, state), "bob")
    assert refused["error"]["code"] == -32602
    assert "unauthenticated" in refused["error"]["message"]
    done = await post(url, call(3, state), None)
    assert done["result"]["content"][0]["text"] == "hello Ada"


_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _lenient(text: str) -> bytes:
    """How the state used to be decoded: junk skipped, unused bits ignored."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def respellings(state: str) -> list[str]:
    """Other texts for the same MAC bytes, each decoding alike with a lenient decoder."""
    body, mac = state.split(".")
    last = _ALPHABET[_ALPHABET.index(mac[-1]) ^ 1]  # flips one of the 2 unused low bits
    spelled = [
        mac[:-1] + last,
        mac + "=",
        mac[:10] + "!!!!" + mac[10:],
        mac[:9] + " *\n@" + mac[9:],
    ]
    out = []
    for other in spelled:
        assert _lenient(other) == _lenient(mac), other
        out.append(f"{body}.{other}")
    return out


async def test_other_spellings_of_a_state_are_refused_over_http(url: str) -> None:
    state = (await post(url, call(1), "ada"))["result"]["requestState"]
    for rid, altered in enumerate(respellings(state), start=2):
        refused = await post(url, call(rid, altered), "ada")
        assert refused["error"] == {
            "code": -32602,
            "message": "requestState is invalid or expired",
        }, altered
    done = await post(url, call(10, state), "ada")
    assert done["result"]["content"][0]["text"] == "hello Ada"


def test_the_codec_refuses_non_canonical_base64() -> None:
    codec = RequestStateCodec([b"k" * 32], ttl=60)
    token = codec.seal({"c": "x"})
    assert codec.open(token) is not None
    body, mac = token.split(".")
    for altered in respellings(token):
        assert codec.open(altered) is None
    assert codec.open(f"{body}=.{mac}") is None
    assert codec.open(f" {body}.{mac}") is None


@dataclasses.dataclass
class Token:
    client_id: str
    scopes: list[str]
    expires_at: int


class Opaque:
    pass


def test_principal_identity_follows_the_identity_fields() -> None:
    assert principal_of(None) is None
    assert principal_of("ada") == principal_of("ada") != principal_of("bob")
    # A refreshed token of the same subject is the same principal.
    assert principal_of({"sub": "ada", "token": "t1", "exp": 1}) == principal_of(
        {"sub": "ada", "token": "t2", "exp": 2}
    )
    assert principal_of({"sub": "ada"}) != principal_of({"sub": "bob"})
    assert principal_of({"sub": "ada", "iss": "a"}) != principal_of({"sub": "ada", "iss": "b"})
    # Without a subject, never the client id alone (every user of the client would
    # share it): the whole token object, so another token is another principal.
    assert principal_of(Token("app", ["r"], 1)) != principal_of(Token("app", ["w"], 2))
    assert principal_of(Token("app", [], 1)) != principal_of(Token("other", [], 1))
    assert principal_of({"client_id": "app", "token": "t1"}) != principal_of(
        {"client_id": "app", "token": "t2"}
    )
    assert principal_of({"iss": "a", "sub": 7}) != principal_of({"iss": "a", "sub": "7"})
    assert principal_of({"iss": "a", "sub": ""}) != principal_of({"iss": "a", "sub": "", "x": 1})
    # Without identity fields, the whole mapping; an opaque object by its attributes,
    # or only by its type, never by its address (which differs per request and worker).
    assert principal_of({"user_name": "x"}) != principal_of({"user_name": "y"})
    assert principal_of(Opaque()) == principal_of(Opaque())
    tagged_a, tagged_b = Opaque(), Opaque()
    tagged_a.token, tagged_b.token = "t1", "t2"  # type: ignore[attr-defined]
    assert principal_of(tagged_a) != principal_of(tagged_b)


def test_a_principal_bound_state_opens_only_for_that_principal() -> None:
    old, new = b"o" * 32, b"n" * 32
    token = RequestStateCodec([old], ttl=60).seal({"c": "x"}, principal="ada")
    rotated = RequestStateCodec([new, old], ttl=60)
    assert rotated.open(token, principal="ada") is not None  # verified with the old key
    with pytest.raises(Exception, match="another principal"):
        rotated.open(token, principal="bob")
    with pytest.raises(Exception, match="has none"):
        rotated.open(token)
    # The principal's tag is keyed: it does not show who the state names.
    body = token.split(".")[0]
    assert "ada" not in _lenient(body).decode()
