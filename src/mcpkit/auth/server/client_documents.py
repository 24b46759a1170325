"""Client ID Metadata Documents at the authorization server: an https URL as ``client_id``.

MCP authorization § client ID metadata documents (draft-ietf-oauth-client-id-metadata-
document): a client with no prior relationship names itself by the https URL of a JSON
document describing it. The server fetches it when it meets such a ``client_id``, checks
that the document's ``client_id`` is the URL exactly, that it lists its
``redirect_uris`` (checked as registered ones are) and a ``client_name``, and keeps it as
an expiring client record, so ``/token`` finds it and a later request fetches it again.

The fetch is the server reaching out to a URL an anonymous party chose (draft § 6): https
only, no user information, no redirects followed, a short timeout and a small body
(5 KiB, the draft's suggested bound), and a host that resolves to anything but public
addresses (loopback, private, link-local: the cloud metadata service) is refused before
the request. A name can resolve differently a moment later (DNS rebinding), so still run
the server where it cannot reach what it must not, or behind an egress proxy.

A document describes a public client (``token_endpoint_auth_method`` ``none``, the
default) or a confidential one with ``private_key_jwt`` (MCP authorization § client ID
metadata documents; RFC 7523 § 2.2), whose public keys are in the document (``jwks``) or
at its ``jwks_uri`` (fetched now, with the same guards, and kept with the record). A
shared secret is refused (``client_secret_*``, a ``client_secret``): with no registration
there is nothing to agree on one with (the draft's § 4.1).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from typing import Any, Final
from urllib.parse import urlsplit

from ..._extras import require_extra

with require_extra("auth", feature="the authorization server's client metadata documents"):
    import httpx

from ...errors import MCPKitError, VerifierUnavailable
from ..endpoints import HTTPClientSlot, fetch_json
from ..jwt import DEFAULT_ALGORITHMS as ASSERTION_ALGORITHMS
from .redirects import MAX_REDIRECT_URIS, redirect_uri_problem
from .storage import RegisteredClient

__all__ = ["ClientDocuments", "DocumentRefused", "is_document_url", "public_keys"]

_MAX_BYTES: Final = 5 * 1024
_MAX_JWKS_BYTES: Final = 16 * 1024
_MAX_KEYS: Final = 10
_MAX_NAME: Final = 200
# A client's keys are public and asymmetric: an "oct" key would be a shared secret.
_KEY_TYPES: Final = frozenset({"RSA", "EC", "OKP"})
_SECRET_METHODS: Final = frozenset(
    {"client_secret_basic", "client_secret_post", "client_secret_jwt"}
)


def is_document_url(client_id: str) -> bool:
    """True for a ``client_id`` that names a metadata document (an https URL with a path)."""
    if not client_id.startswith("https://") or len(client_id) > 2000:
        return False
    parts = urlsplit(client_id)
    return bool(
        parts.hostname
        and parts.path not in ("", "/")
        and not parts.fragment
        and parts.username is None
        and parts.password is None
        and "/./" not in parts.path
        and "/../" not in parts.path
    )


class DocumentRefused(MCPKitError):
    """The document could not be fetched or does not describe a usable client."""


class ClientDocuments:
    """Fetches and checks metadata documents; ``cache_ttl`` seconds before fetching again."""

    def __init__(
        self,
        *,
        cache_ttl: float = 3600.0,
        timeout: float = 5.0,
        http_client: httpx.AsyncClient | None = None,
        allow_private_addresses: bool = False,
    ) -> None:
        self.cache_ttl = cache_ttl
        self.allow_private_addresses = allow_private_addresses
        self.timeout = timeout
        self._http = HTTPClientSlot(http_client, timeout=timeout)

    async def fetch(self, client_id: str) -> RegisteredClient:
        """The client the document at ``client_id`` describes; :class:`DocumentRefused`."""
        if not is_document_url(client_id):
            raise DocumentRefused("the client id is not an https URL with a path")
        data = await self._get(client_id, "the client metadata document", _MAX_BYTES)
        client = _client_from(client_id, data, expires_at=time.time() + self.cache_ttl)
        jwks_uri = client.metadata.get("jwks_uri")
        if isinstance(jwks_uri, str):
            if not is_document_url(jwks_uri):
                raise DocumentRefused("the document's jwks_uri is not an https URL with a path")
            keys = await self._get(jwks_uri, "the client's jwks_uri", _MAX_JWKS_BYTES)
            client.metadata["jwks"] = public_keys(keys)
        return client

    async def _get(self, url: str, what: str, max_bytes: int) -> dict[str, Any]:
        if not self.allow_private_addresses:
            await _check_public(urlsplit(url).hostname or "")
        http = self._http.get()
        request = http.build_request("GET", url, headers={"accept": "application/json"})
        try:
            return await fetch_json(
                http, request, what=what, timeout=self.timeout, max_bytes=max_bytes
            )
        except VerifierUnavailable as exc:
            raise DocumentRefused(str(exc)) from None

    async def aclose(self) -> None:
        await self._http.aclose()


async def _check_public(host: str) -> None:
    """Refuse a host with any address that is not public (draft § 6.5, SSRF)."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, 443, type=socket.SOCK_STREAM)
    except OSError:
        raise DocumentRefused("the client metadata document's host does not resolve") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if not address.is_global:
            raise DocumentRefused("the client metadata document's host is not a public address")


