"""Real OAuth peers for the machine-to-machine client tests, as ASGI apps on real sockets.

* :class:`AuthServer`: RFC 8414 metadata and a token endpoint that authenticates
  clients (client_secret_basic/post, private_key_jwt verified with the client's
  public key), checks DPoP proofs (RFC 9449 § 4.3) and optionally demands a
  nonce, and runs the client credentials and JWT bearer grants.
* :class:`IdentityProvider`: an enterprise IdP whose token endpoint does the
  RFC 8693 exchange of an ID token for an ID-JAG.
* :class:`ProtectedMCP`: an mcpkit server behind a gate that serves RFC 9728
  metadata and checks Bearer or DPoP-bound tokens issued by the AuthServer,
  with their proofs (``htm``, ``htu``, ``ath``, ``cnf.jkt``, fresh ``jti``,
  optional nonce).

Every check that fails is appended to ``problems`` (and answered as a real
server would); the tests assert that list is empty and look at ``requests``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlsplit

from joserfc import jwk, jwt
from joserfc.jwk import ECKey

from mcpkit.server.server import MCPServer
from tests.client.http_servers import free_socket, read_body, serve

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


@dataclass
class Seen:
    """One request a peer received."""

    method: str
    path: str
    headers: dict[str, str]
    form: dict[str, str]


async def _respond(
    send: Any, status: int, body: Any, headers: dict[str, str] | None = None
) -> None:
    raw = json.dumps(body).encode()
    hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    hdrs += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": raw})


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope["headers"]:
        name = k.decode("latin-1").lower()
        out[name] = out[name] + ", " + v.decode("latin-1") if name in out else v.decode("latin-1")
    return out


def _b64url_sha256(text: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()


def verify_dpop_proof(
    proof: str | None,
    *,
    method: str,
    url: str,
    seen_jtis: set[str],
    access_token: str | None = None,
    nonce: str | None = None,
) -> tuple[str | None, str | None, str | None]:
    """RFC 9449 § 4.3 checks. Returns (problem, jkt, nonce in the proof)."""
    if not proof or "," in proof:
        return "missing or multiple DPoP proofs", None, None
    try:
        header = json.loads(base64.urlsafe_b64decode(proof.split(".")[0] + "=="))
    except ValueError:
        return "proof is not a JWT", None, None
    if header.get("typ") != "dpop+jwt":
        return "typ is not dpop+jwt", None, None
    if header.get("alg") != "ES256":
        return f"unexpected alg {header.get('alg')}", None, None
    public = header.get("jwk")
    if not isinstance(public, dict) or "d" in public:
        return "jwk header missing or private", None, None
    key = jwk.import_key(public, "EC")
    try:
        claims = jwt.decode(proof, key, algorithms=["ES256"]).claims
    except Exception as exc:  # the signature must verify with the key it carries
        return f"bad proof signature: {exc}", None, None
    jkt = str(key.thumbprint())
    if claims.get("htm") != method:
        return f"htm {claims.get('htm')} != {method}", jkt, None
    if claims.get("htu") != url:
        return f"htu {claims.get('htu')} != {url}", jkt, None
    if not isinstance(claims.get("iat"), int) or abs(time.time() - claims["iat"]) > 60:
        return "iat outside the window", jkt, None
    jti = claims.get("jti")
    if not isinstance(jti, str) or jti in seen_jtis:
        return f"jti missing or replayed: {jti}", jkt, None
    seen_jtis.add(jti)
    if access_token is not None and claims.get("ath") != _b64url_sha256(access_token):
        return "ath does not match the token", jkt, None
    if access_token is None and "ath" in claims:
        return "ath in a token-request proof", jkt, None
    got_nonce = claims.get("nonce")
    if nonce is not None and got_nonce is not None and got_nonce != nonce:
        return f"stale nonce {got_nonce}", jkt, got_nonce
    return None, jkt, got_nonce


@dataclass
class Issued:
    client_id: str | None
    scope: str | None
    jkt: str | None
    resource: str | None
    expires_at: float = float("inf")


@dataclass
class AuthServer:
    """An OAuth authorization server; ``issuer`` is set when it is served."""

    grant_types: list[str] = field(default_factory=lambda: ["client_credentials"])
    auth_methods: list[str] = field(default_factory=lambda: ["client_secret_basic"])
    secrets: dict[str, str] = field(default_factory=dict)
    public_keys: dict[str, Any] = field(default_factory=dict)  # client_id -> joserfc key
    dpop: bool = False
    dpop_nonce: str | None = None  # demand this nonce (RFC 9449 § 8)
    # jwt-bearer: assertion -> None (accept; returns subject) or an OAuth error code
    check_assertion: Callable[[str, str | None], str | None] | None = None
    refuse_scopes: dict[str, str] = field(default_factory=dict)  # scope -> error code
    expires_in: int = 3600
    codes: dict[str, str] = field(default_factory=dict)  # authorization code -> PKCE challenge
    issuer: str = ""
    requests: list[Seen] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    tokens: dict[str, Issued] = field(default_factory=dict)
    assertion_jtis: set[str] = field(default_factory=set)
    proof_jtis: set[str] = field(default_factory=set)
    nonce_challenges: int = 0

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        headers = _headers(scope)
        form = dict(parse_qsl(body.decode()))
        self.requests.append(Seen(scope["method"], scope["path"], headers, form))
        if scope["path"] == "/.well-known/oauth-authorization-server":
            meta: dict[str, Any] = {
                "issuer": self.issuer,
                "token_endpoint": self.token_endpoint,
                "grant_types_supported": self.grant_types,
                "token_endpoint_auth_methods_supported": self.auth_methods,
                "response_types_supported": [],
            }
            if "private_key_jwt" in self.auth_methods:
                meta["token_endpoint_auth_signing_alg_values_supported"] = ["ES256", "RS256"]
            if self.dpop:
                meta["dpop_signing_alg_values_supported"] = ["ES256"]
            if "authorization_code" in self.grant_types:
                meta["authorization_endpoint"] = f"{self.issuer}/authorize"
                meta["response_types_supported"] = ["code"]
                meta["code_challenge_methods_supported"] = ["S256"]
            await _respond(send, 200, meta)
        elif scope["path"] == "/authorize":
            # Approves at once: redirect back with a code bound to the PKCE challenge.
            query = dict(parse_qsl(scope["query_string"].decode()))
            code = "code-" + secrets.token_urlsafe(8)
            self.codes[code] = query.get("code_challenge", "")
            target = f"{query['redirect_uri']}?code={code}&state={query.get('state', '')}"
            await _respond(send, 302, {}, {"Location": target})
        elif scope["path"] == "/token" and scope["method"] == "POST":
            status, answer, extra = self._token(headers, form)
            await _respond(send, status, answer, extra)
        else:
            await _respond(send, 404, {"error": "not_found"})

    def _client(
        self, headers: dict[str, str], form: dict[str, str]
    ) -> tuple[str | None, str | None]:
        """(client_id, problem) after authenticating the client."""
        auth = headers.get("authorization", "")
        if auth.startswith("Basic "):
            ident, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
            ident, secret = unquote_plus(ident), unquote_plus(secret)
            if self.secrets.get(ident) != secret:
                return None, "bad client secret (basic)"
            return ident, None
        if "client_assertion" in form:
            if form.get("client_assertion_type") != ASSERTION_TYPE:
                return None, "bad client_assertion_type"
            ident = form.get("client_id")
            key = self.public_keys.get(ident or "")
            if key is None:
                return None, f"unknown client {ident}"
            try:
                claims = jwt.decode(
                    form["client_assertion"], key, algorithms=["ES256", "RS256"]
                ).claims
            except Exception as exc:
                return None, f"assertion signature: {exc}"
            if claims.get("iss") != ident or claims.get("sub") != ident:
                return None, "assertion iss/sub is not the client_id"
            if claims.get("aud") != self.issuer:
                return None, f"assertion aud {claims.get('aud')} is not the issuer"
            if not isinstance(claims.get("exp"), int) or claims["exp"] < time.time():
                return None, "assertion expired"
            if claims.get("jti") in self.assertion_jtis or not claims.get("jti"):
                return None, "assertion jti replayed"
            self.assertion_jtis.add(claims["jti"])
            return ident, None
        if "client_secret" in form:
            ident = form.get("client_id", "")
            if self.secrets.get(ident) != form["client_secret"]:
                return None, "bad client secret (post)"
            return ident, None
        return form.get("client_id"), None  # a public client

    def _token(
        self, headers: dict[str, str], form: dict[str, str]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        client_id, problem = self._client(headers, form)
        if problem is not None:
            self.problems.append(problem)
            return 401, {"error": "invalid_client"}, {}
        jkt = None
        if self.dpop:
            problem, jkt, nonce = verify_dpop_proof(
                headers.get("dpop"),
                method="POST",
                url=self.token_endpoint,
                seen_jtis=self.proof_jtis,
            )
            if problem is not None:
                self.problems.append(f"token request proof: {problem}")
                return 400, {"error": "invalid_dpop_proof"}, {}
            if self.dpop_nonce is not None and nonce != self.dpop_nonce:
                self.nonce_challenges += 1
                return 400, {"error": "use_dpop_nonce"}, {"DPoP-Nonce": self.dpop_nonce}
        grant = form.get("grant_type")
        if grant not in self.grant_types:
            return 400, {"error": "unsupported_grant_type"}, {}
        scope = form.get("scope")
        for wanted in (scope or "").split():
            if wanted in self.refuse_scopes:
                return 400, {"error": self.refuse_scopes[wanted]}, {}
        if grant == "authorization_code":
            challenge = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            if challenge is None or _b64url_sha256(verifier) != challenge:
                return 400, {"error": "invalid_grant"}, {}
        if grant == JWT_BEARER:
            if self.check_assertion is None or "assertion" not in form:
                return 400, {"error": "invalid_request"}, {}
            error = self.check_assertion(form["assertion"], client_id)
            if error is not None:
                return 400, {"error": error, "error_description": "assertion refused"}, {}
        token = "at-" + secrets.token_urlsafe(16)
        self.tokens[token] = Issued(
            client_id, scope, jkt, form.get("resource"), time.time() + self.expires_in
        )
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "DPoP" if jkt else "Bearer",
            "expires_in": self.expires_in,
        }
        if scope:
            answer["scope"] = scope
        return 200, answer, {}


@dataclass
class IdentityProvider:
    """An enterprise IdP: signs ID tokens and exchanges them for ID-JAGs (RFC 8693)."""

    client_id: str = "mcp-client-at-idp"
    as_client_id: str = "mcp-client"  # how the MCP authorization server knows the client
    key: Any = field(default_factory=lambda: ECKey.generate_key("P-256"))
    issuer: str = ""
    requests: list[Seen] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def id_token(self, subject: str = "alice@example.com") -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": subject,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 600,
        }
        return jwt.encode({"alg": "ES256"}, claims, self.key, algorithms=["ES256"])

    def check_id_jag(self, issuer: str, resource: str) -> Callable[[str, str | None], str | None]:
        """The AuthServer's check of a presented ID-JAG (typ, signature, aud, resource, client)."""

        def check(assertion: str, client_id: str | None) -> str | None:
            try:
                token = jwt.decode(assertion, self.key, algorithms=["ES256"])
            except Exception:
                return "invalid_grant"
            claims = token.claims
            if token.header.get("typ") != "oauth-id-jag+jwt" or claims.get("iss") != self.issuer:
                return "invalid_grant"
            if claims.get("aud") != issuer or claims.get("resource") != resource:
                return "invalid_grant"
            if claims.get("client_id") != client_id:
                return "invalid_grant"
            return None

        return check

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(scope, receive, send)
        if body is None:
            return
        form = dict(parse_qsl(body.decode()))
        self.requests.append(Seen(scope["method"], scope["path"], _headers(scope), form))
        if scope["path"] == "/.well-known/openid-configuration":
            meta = {
                "issuer": self.issuer,
                "token_endpoint": f"{self.issuer}/token",
                "grant_types_supported": [TOKEN_EXCHANGE],
            }
            await _respond(send, 200, meta)
            return
        if scope["path"] != "/token":
            await _respond(send, 404, {"error": "not_found"})
            return
        if form.get("grant_type") != TOKEN_EXCHANGE:
            await _respond(send, 400, {"error": "unsupported_grant_type"})
            return
        if form.get("requested_token_type") != ID_JAG or form.get("subject_token_type") != ID_TOKEN:
            self.problems.append(f"token types: {form}")
            await _respond(send, 400, {"error": "invalid_request"})
            return
        if not form.get("audience") or not form.get("resource"):
            self.problems.append("audience or resource missing")
            await _respond(send, 400, {"error": "invalid_request"})
            return
        try:
            claims = jwt.decode(
                form.get("subject_token", ""), self.key, algorithms=["ES256"]
            ).claims
        except Exception:
            await _respond(send, 400, {"error": "invalid_grant"})
            return
        now = int(time.time())
        jag = jwt.encode(
            {"alg": "ES256", "typ": "oauth-id-jag+jwt"},
            {
                "iss": self.issuer,
                "sub": claims["sub"],
                "aud": form["audience"],
                "resource": form["resource"],
                "client_id": self.as_client_id,
                "iat": now,
                "exp": now + 300,
                "jti": secrets.token_urlsafe(8),
            },
            self.key,
            algorithms=["ES256"],
        )
        await _respond(
            send, 200, {"access_token": jag, "issued_token_type": ID_JAG, "token_type": "N_A"}
        )


