"""A protected MCP server: RFC 9728 metadata, the bearer-token check, 401/403/503.

:class:`ProtectedResource` holds what the server says about itself (its resource
identifier, its authorization servers, its scopes) and how it checks tokens (a
verifier). :meth:`ProtectedResource.protect` wraps an ASGI app (the Streamable
HTTP or legacy SSE app of :mod:`mcpkit.transports`) in a thin layer that:

* serves the protected resource metadata (RFC 9728 § 3) at
  ``/.well-known/oauth-protected-resource`` and at the path-inserted form for the
  resource's path (``/.well-known/oauth-protected-resource/mcp`` for
  ``https://host/mcp``), with CORS headers so browser clients can read it, never
  behind the token check (MCP authorization § protected resource metadata
  discovery);
* takes the bearer token from the ``Authorization`` header only (RFC 6750 § 2.1;
  the MCP authorization § token requirements forbid the query string), asks the
  verifier, and answers ``401`` with a ``WWW-Authenticate`` challenge naming the
  metadata URL and the scopes to ask for (RFC 9728 § 5.1, MCP authorization §
  scope selection), ``403 insufficient_scope`` when the token lacks the scopes the
  whole resource needs, ``503`` when the token could not be checked;
* otherwise puts the :class:`~mcpkit.auth.AuthInfo` in the ASGI scope under
  ``"mcpkit.auth"`` (:data:`~mcpkit.auth.AUTH_SCOPE_KEY`) and the metadata URL under
  :data:`~mcpkit.auth.RESOURCE_METADATA_SCOPE_KEY`, and calls the app.

The per-request scopes (a tool that needs ``mcp:write``) are checked by the
transports once they have parsed the JSON-RPC body (see
``mcpkit.transports.http_auth``), with :func:`send_insufficient_scope` writing the
same ``403`` as here. An unprotected app is not wrapped at all, so it pays nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

from ..errors import (
    FORBIDDEN,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    ConfigurationError,
    InsufficientScope,
    InvalidToken,
    VerifierUnavailable,
)
from .asgi import WrappingApp, route_path
from .challenge import www_authenticate
from .info import AUTH_SCOPE_KEY, RESOURCE_METADATA_SCOPE_KEY, AuthInfo
from .resource_config import WELL_KNOWN_PATH, metadata_url_for, scope_problems, url_problem
from .verifier import TokenVerifier, VerifyFunction, as_verify_function

__all__ = [
    "WELL_KNOWN_PATH",
    "ProtectedApp",
    "ProtectedResource",
    "metadata_url_for",
    "send_insufficient_scope",
]

log = logging.getLogger("mcpkit.auth")

# RFC 6750 § 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
# RFC 6750 § 2.1 b64token: these characters, then any '=' padding. Checked by
# deleting them (bytes.translate) rather than a regex: half the cost on every request.
_B64TOKEN_CHARS: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/"


def _b64token(raw: bytes) -> bool:
    body = raw.rstrip(b"=")
    return bool(body) and not body.translate(None, _B64TOKEN_CHARS)


# A token whose expiry passed this long ago is refused even if the verifier let it
# through (a hand-written verify function that forgot to look): verifiers apply their
# own, smaller leeway first.
_EXPIRY_LEEWAY: Final = 60.0
_METADATA_MAX_AGE: Final = b"public, max-age=300"

Scope = Any  # ASGI scope / receive / send, typed loosely: this layer sits below transports
Receive = Any
Send = Any


class ProtectedResource:
    """An MCP server as an OAuth 2.1 protected resource (MCP authorization, RFC 9728).

    >>> auth = ProtectedResource(
    ...     resource="https://mcp.example.com/mcp",
    ...     authorization_servers=["https://auth.example.com"],
    ...     scopes_supported=["mcp:read", "mcp:write"],
    ...     resource_name="My MCP server",
    ...     verifier=verify,  # an object with async verify(token), or async (token, resource)
    ... )
    >>> app = server.http_app(auth=auth)  # or MCPServer(..., auth=auth)

    Options (all keyword-only):

    ``resource``
        The server's public URL as clients use it (its MCP endpoint), the audience
        tokens must be issued for (RFC 8707). https, or http on a loopback host for
        development. Behind a proxy or load balancer this is the public URL, not
        the address the process listens on.
    ``authorization_servers``
        Issuer URLs of the authorization servers whose tokens are accepted (one at
        least, MCP authorization § authorization server location).
    ``verifier``
        Turns a token into an :class:`AuthInfo` (None or ``InvalidToken``: refused;
        ``InsufficientScope``: 403; ``VerifierUnavailable``: 503). See
        :mod:`mcpkit.auth.verifier`.
    ``scopes_supported``
        The scopes clients may ask for, published in the metadata and, with
        ``required_scopes``, in the ``scope`` of the 401 challenge.
    ``required_scopes``
        Scopes every request needs (403 ``insufficient_scope`` without them).
    ``resource_name``, ``resource_documentation``, ``resource_policy_uri``,
    ``resource_tos_uri``
        Human-readable metadata fields (RFC 9728 § 2).
    ``extra_metadata``
        More metadata fields, published as given (``jwks_uri``,
        ``dpop_signing_alg_values_supported``, ...); they may not replace the ones above.
    ``resource_metadata_url``
        Where clients fetch the metadata, when not the RFC 9728 § 3.1 default derived
        from ``resource``.
    """

    __slots__ = (
        "_document",
        "_document_body",
        "_verify",
        "authorization_servers",
        "challenge_scopes",
        "required_scopes",
        "resource",
        "resource_metadata_url",
        "resource_name",
        "scopes_supported",
    )

    def __init__(
        self,
        *,
        resource: str,
        authorization_servers: Sequence[str],
        verifier: TokenVerifier | VerifyFunction,
        scopes_supported: Sequence[str] = (),
        required_scopes: Iterable[str] = (),
        resource_name: str | None = None,
        resource_documentation: str | None = None,
        resource_policy_uri: str | None = None,
        resource_tos_uri: str | None = None,
        extra_metadata: Mapping[str, Any] | None = None,
        resource_metadata_url: str | None = None,
    ) -> None:
        problems: list[str] = []
        if (problem := url_problem("resource", resource)) is not None:
            problems.append(problem)
        elif urlsplit(resource).query:
            problems.append(
                f"resource {resource!r} should not have a query (RFC 8707 § 2): "
                "name the MCP endpoint"
            )
        if isinstance(authorization_servers, str):
            authorization_servers = [authorization_servers]
        servers = tuple(authorization_servers or ())
        if not servers:
            problems.append(
                "authorization_servers must name at least one authorization server "
                "(MCP authorization § authorization server location)"
            )
        for issuer in servers:
            if (problem := url_problem("authorization server", issuer)) is not None:
                problems.append(problem)
        bad, supported = scope_problems("scopes_supported", scopes_supported)
        problems.extend(bad)
        bad, required = scope_problems("required_scopes", required_scopes)
        problems.extend(bad)
        if resource_name is not None and not isinstance(resource_name, str):
            problems.append(f"resource_name must be a string, not {resource_name!r}")
        for field, value in (
            ("resource_documentation", resource_documentation),
            ("resource_policy_uri", resource_policy_uri),
            ("resource_tos_uri", resource_tos_uri),
        ):
            if value is not None:
                parts = urlsplit(value) if isinstance(value, str) else None
                if parts is None or parts.scheme not in ("https", "http") or not parts.netloc:
                    problems.append(f"{field} must be an absolute http(s) URL, not {value!r}")
        if resource_metadata_url is not None and (
            problem := url_problem("resource_metadata_url", resource_metadata_url)
        ):
            problems.append(problem)
        try:
            verify = as_verify_function(verifier)
        except TypeError as exc:
            problems.append(f"verifier: {exc}")
        document: dict[str, Any] = {}
        if not problems:
            document = {
                "resource": resource,
                "authorization_servers": list(servers),
                # RFC 9728 § 2: the ways a token may be presented; the header only here.
                "bearer_methods_supported": ["header"],
            }
            if supported:
                document["scopes_supported"] = list(supported)
            for field, value in (
                ("resource_name", resource_name),
                ("resource_documentation", resource_documentation),
                ("resource_policy_uri", resource_policy_uri),
                ("resource_tos_uri", resource_tos_uri),
            ):
                if value is not None:
                    document[field] = value
            for key, value in (extra_metadata or {}).items():
                if key in document:
                    problems.append(
                        f"extra_metadata may not set {key!r}: use the option of that name"
                    )
                    continue
                document[key] = value
            try:
                body = orjson.dumps(document)
            except TypeError as exc:
                problems.append(f"extra_metadata must be JSON: {exc}")
        if problems:
            lines = "\n".join(f"  - {p}" for p in problems)
            raise ConfigurationError(f"ProtectedResource cannot be used:\n{lines}")
        self.resource = resource
        self.authorization_servers = servers
        self.scopes_supported = supported
        self.required_scopes = frozenset(required)
        self.resource_name = resource_name
        self.resource_metadata_url = resource_metadata_url or metadata_url_for(resource)
        # MCP authorization § scope selection: the 401 names what to ask for.
        self.challenge_scopes = tuple(dict.fromkeys((*supported, *required)))
        self._verify = verify
        self._document = document
        self._document_body = body

    def __repr__(self) -> str:
        return f"ProtectedResource(resource={self.resource!r})"

    # -- metadata --------------------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        """The RFC 9728 metadata document (a copy)."""
        return dict(self._document)

    def metadata_paths(self, *app_paths: str) -> frozenset[str]:
        """The paths (relative to where the app is mounted) that serve the metadata.

        The root well-known URI, its form with the resource's path inserted, and the
        form with each of ``app_paths`` inserted (the MCP path the app serves, which
        differs from the public one when a proxy rewrites paths).
        """
        paths = {WELL_KNOWN_PATH}
        for path in (urlsplit(self.resource).path, urlsplit(self.resource_metadata_url).path):
            if path.startswith(WELL_KNOWN_PATH):
                paths.add(path)
            elif path.strip("/"):
                paths.add(WELL_KNOWN_PATH + "/" + path.strip("/"))
        for path in app_paths:
            if path.strip("/"):
                paths.add(WELL_KNOWN_PATH + "/" + path.strip("/"))
        return frozenset(paths)

    async def send_metadata(self, scope: Scope, send: Send) -> None:
        """Answer a request for the metadata: GET/HEAD, or a CORS preflight (OPTIONS).

        A public document, so any origin may read it (``Access-Control-Allow-Origin:
        *``), as browser-based MCP clients must (MCP authorization § discovery).
        """
        method = scope.get("method", "GET")
        cors = [
            (b"access-control-allow-origin", b"*"),
            (b"access-control-allow-methods", b"GET, HEAD, OPTIONS"),
            (b"access-control-allow-headers", b"*"),
        ]
        if method == "OPTIONS":
            await _respond(send, 204, b"", [*cors, (b"access-control-max-age", b"86400")])
            return
        if method not in ("GET", "HEAD"):
            await _respond(
                send,
                405,
                _error_body(INVALID_REQUEST, f"Method not allowed: {method}"),
                [*cors, (b"allow", b"GET, HEAD, OPTIONS"), _JSON_CT],
            )
            return
        body = self._document_body
        headers = [*cors, _JSON_CT, (b"cache-control", _METADATA_MAX_AGE)]
        if method == "HEAD":
            await _respond(send, 200, b"", headers, length=len(body))
            return
        await _respond(send, 200, body, headers)

    def metadata_app(self, *app_paths: str) -> ProtectedApp:
        """An ASGI app serving only the metadata (404 elsewhere), to mount at the
        host's root when the MCP app itself is mounted under a prefix."""
        return ProtectedApp(self, None, app_paths)

    # -- tokens ----------------------------------------------------------------------------------
    def challenge(
        self,
        *,
        error: str | None = None,
        scopes: Iterable[str] | None = None,
        description: str | None = None,
    ) -> str:
        """A ``WWW-Authenticate`` value naming this resource's metadata URL."""
        return www_authenticate(
            resource_metadata=self.resource_metadata_url,
            error=error,
            scopes=self.challenge_scopes if scopes is None else scopes,
            description=description,
        )

    async def verify(self, token: str) -> AuthInfo:
        """The :class:`AuthInfo` of a bearer token good for this resource.

        Raises :class:`InvalidToken` (refused: 401) or :class:`VerifierUnavailable`
        (could not be checked: 503); any other exception is the verifier's bug.
        """
        info = await self._verify(token, self.resource)
        if info is None:
            raise InvalidToken("the access token is not valid for this resource")
        if not isinstance(info, AuthInfo):
            raise TypeError(
                f"the token verifier returned {type(info).__name__}, not an AuthInfo or None"
            )
        subject = info.subject
        if subject is not None and (not isinstance(subject, str) or not subject):
            # Sessions and requestState are bound to the subject (AuthInfo.principal):
            # one the verifier could not read is no identity to bind them to.
            raise InvalidToken("the access token's subject is not a non-empty string")
        if info.expired(leeway=_EXPIRY_LEEWAY):
            raise InvalidToken("the access token has expired")
        return info

    def protect(self, app: Any, *, paths: Iterable[str] = ()) -> ProtectedApp:
        """``app`` behind this resource's token check, with the metadata beside it.

        ``paths`` are the MCP paths ``app`` serves, for the path-inserted metadata URLs.
        """
        return ProtectedApp(self, app, tuple(paths))