def _client_from(client_id: str, data: dict[str, Any], *, expires_at: float) -> RegisteredClient:
    if data.get("client_id") != client_id:
        # The draft's § 4.1 rule: otherwise any document could speak for any URL.
        raise DocumentRefused("the document's client_id is not its own URL")
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
        raise DocumentRefused("the document must list its redirect_uris")
    for uri in uris:
        if (problem := redirect_uri_problem(uri)) is not None:
            raise DocumentRefused(problem)
    name = data.get("client_name")
    if not isinstance(name, str) or not name or len(name) > _MAX_NAME:
        raise DocumentRefused("the document must name the client (client_name)")
    method = data.get("token_endpoint_auth_method", "none")
    if method in _SECRET_METHODS or "client_secret" in data:
        raise DocumentRefused(
            f"a client metadata document cannot use a shared secret ({method}): nothing "
            "registers one; use private_key_jwt with jwks or jwks_uri, or none (PKCE)"
        )
    if method not in ("none", "private_key_jwt"):
        raise DocumentRefused("token_endpoint_auth_method must be none or private_key_jwt")
    kept: dict[str, Any] = {
        k: data[k] for k in ("client_uri", "logo_uri") if isinstance(data.get(k), str)
    }
    if method == "private_key_jwt":
        kept.update(_key_source(data))
    grants = data.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or "authorization_code" not in grants:
        raise DocumentRefused("the document's grant_types must include authorization_code")
    return RegisteredClient(
        client_id=client_id,
        redirect_uris=tuple(uris),
        token_endpoint_auth_method=method,
        grant_types=tuple(g for g in grants if g in ("authorization_code", "refresh_token")),
        client_name=name,
        scope=data.get("scope") if isinstance(data.get("scope"), str) else None,
        issued_at=time.time(),
        expires_at=expires_at,
        metadata={"client_id_metadata_document": True, **kept},
    )


def _key_source(data: dict[str, Any]) -> dict[str, Any]:
    """Where a ``private_key_jwt`` client's keys are: ``jwks`` or ``jwks_uri``, not both
    (RFC 7591 § 2), and the one signing algorithm it may announce."""
    jwks, jwks_uri = data.get("jwks"), data.get("jwks_uri")
    if (jwks is None) == (jwks_uri is None):
        raise DocumentRefused("private_key_jwt needs the client's keys: jwks or jwks_uri, one")
    kept: dict[str, Any] = {}
    if jwks_uri is not None:
        if not isinstance(jwks_uri, str):
            raise DocumentRefused("the document's jwks_uri must be a URL")
        kept["jwks_uri"] = jwks_uri
    else:
        kept["jwks"] = public_keys(jwks)
    alg = data.get("token_endpoint_auth_signing_alg")
    if alg is not None:
        if alg not in ASSERTION_ALGORITHMS:
            raise DocumentRefused("token_endpoint_auth_signing_alg must be an asymmetric one")
        kept["token_endpoint_auth_signing_alg"] = alg
    return kept


def public_keys(jwks: Any) -> dict[str, Any]:
    """A JWKS of public signing keys, bounded; :class:`DocumentRefused` otherwise."""
    keys = jwks.get("keys") if isinstance(jwks, dict) else None
    if not isinstance(keys, list) or not keys or len(keys) > _MAX_KEYS:
        raise DocumentRefused(f"the client's JWKS must hold 1 to {_MAX_KEYS} keys")
    for key in keys:
        if not isinstance(key, dict) or key.get("kty") not in _KEY_TYPES:
            raise DocumentRefused("the client's keys must be RSA, EC or OKP public keys")
        if "d" in key:  # the private part: published by mistake, and compromised
            raise DocumentRefused("the client's JWKS holds a private key")
        if key.get("use", "sig") != "sig":
            raise DocumentRefused("the client's keys must be signing keys")
    return {"keys": keys}
