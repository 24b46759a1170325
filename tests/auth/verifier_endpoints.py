"""Real authorization-server endpoints for the verifier tests: a JWKS and an introspection endpoint.

Both are small Starlette apps served over real sockets (``run_app`` from the
transport tests); each counts its hits and can be told to fail, stall or change
its answers while the test runs.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus

from joserfc import jwt
from joserfc.jwk import Key
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

ISSUER = "https://auth.example.com"
RESOURCE = "https://mcp.example.com/mcp"


def claims_for(claims: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    """Valid access-token claims unless ``claims``/``overrides`` say else (None removes one)."""
    now = int(time.time())
    body: dict[str, Any] = {
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "user-1",
        "client_id": "client-1",
        "iat": now,
        "exp": now + 300,
        "scope": "mcp:read mcp:write",
        "jti": f"jti-{time.monotonic_ns()}",
    }
    body.update(claims or {})
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not None}


def sign(
    key: Key,
    claims: dict[str, Any] | None = None,
    *,
    alg: str = "RS256",
    kid: str | None = "default",
    typ: str | None = "at+jwt",
    **overrides: Any,
) -> str:
    """A JWT signed with ``key``: valid access-token claims unless ``claims``/``overrides`` say else.

    An override set to None removes that claim.
    """
    header: dict[str, Any] = {"alg": alg}
    if kid is not None:
        header["kid"] = kid
    if typ is not None:
        header["typ"] = typ
    return jwt.encode(
        header, claims_for(claims, **overrides), key, algorithms=[alg], default_type=None
    )


def forge_hs256(secret: bytes, *, kid: str = "default", **overrides: Any) -> str:
    """The key-confusion attack: a token HMAC-signed with ``secret`` (a server's RSA public
    key, which an attacker has). Built by hand: JOSE libraries refuse to make such a key."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = {"alg": "HS256", "kid": kid, "typ": "at+jwt"}
    signing_input = ".".join(
        part(json.dumps(x, separators=(",", ":")).encode())
        for x in (header, claims_for(**overrides))
    )
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{part(mac)}"


@dataclass
class JWKSEndpoint:
    """``GET /jwks``: the public halves of ``keys``; ``hits`` counts requests."""

    keys: list[Key] = field(default_factory=list)
    hits: int = 0
    status: int = 200
    delay: float = 0.0

    def document(self) -> dict[str, Any]:
        return {"keys": [k.as_dict(private=False) for k in self.keys]}

    def app(self) -> Starlette:
        async def jwks(request: Request) -> Response:
            self.hits += 1
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.status != 200:
                return PlainTextResponse("unavailable", status_code=self.status)
            return JSONResponse(self.document())

        return Starlette(routes=[Route("/jwks", jwks)])


@dataclass
class IntrospectionEndpoint:
    """``POST /introspect`` (RFC 7662) answering from ``answers`` (token -> answer dict).

    It authenticates its caller as ``client_auth`` says (RFC 6749 § 2.3.1) with
    ``client_id``/``client_secret`` and answers 401 otherwise, so a test proves
    the credentials were really sent. ``requests`` keeps every form received.
    """

    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    client_auth: str = "client_secret_basic"
    client_id: str = "rs-client"
    client_secret: str = "s3cret:with/odd chars"
    hits: int = 0
    status: int = 200
    delay: float = 0.0
    raw_body: bytes | None = None
    requests: list[dict[str, str]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def _authenticated(self, request: Request, form: dict[str, str]) -> bool:
        header = request.headers.get("authorization")
        if self.client_auth == "client_secret_basic":
            if header is None or not header.startswith("Basic "):
                return False
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            return (unquote_plus(user), unquote_plus(password)) == (
                self.client_id,
                self.client_secret,
            )
        if self.client_auth == "client_secret_post":
            return header is None and (form.get("client_id"), form.get("client_secret")) == (
                self.client_id,
                self.client_secret,
            )
        return header is None and "client_secret" not in form

    def app(self) -> Starlette:
        async def introspect(request: Request) -> Response:
            self.hits += 1
            form = {k: str(v) for k, v in (await request.form()).items()}
            self.requests.append(form)
            self.headers.append(dict(request.headers))
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.status != 200:
                return PlainTextResponse("broken", status_code=self.status)
            if self.raw_body is not None:
                return Response(self.raw_body, media_type="text/html")
            if not self._authenticated(request, form):
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            return JSONResponse(self.answers.get(form.get("token", ""), {"active": False}))

        return Starlette(routes=[Route("/introspect", introspect, methods=["POST"])])
