"""Finding the authorization server of a protected MCP server.

Two documents, each with the fallbacks the specification orders
(basic/authorization of 2025-06-18 and 2025-11-25 § authorization server discovery):

1. Protected resource metadata (RFC 9728): the ``resource_metadata`` URL of the
   ``401``'s ``WWW-Authenticate`` header when present, else the well-known URL
   with the MCP endpoint's path inserted, else the one at the root. A document
   whose ``resource`` does not name this server is refused (RFC 9728 § 3.3: a
   document served for another resource could send our token elsewhere).
2. Authorization server metadata, for the issuer the resource names: RFC 8414
   path-inserted, OpenID Connect path-inserted, OpenID Connect path-appended (an
   issuer with a path), or RFC 8414 then OpenID Connect at the root (one
   without). The document's ``issuer`` must equal the issuer we asked for,
   character for character (RFC 8414 § 3.3; no URL normalisation).

A server of the 2025-03-26 revision has no resource metadata: its
authorization server is the MCP server's origin, whose RFC 8414 metadata is
read when served, else the default endpoints ``/authorize``, ``/token`` and
``/register`` are assumed (2025-03-26 basic/authorization § 2.3.3).

The functions take an ``httpx.AsyncClient`` and an
:class:`~.exchange.ExchangePolicy`: every document is read through
:func:`~.exchange.exchange` (https or loopback only, a size cap, a deadline), and
an authorization server whose metadata names a plain ``http`` endpoint is refused
before any of them is used. Nothing here follows a redirect or logs a response
body.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.discovery)"):
    import httpx

from ...errors import AuthorizationFailed
from .exchange import DEFAULT_POLICY, ExchangePolicy, exchange

__all__ = [
    "AuthServerMetadata",
    "ResourceMetadata",
    "authorization_server_urls",
    "canonical_resource",
    "discover_authorization_server",
    "discover_resource",
    "legacy_authorization_server",
    "resource_matches",
    "resource_metadata_urls",
]

log = logging.getLogger("mcpkit.auth.client")

_PRM: Final = "/.well-known/oauth-protected-resource"
_OAUTH: Final = "/.well-known/oauth-authorization-server"
_OIDC: Final = "/.well-known/openid-configuration"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceMetadata:
    """RFC 9728 metadata of one protected resource (the MCP server)."""

    resource: str
    authorization_servers: tuple[str, ...] = ()
    scopes_supported: tuple[str, ...] | None = None
    url: str | None = None  # where it was read; None for the 2025-03-26 stand-in
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthServerMetadata:
    """RFC 8414 / OpenID Connect metadata of one authorization server.

    ``legacy`` marks the 2025-03-26 default endpoints (no document was found).
    """

    issuer: str
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    registration_endpoint: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    legacy: bool = False

    def _list(self, key: str) -> tuple[str, ...] | None:
        value = self.raw.get(key)
        if isinstance(value, list):
            return tuple(str(v) for v in value)
        return None

    @property
    def scopes_supported(self) -> tuple[str, ...] | None:
        return self._list("scopes_supported")

    @property
    def token_endpoint_auth_methods(self) -> tuple[str, ...]:
        # RFC 8414 § 2: absent means client_secret_basic.
        return self._list("token_endpoint_auth_methods_supported") or ("client_secret_basic",)

    @property
    def grant_types(self) -> tuple[str, ...]:
        # RFC 8414 § 2: absent means authorization_code and implicit.
        return self._list("grant_types_supported") or ("authorization_code", "implicit")

    @property
    def iss_parameter_supported(self) -> bool:
        """RFC 9207 § 3: the server puts ``iss`` in every authorization response."""
        return self.raw.get("authorization_response_iss_parameter_supported") is True

    @property
    def client_id_metadata_document_supported(self) -> bool:
        return self.raw.get("client_id_metadata_document_supported") is True


def canonical_resource(server_url: str) -> str:
    """The MCP server's URL as a ``resource`` value: no fragment, no query, and
    lower-case scheme and host (basic/authorization § canonical server URI)."""
    parts = urlsplit(server_url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, "", ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def resource_metadata_urls(server_url: str, header_url: str | None) -> list[str]:
    """Where to look for the resource metadata, in the specification's order."""
    urls = [header_url] if header_url else []
    path = urlsplit(server_url).path.rstrip("/")
    origin = _origin(server_url)
    if path:
        urls.append(f"{origin}{_PRM}{path}")
    urls.append(f"{origin}{_PRM}")
    return list(dict.fromkeys(urls))