@dataclass
class ProtectedMCP:
    """An mcpkit server behind a token gate for the AuthServer's tokens."""

    server: MCPServer
    auth: AuthServer
    dpop_nonce: str | None = None  # demand this nonce (RFC 9449 § 9)
    url: str = ""
    requests: list[Seen] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    proof_jtis: set[str] = field(default_factory=set)
    nonce_challenges: int = 0

    def __post_init__(self) -> None:
        self.app = self.server.http_app()

    def _challenge(self, scheme: str, error: str | None = None) -> dict[str, str]:
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(self.url))
        value = f'{scheme} resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"'
        if error:
            value += f', error="{error}"'
        return {"WWW-Authenticate": value}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        self.requests.append(Seen(scope["method"], scope["path"], headers, {}))
        if scope["path"] == "/.well-known/oauth-protected-resource/mcp":
            await _respond(
                send, 200, {"resource": self.url, "authorization_servers": [self.auth.issuer]}
            )
            return
        scheme, _, token = headers.get("authorization", "").partition(" ")
        issued = self.auth.tokens.get(token)
        default_scheme = "DPoP" if self.auth.dpop else "Bearer"
        if issued is None or issued.expires_at < time.time():
            await _respond(send, 401, {"error": "invalid_token"}, self._challenge(default_scheme))
            return
        if issued.resource != self.url:
            self.problems.append(f"token for resource {issued.resource}, not {self.url}")
        if issued.jkt is not None:
            if scheme != "DPoP":
                self.problems.append(f"DPoP-bound token sent with scheme {scheme}")
                await _respond(send, 401, {"error": "invalid_token"}, self._challenge("DPoP"))
                return
            problem, jkt, nonce = verify_dpop_proof(
                headers.get("dpop"),
                method=scope["method"],
                url=self.url,
                seen_jtis=self.proof_jtis,
                access_token=token,
            )
            if problem is None and jkt != issued.jkt:
                problem = "proof key is not the one the token is bound to"
            if problem is not None:
                self.problems.append(f"resource proof: {problem}")
                await _respond(send, 401, {"error": "invalid_dpop_proof"}, self._challenge("DPoP"))
                return
            if self.dpop_nonce is not None and nonce != self.dpop_nonce:
                self.nonce_challenges += 1
                await _respond(
                    send,
                    401,
                    {"error": "use_dpop_nonce"},
                    {**self._challenge("DPoP", "use_dpop_nonce"), "DPoP-Nonce": self.dpop_nonce},
                )
                return
        elif scheme != "Bearer":
            self.problems.append(f"Bearer token sent with scheme {scheme}")
        await self.app(scope, receive, send)


@contextlib.asynccontextmanager
async def running(app: Any, *, path: str = "") -> AsyncIterator[str]:
    """Serve a peer; its ``issuer``/``url`` attribute is set before the first request."""
    sock = free_socket()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    if hasattr(app, "issuer"):
        app.issuer = base
    if hasattr(app, "url"):
        app.url = base + path
    async with serve(app, sock, path=path) as url:
        yield url


def client_keys() -> tuple[str, Any]:
    """A client's private key as PEM and its public half (what the AS registers)."""
    key = ECKey.generate_key("P-256")
    pem = key.as_pem(private=True).decode()
    public = jwk.import_key(key.as_dict(private=False), "EC")
    return pem, public


__all__ = [
    "AuthServer",
    "IdentityProvider",
    "ProtectedMCP",
    "client_keys",
    "running",
    "verify_dpop_proof",
]
