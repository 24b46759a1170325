"""A real OAuth authorization server and a protected MCP server, for the client's tests.

Both are plain ASGI apps run on uvicorn on free ports (``tests.client.http_servers.serve``).
The authorization server *checks* what the client sends, as a real one would: PKCE
(``S256`` of the verifier equals the challenge), the redirect URI and the ``resource``
of the authorization request, one use per code, and client authentication by the
registered method (``none``, ``client_secret_basic``, ``client_secret_post``). It records
every request so tests can assert on them. The protected server wraps a real mcpkit
``MCPServer`` app: it serves RFC 9728 metadata, answers ``401``/``403`` with
``WWW-Authenticate`` and lets through only tokens this authorization server issued for
its resource.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote_plus, urlencode, urlsplit

from mcpkit.auth.challenge import www_authenticate
from tests.client.http_servers import read_body

Send = Callable[[dict[str, Any]], Any]


async def respond(
    send: Send, status: int, body: Any = b"", headers: dict[str, str] | None = None
) -> None:
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
        headers = {"content-type": "application/json", **(headers or {})}
    raw = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def s256(verifier: str) -> str:
    return (
        base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    )


@dataclass
class Issued:
    scopes: set[str]
    resource: str | None
    issuer: str
    client_id: str


@dataclass
class TokenTable:
    """Tokens issued by any test authorization server, as the protected server sees them."""

    access: dict[str, Issued] = field(default_factory=dict)


@dataclass
class AuthServer:
    """An OAuth 2.1 authorization server at ``base`` + ``prefix`` (the issuer).

    ``metadata_at``: ``"oauth"`` (RFC 8414, path-inserted for an issuer with a path),
    ``"oidc-inserted"``, ``"oidc-appended"``, ``"oidc-root"`` or ``None`` (no document).
    ``iss_mode``: what the redirect carries, ``"correct"``, ``"omit"``, ``"wrong"`` or
    ``"slash"`` (the issuer plus a trailing slash).
    """

    base: str
    table: TokenTable
    prefix: str = ""
    metadata_at: str | None = "oauth"
    metadata_issuer: str | None = None
    auth_methods: tuple[str, ...] = ("none",)
    dcr: bool = True
    dcr_method: str | None = None  # the method the server assigns; None: the client's choice
    cimd: bool = False
    iss_supported: bool | None = True
    iss_mode: str = "correct"
    scopes_supported: tuple[str, ...] | None = None
    expires_in: int = 3600
    refresh: bool = True
    clients: dict[str, tuple[str | None, str]] = field(
        default_factory=dict
    )  # id -> (secret, method)
    requests: list[tuple[str, str]] = field(default_factory=list)
    authorizations: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    _codes: dict[str, dict[str, str]] = field(default_factory=dict)
    _refresh: dict[str, Issued] = field(default_factory=dict)

    @property
    def issuer(self) -> str:
        return self.base + self.prefix

    def metadata_path(self) -> str | None:
        where = self.metadata_at
        if where is None:
            return None
        if where == "oauth":
            return "/.well-known/oauth-authorization-server" + self.prefix
        if where == "oidc-inserted":
            return "/.well-known/openid-configuration" + self.prefix
        if where == "oidc-appended":
            return self.prefix + "/.well-known/openid-configuration"
        return "/.well-known/openid-configuration"

    def metadata(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "issuer": self.metadata_issuer or self.issuer,
            "authorization_endpoint": self.issuer + "/authorize",
            "token_endpoint": self.issuer + "/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(self.auth_methods),
        }
        if self.dcr:
            doc["registration_endpoint"] = self.issuer + "/register"
        if self.cimd:
            doc["client_id_metadata_document_supported"] = True
        if self.iss_supported is not None:
            doc["authorization_response_iss_parameter_supported"] = self.iss_supported
        if self.scopes_supported is not None:
            doc["scopes_supported"] = list(self.scopes_supported)
        return doc

    def token_for(self, token: str) -> Issued | None:
        return self.table.access.get(token)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        path = scope["path"]
        self.requests.append((scope["method"], path))
        query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
        if scope["method"] == "GET" and path == self.metadata_path():
            return await respond(send, 200, self.metadata())
        if path == self.prefix + "/authorize":
            return await self._authorize(query, send)
        if path == self.prefix + "/token" and scope["method"] == "POST":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            return await self._token(body, headers.get("authorization"), send)
        if path == self.prefix + "/register" and self.dcr and scope["method"] == "POST":
            return await self._register(json.loads(body), send)
        await respond(send, 404, {"error": "not_found"})

    async def _authorize(self, q: dict[str, str], send: Send) -> None:
        self.authorizations.append(q)
        client_id = q.get("client_id", "")
        known = client_id in self.clients or (self.cimd and client_id.startswith("https://"))
        if not known or q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            self.refusals.append("authorize: unknown client or no S256 challenge")
            return await respond(send, 400, {"error": "invalid_request"})
        code = secrets.token_urlsafe(16)
        self._codes[code] = q
        params = {"code": code, "state": q.get("state", "")}
        if self.iss_mode == "correct":
            params["iss"] = self.issuer
        elif self.iss_mode == "wrong":
            params["iss"] = "https://evil.example.com"
        elif self.iss_mode == "slash":
            params["iss"] = self.issuer + "/"
        location = q["redirect_uri"] + "?" + urlencode(params)
        await respond(send, 302, b"", {"location": location})

    def _client(self, form: dict[str, str], authorization: str | None) -> str | None:
        """The authenticated client id, checked the way its registration says; else None."""
        if authorization and authorization.startswith("Basic "):
            raw = base64.b64decode(authorization[6:]).decode()
            cid, _, secret = raw.partition(":")
            cid, secret = unquote_plus(cid), unquote_plus(secret)
            expected = self.clients.get(cid)
            ok = expected is not None and expected == (secret, "client_secret_basic")
            return cid if ok and "client_secret" not in form else None
        cid = form.get("client_id", "")
        if self.cimd and cid.startswith("https://") and cid not in self.clients:
            return cid if "client_secret" not in form else None
        expected = self.clients.get(cid)
        if expected is None:
            return None
        secret, method = expected
        if method == "client_secret_post":
            return cid if form.get("client_secret") == secret else None
        if method == "none":
            return cid if "client_secret" not in form else None
        return None  # a basic client that did not send the header

    async def _token(self, body: bytes, authorization: str | None, send: Send) -> None:
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        self.token_requests.append({**form, "_authorization": authorization or ""})
        cid = self._client(form, authorization)
        if cid is None:
            self.refusals.append("token: client authentication failed")
            return await respond(send, 401, {"error": "invalid_client"})
        grant = form.get("grant_type")
        if grant == "authorization_code":
            request = self._codes.pop(form.get("code", ""), None)
            problems = []
            if request is None:
                problems.append("unknown or used code")
            else:
                if request["client_id"] != cid:
                    problems.append("code of another client")
                if request["redirect_uri"] != form.get("redirect_uri"):
                    problems.append("redirect_uri differs")
                if s256(form.get("code_verifier", "")) != request["code_challenge"]:
                    problems.append("PKCE verifier does not match the challenge")
                if request.get("resource") != form.get("resource"):
                    problems.append("resource differs")
            if problems:
                self.refusals.extend(problems)
                return await respond(send, 400, {"error": "invalid_grant"})
            assert request is not None
            scopes = set(request.get("scope", "").split())
            resource = request.get("resource")
        elif grant == "refresh_token":
            old = self._refresh.pop(form.get("refresh_token", ""), None)
            if old is None or old.client_id != cid:
                self.refusals.append("refresh: unknown refresh token")
                return await respond(send, 400, {"error": "invalid_grant"})
            scopes, resource = old.scopes, form.get("resource", old.resource)
        else:
            return await respond(send, 400, {"error": "unsupported_grant_type"})
        issued = Issued(scopes=scopes, resource=resource, issuer=self.issuer, client_id=cid)
        access = "at-" + secrets.token_urlsafe(24)
        self.table.access[access] = issued
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "scope": " ".join(sorted(scopes)),
        }
        if self.refresh:
            refresh = "rt-" + secrets.token_urlsafe(24)
            self._refresh[refresh] = issued
            answer["refresh_token"] = refresh
        await respond(send, 200, answer, {"cache-control": "no-store"})

    async def _register(self, metadata: dict[str, Any], send: Send) -> None:
        self.registrations.append(metadata)
        method = (
            self.dcr_method or metadata.get("token_endpoint_auth_method") or "client_secret_basic"
        )
        cid = f"client-{len(self.registrations)}-{secrets.token_hex(4)}"
        secret = None if method == "none" else secrets.token_urlsafe(16)
        self.clients[cid] = (secret, method)
        answer = {**metadata, "client_id": cid, "token_endpoint_auth_method": method}
        if secret:
            answer["client_secret"] = secret
        await respond(send, 201, answer)


@dataclass
class ProtectedMCP:
    """An MCP app behind bearer-token checks, as the MCP authorization spec describes.

    ``prm_at``: ``"path"`` (path-inserted well-known), ``"root"``, ``"custom"`` (only
    via the header) or ``None`` (a 2025-03-26 server: no metadata). ``issuers()`` names
    the authorization servers (a function, so a test can move the resource).
    ``tool_scopes``: scopes a ``tools/call`` of that tool needs (``403`` otherwise).
    ``fallback``: an ASGI app for every other path (the 2025-03-26 authorization
    server at the same origin).
    """

    app: Any
    base: str
    table: TokenTable
    issuers: Callable[[], list[str]]
    prm_at: str | None = "path"
    header_url: bool = True
    challenge_scope: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    resource_override: str | None = None
    tool_scopes: dict[str, set[str]] = field(default_factory=dict)
    fallback: Any = None
    guarded: tuple[str, ...] = ("/mcp",)  # the paths that need a token
    seen_tokens: list[str] = field(default_factory=list)
    prm_requests: list[str] = field(default_factory=list)

    @property
    def resource(self) -> str:
        if self.resource_override:
            return self.resource_override
        return self.base if self.prm_at == "root" else self.base + "/mcp"

    def prm_path(self) -> str | None:
        return {
            "path": "/.well-known/oauth-protected-resource/mcp",
            "root": "/.well-known/oauth-protected-resource",
            "custom": "/meta/resource.json",
        }.get(self.prm_at or "")

    def challenge(self, error: str | None = None, scope: str | None = None) -> str:
        path = self.prm_path()
        return www_authenticate(
            resource_metadata=self.base + path if path and self.header_url else None,
            error=error,
            scopes=(scope or self.challenge_scope or "").split(),
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] == "lifespan":
            return await self.app(scope, receive, send)
        path = scope["path"]
        if scope["method"] == "GET" and path == self.prm_path():
            self.prm_requests.append(path)
            doc: dict[str, Any] = {
                "resource": self.resource,
                "authorization_servers": self.issuers(),
            }
            if self.scopes_supported is not None:
                doc["scopes_supported"] = list(self.scopes_supported)
            return await respond(send, 200, doc)
        if path not in self.guarded:
            if self.fallback is not None:
                return await self.fallback(scope, receive, send)
            await read_body(scope, receive, send)
            return await respond(send, 404, {"error": "not_found"})
        body = await read_body(scope, receive, send) or b""
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        auth = headers.get("authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else None
        issued = self.table.access.get(token) if token else None
        if token:
            self.seen_tokens.append(token)
        if (
            issued is None
            or issued.issuer not in self.issuers()
            or (issued.resource not in (None, self.resource))
        ):
            error = "invalid_token" if token else None
            return await respond(
                send, 401, {"error": "unauthorized"}, {"www-authenticate": self.challenge(error)}
            )
        message = json.loads(body) if body else {}
        if isinstance(message, dict) and message.get("method") == "tools/call":
            needed = self.tool_scopes.get(message.get("params", {}).get("name"), set())
            if not needed <= issued.scopes:
                scope_text = " ".join(sorted(needed | issued.scopes))
                return await respond(
                    send,
                    403,
                    {"error": "insufficient_scope"},
                    {"www-authenticate": self.challenge("insufficient_scope", scope_text)},
                )
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