def _same_origin(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    default = {"http": 80, "https": 443}
    port_a = pa.port or default.get(pa.scheme.lower())
    port_b = pb.port or default.get(pb.scheme.lower())
    return (
        pa.scheme.lower() == pb.scheme.lower()
        and (pa.hostname or "").lower() == (pb.hostname or "").lower()
        and port_a == port_b
    )


def resource_matches(resource: str, server_url: str) -> bool:
    """Does the metadata's ``resource`` name this server?

    The same origin, and a path equal to the server's path or a parent of it at a
    segment boundary: a resource ``https://h`` or ``https://h/api`` covers the
    endpoint ``https://h/api/mcp`` (RFC 8707 § 2 lets a resource be less specific),
    ``https://h/ap`` does not.
    """
    if not _same_origin(resource, server_url):
        return False
    want = urlsplit(resource).path.rstrip("/")
    have = urlsplit(server_url).path.rstrip("/")
    return have == want or have.startswith(want + "/")


async def _get_json(
    http: httpx.AsyncClient, url: str, what: str, policy: ExchangePolicy
) -> dict[str, Any] | None:
    """The JSON object at ``url``; None for any 4xx/5xx, a non-object, or bad JSON."""
    request = http.build_request("GET", url, headers={"accept": "application/json"})
    try:
        resp = await exchange(http, request, what=what, policy=policy)
    except httpx.HTTPError as exc:
        raise AuthorizationFailed(
            f"cannot fetch OAuth metadata from {url}: {type(exc).__name__}",
            error="discovery_failed",
        ) from exc
    if resp.status_code != 200:
        log.debug("no metadata at %s (HTTP %d)", url, resp.status_code)
        return None
    try:
        data = resp.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


async def discover_resource(
    http: httpx.AsyncClient,
    server_url: str,
    header_url: str | None,
    *,
    policy: ExchangePolicy = DEFAULT_POLICY,
) -> ResourceMetadata | None:
    """The server's resource metadata, or None when it serves none (a 2025-03-26 server).

    Raises :class:`AuthorizationFailed` when the document names another resource
    (``resource_mismatch``) or an authorization server over plain http
    (``insecure_endpoint``).
    """
    for url in resource_metadata_urls(server_url, header_url):
        data = await _get_json(http, url, "the protected resource metadata", policy)
        if data is None:
            continue
        resource = data.get("resource")
        if not isinstance(resource, str) or not resource_matches(resource, server_url):
            raise AuthorizationFailed(
                f"the protected resource metadata at {url} is for {resource!r}, not for "
                f"{server_url}; refusing to authorize (RFC 9728 § 3.3)",
                error="resource_mismatch",
            )
        servers = data.get("authorization_servers")
        issuers = tuple(str(s) for s in servers) if isinstance(servers, list) else ()
        for issuer in issuers:
            # OAuth 2.1 § 1.5: refused on sight, before anything is fetched from it.
            policy.check_url(issuer, f"the authorization server named by {url}")
        scopes = data.get("scopes_supported")
        return ResourceMetadata(
            resource=resource,
            authorization_servers=issuers,
            scopes_supported=tuple(str(s) for s in scopes) if isinstance(scopes, list) else None,
            url=url,
            raw=data,
        )
    return None


def authorization_server_urls(issuer: str) -> list[str]:
    """The metadata URLs to try for ``issuer``, in the specification's order."""
    parts = urlsplit(issuer)
    origin = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    path = parts.path.rstrip("/")
    if path:
        return [f"{origin}{_OAUTH}{path}", f"{origin}{_OIDC}{path}", f"{origin}{path}{_OIDC}"]
    return [f"{origin}{_OAUTH}", f"{origin}{_OIDC}"]


def _server_metadata(data: Mapping[str, Any], *, legacy: bool = False) -> AuthServerMetadata:
    def text(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) and value else None

    return AuthServerMetadata(
        issuer=str(data.get("issuer")),
        authorization_endpoint=text("authorization_endpoint"),
        token_endpoint=text("token_endpoint"),
        registration_endpoint=text("registration_endpoint"),
        raw=dict(data),
        legacy=legacy,
    )


def _check_endpoints(data: Mapping[str, Any], url: str, policy: ExchangePolicy) -> None:
    """Every endpoint the metadata names is https (or loopback): OAuth 2.1 § 1.5, RFC 8414
    § 2 (``issuer``, ``*_endpoint``, ``jwks_uri``), before any of them is used."""
    for key, value in data.items():
        if isinstance(value, str) and (key in ("issuer", "jwks_uri") or key.endswith("_endpoint")):
            policy.check_url(value, f"the {key} of the authorization server metadata at {url}")


async def _metadata_at(
    http: httpx.AsyncClient, urls: Sequence[str], issuer: str, policy: ExchangePolicy
) -> AuthServerMetadata | None:
    for url in urls:
        data = await _get_json(http, url, "the authorization server metadata", policy)
        if data is None:
            continue
        if data.get("issuer") != issuer:
            # RFC 8414 § 3.3: MUST be identical, else the metadata MUST NOT be used:
            # another server's document could redirect our code and credentials.
            raise AuthorizationFailed(
                f"the authorization server metadata at {url} names issuer "
                f"{data.get('issuer')!r}, not {issuer!r}; refusing to use it (RFC 8414 § 3.3)",
                error="issuer_mismatch",
            )
        _check_endpoints(data, url, policy)
        return _server_metadata(data)
    return None


async def discover_authorization_server(
    http: httpx.AsyncClient, issuer: str, *, policy: ExchangePolicy = DEFAULT_POLICY
) -> AuthServerMetadata:
    """The metadata of ``issuer`` (an entry of the resource's ``authorization_servers``)."""
    policy.check_url(issuer, "the authorization server")
    metadata = await _metadata_at(http, authorization_server_urls(issuer), issuer, policy)
    if metadata is None:
        raise AuthorizationFailed(
            f"authorization server {issuer} serves no OAuth or OpenID Connect metadata",
            error="discovery_failed",
        )
    return metadata


async def legacy_authorization_server(
    http: httpx.AsyncClient, server_url: str, *, policy: ExchangePolicy = DEFAULT_POLICY
) -> AuthServerMetadata:
    """2025-03-26 § 2.3: the authorization server is the MCP server's origin (the path is
    discarded); its RFC 8414 metadata if served, else the default endpoints."""
    origin = _origin(server_url)
    policy.check_url(origin, "the authorization server (the MCP server's origin)")
    metadata = await _metadata_at(http, [f"{origin}{_OAUTH}"], origin, policy)
    if metadata is not None:
        return metadata
    return _server_metadata(
        {
            "issuer": origin,
            "authorization_endpoint": f"{origin}/authorize",
            "token_endpoint": f"{origin}/token",
            "registration_endpoint": f"{origin}/register",
        },
        legacy=True,
    )