class ProtectedApp(WrappingApp):
    """An ASGI app: the metadata documents, then the token check, then the wrapped app.

    The wrapped app's attributes stay reachable through this one (``sse_path``,
    ``session()``...), so code written for the bare app keeps working.
    """

    __slots__ = ("_metadata_paths", "_open_paths", "_public_paths", "app", "resource")

    def __init__(
        self, resource: ProtectedResource, app: Any | None, paths: Sequence[str] = ()
    ) -> None:
        self.resource = resource
        self.app = app
        self._metadata_paths = metadata = resource.metadata_paths(*paths)
        # The app's extra routes (mcpkit.transports.http_routes, read by duck typing: this
        # layer sits below the transports): the probes and public=True routes need no token.
        routes = getattr(app, "routes", None)
        clash = sorted(getattr(routes, "paths", frozenset()) & metadata)
        if clash:
            raise ConfigurationError(
                f"route {clash[0]!r} would shadow the protected resource metadata "
                "(RFC 9728): choose another path"
            )
        self._public_paths: frozenset[str] = getattr(routes, "public_paths", frozenset())
        # One set for the hot path: a request outside it pays a single lookup, as before.
        self._open_paths = metadata | self._public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.pass_through(scope, receive, send)
            return
        paths = self._open_paths
        # Relative to the mount (an app under a prefix), or the full path (metadata_app()
        # mounted at "/.well-known" by a framework that keeps the full path in "path").
        path = route_path(scope)
        if path in paths or scope["path"] in paths:
            if path in self._public_paths and self.app is not None:  # a probe, a public route
                await self.app(scope, receive, send)
                return
            metadata = self._metadata_paths
            if path in metadata or scope["path"] in metadata:
                await self.resource.send_metadata(scope, send)
                return
        if self.app is None:
            await _respond(send, 404, b"Not Found", [(b"content-type", b"text/plain")])
            return
        info = await self._authenticate(scope, send)
        if info is None:
            return
        scope = dict(scope)
        scope[AUTH_SCOPE_KEY] = info
        scope[RESOURCE_METADATA_SCOPE_KEY] = self.resource.resource_metadata_url
        await self.app(scope, receive, send)

    async def _authenticate(self, scope: Scope, send: Send) -> AuthInfo | None:
        """The request's AuthInfo, or None once the refusal has been sent."""
        resource = self.resource
        query: bytes = scope.get("query_string", b"")
        if b"access_token" in query and any(
            part.partition(b"=")[0] == b"access_token" for part in query.split(b"&")
        ):
            # MCP authorization § token requirements: never in the query string; RFC 6750
            # § 3.1 invalid_request. Refused even with a header: the URL is already logged.
            await _refuse(
                send,
                400,
                www_authenticate(error="invalid_request"),
                INVALID_REQUEST,
                "Bad Request: access tokens are accepted in the Authorization header only",
            )
            return None
        values = [v for k, v in scope["headers"] if k == b"authorization"]
        if len(values) > 1:
            await _refuse(
                send,
                400,
                www_authenticate(error="invalid_request"),
                INVALID_REQUEST,
                "Bad Request: more than one Authorization header",
            )
            return None
        scheme, _, raw = values[0].strip().partition(b" ") if values else (b"", b"", b"")
        if scheme.lower() != b"bearer":
            # No credentials (or another scheme): RFC 6750 § 3.1, no error code.
            await _refuse(
                send,
                401,
                resource.challenge(),
                INVALID_REQUEST,
                "Unauthorized: a bearer token is required",
            )
            return None
        raw = raw.strip()
        try:
            if not _b64token(raw):
                raise InvalidToken("the access token is malformed")
            info = await resource.verify(raw.decode("ascii"))
        except InvalidToken as exc:
            token = raw.decode("latin-1")
            text = str(exc) or "the access token is not valid"
            if token and token in text:  # never echo the token (errors.InvalidToken)
                text = "the access token is not valid"
            await _refuse(
                send,
                401,
                resource.challenge(error="invalid_token", description=text),
                INVALID_REQUEST,
                f"Unauthorized: {text}",
            )
            return None
        except InsufficientScope as exc:
            # A verifier with its own required scopes (verifier.py): a good token, too
            # narrow, so a step-up challenge rather than a 401.
            await send_insufficient_scope(send, resource.resource_metadata_url, exc.scopes)
            return None
        except VerifierUnavailable as exc:
            log.warning("could not verify an access token: %s", exc)
            await _respond(
                send,
                503,
                _error_body(
                    INTERNAL_ERROR, "Service Unavailable: the access token could not be verified"
                ),
                [_JSON_CT, (b"retry-after", b"5")],
            )
            return None
        except Exception:
            log.exception("the token verifier failed")
            await _respond(send, 500, _error_body(INTERNAL_ERROR, "Internal error"), [_JSON_CT])
            return None
        if resource.required_scopes and not info.scopes.issuperset(resource.required_scopes):
            await send_insufficient_scope(
                send, resource.resource_metadata_url, resource.required_scopes, info.scopes
            )
            return None
        return info


