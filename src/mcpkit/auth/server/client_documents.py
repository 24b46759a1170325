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
Only public clients (``token_endpoint_auth_method`` ``none``) are accepted for now.
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
from .redirects import MAX_REDIRECT_URIS, redirect_uri_problem
from .storage import RegisteredClient

__all__ = ["ClientDocuments", "is_document_url"]

_MAX_BYTES: Final = 5 * 1024
_MAX_NAME: Final = 200


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
        if not self.allow_private_addresses:
            await _check_public(urlsplit(client_id).hostname or "")
        http = self._http.get()
        request = http.build_request("GET", client_id, headers={"accept": "application/json"})
        try:
            data = await fetch_json(
                http,
                request,
                what="the client metadata document",
                timeout=self.timeout,
                max_bytes=_MAX_BYTES,
            )
        except VerifierUnavailable as exc:
            raise DocumentRefused(str(exc)) from None
        return _client_from(client_id, data, expires_at=time.time() + self.cache_ttl)

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
    if method != "none":
        raise DocumentRefused("only public clients (token_endpoint_auth_method none)")
    grants = data.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or "authorization_code" not in grants:
        raise DocumentRefused("the document's grant_types must include authorization_code")
    kept = {k: data[k] for k in ("client_uri", "logo_uri") if isinstance(data.get(k), str)}
    return RegisteredClient(
        client_id=client_id,
        redirect_uris=tuple(uris),
        token_endpoint_auth_method="none",
        grant_types=tuple(g for g in grants if g in ("authorization_code", "refresh_token")),
        client_name=name,
        scope=data.get("scope") if isinstance(data.get("scope"), str) else None,
        issued_at=time.time(),
        expires_at=expires_at,
        metadata={"client_id_metadata_document": True, **kept},
    )