async def send_insufficient_scope(
    send: Send,
    resource_metadata: str | None,
    needed: Iterable[str],
    granted: Iterable[str] = (),
    request_id: Any = None,
) -> None:
    """Answer ``403`` with ``error="insufficient_scope"`` (RFC 6750 § 3.1).

    The ``scope`` parameter names the scopes needed *and* those already granted, so
    the client's step-up token keeps what it had (MCP authorization § scope challenge
    handling, the recommended approach); the JSON-RPC error's ``data.requiredScopes``
    names only the ones this request needs.
    """
    needed = sorted(set(needed))
    asked = sorted(set(needed).union(granted))
    missing = sorted(set(needed).difference(granted))
    header = www_authenticate(
        resource_metadata=resource_metadata,
        error="insufficient_scope",
        scopes=asked,
        description="this request needs the scopes " + " ".join(missing or needed),
    )
    body = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {
                "code": FORBIDDEN,
                "message": "insufficient scope: this request needs " + " ".join(needed),
                "data": {"requiredScopes": needed},
            },
        }
    )
    await _respond(send, 403, body, [_JSON_CT, (b"www-authenticate", header.encode())])


# -- raw ASGI helpers (this layer sits below mcpkit.transports, so it has its own) ----------------

_JSON_CT: Final = (b"content-type", b"application/json")


def _error_body(code: int, message: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})


async def _refuse(send: Send, status: int, challenge: str, code: int, message: str) -> None:
    await _respond(
        send,
        status,
        _error_body(code, message),
        [_JSON_CT, (b"www-authenticate", challenge.encode())],
    )


async def _respond(
    send: Send,
    status: int,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    *,
    length: int | None = None,
) -> None:
    size = len(body) if length is None else length
    out = [(b"content-length", str(size).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})
