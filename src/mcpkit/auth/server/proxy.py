"""``OAuthProxy``: an MCP authorization server in front of an upstream identity provider.

MCP clients expect dynamic registration, PKCE and the ``resource`` parameter; company
identity providers offer a fixed client and a fixed redirect URI. The proxy is both:
to MCP clients, an OAuth 2.1 authorization server (RFC 8414 metadata, RFC 7591
registration, ``/authorize`` with a consent page, ``/token``, RFC 7009 revocation); to
the identity provider, one pre-registered confidential client whose redirect URI is
``{base_url}/auth/callback``. It issues its own short-lived JWTs for the MCP resource
and keeps the provider's tokens server-side (no token passthrough, MCP authorization
§ access token privilege restriction).

::

    proxy = OAuthProxy(upstream=OIDCProvider(...), base_url="https://mcp.example.com")
    server = MCPServer(name="notes", version="1.0.0", auth=proxy.protected_resource())
    # server.http_app() now serves /mcp, its RFC 9728 metadata and the endpoints here
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from ..._buckets import BucketStore, MemoryBuckets
from ...errors import ConfigurationError
from ..info import AuthInfo
from ..jwt import JWTVerifier
from ..resource_config import url_problem
from ..resource_server import ProtectedResource
from ..token_cache import TokenCache
from .app import AuthServerApp
from .client_auth import assertion_metadata
from .client_documents import ClientDocuments
from .encryption import EncryptedStorage
from .handlers.callback import CALLBACK_PATH
from .handlers.token import GRANT_CLAIM
from .limits import RegistrationLimiter, SharedBuckets
from .metadata import metadata_document, metadata_paths
from .provider import UpstreamError, UpstreamProvider
from .signing import TokenSigner
from .storage import AuthServerStorage, MemoryAuthServerStorage

__all__ = ["CALLBACK_PATH", "OAuthProxy", "OwnTokenVerifier", "ProxiedResource"]


class OAuthProxy:
    """The authorization server's configuration and state (all options keyword-only).

    ``upstream``: the identity provider (:class:`~.presets.OIDCProvider`, ...).
    ``base_url``: this server's public URL: the issuer, and the base of every endpoint
    and of the upstream callback. ``resource``: the MCP endpoint tokens are issued for
    (default ``{base_url}/mcp``). ``storage``: :class:`~.storage.AuthServerStorage`
    (memory by default: one process). ``signing_key``: a private JWK or PEM (default:
    generated, so tokens die with the process). ``scopes_supported``: the scopes MCP
    clients may ask for (default: any, none named). ``remember_consent``: skip the
    consent page for a user who approved the client before (for ``consent_ttl``).
    ``registration_limit``: (registrations, seconds) allowed per client address (client
    metadata documents fetched count too); ``authorization_limit`` the same for
    authorization requests (each starts a flow record in the store). Shared by every
    node when ``storage`` is on Redis.
    ``encryption_key``: 32 bytes (or base64url text) that seal the provider's tokens and
    the client secrets in ``storage`` (:class:`~.encryption.EncryptedStorage`).
    ``client_documents``: accept https URLs as client ids (Client ID Metadata Documents;
    True: :class:`~.client_documents.ClientDocuments` with its defaults, False: off).
    Lifetimes in seconds.
    """

    def __init__(
        self,
        *,
        upstream: UpstreamProvider,
        base_url: str,
        resource: str | None = None,
        storage: AuthServerStorage | None = None,
        signing_key: Any = None,
        scopes_supported: Sequence[str] = (),
        access_token_ttl: float = 900.0,
        refresh_token_ttl: float = 30 * 86400.0,
        code_ttl: float = 60.0,
        flow_ttl: float = 600.0,
        client_ttl: float | None = None,
        remember_consent: bool = True,
        consent_ttl: float = 30 * 86400.0,
        registration_limit: tuple[int, float] = (20, 3600.0),
        authorization_limit: tuple[int, float] = (60, 60.0),
        encryption_key: bytes | str | None = None,
        client_documents: ClientDocuments | bool = True,
    ) -> None:
        base_url = base_url.rstrip("/")
        if (problem := url_problem("base_url", base_url)) is not None:
            raise ConfigurationError(f"OAuthProxy: {problem}")
        self.base_url = base_url
        self.issuer = base_url
        self.resource = resource or f"{base_url}/mcp"
        if (problem := url_problem("resource", self.resource)) is not None:
            raise ConfigurationError(f"OAuthProxy: {problem}")
        self.upstream = upstream
        inner = storage or MemoryAuthServerStorage()
        self.storage: AuthServerStorage = (
            inner if encryption_key is None else EncryptedStorage(inner, key=encryption_key)
        )
        self.signer = TokenSigner(
            issuer=self.issuer, key=signing_key, access_token_ttl=access_token_ttl
        )
        self.scopes_supported = tuple(scopes_supported)
        self.refresh_token_ttl = refresh_token_ttl
        self.code_ttl = code_ttl
        self.flow_ttl = flow_ttl
        self.client_ttl = client_ttl
        self.remember_consent = remember_consent
        self.consent_ttl = consent_ttl
        base = inner.inner if isinstance(inner, EncryptedStorage) else inner
        shared = base.rate_buckets() if isinstance(base, SharedBuckets) else None
        limit, window = registration_limit
        self.registration_limiter = RegistrationLimiter(limit=limit, window=window, buckets=shared)
        limit, window = authorization_limit
        self.authorization_limiter = RegistrationLimiter(
            limit=limit, window=window, name="authorize", buckets=shared
        )
        #: The client assertions' jti values spent (client_auth), on every node with Redis.
        self.replay_buckets: BucketStore = shared or MemoryBuckets()
        self.client_documents: ClientDocuments | None = (
            ClientDocuments() if client_documents is True else client_documents or None
        )
        self.callback_url = f"{base_url}{CALLBACK_PATH}"
        self._refresh_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self.secure_cookies = base_url.startswith("https://")
        self._metadata = metadata_document(
            issuer=self.issuer,
            scopes_supported=self.scopes_supported,
            signing_alg=self.signer.algorithm,
        )
        if self.client_documents is not None:
            # MCP authorization § client ID metadata documents: clients look for this;
            # such a client may authenticate with private_key_jwt (client_auth).
            self._metadata["client_id_metadata_document_supported"] = True
            self._metadata.update(assertion_metadata(self._metadata))
        self.metadata_paths = metadata_paths(self.issuer)

    def __repr__(self) -> str:
        return f"OAuthProxy(issuer={self.issuer!r}, upstream={self.upstream!r})"

    def metadata(self) -> dict[str, Any]:
        """The RFC 8414 document (a copy)."""
        return dict(self._metadata)

    def protected_resource(self, **options: Any) -> ProtectedResource:
        """The MCP endpoint as a resource protected by this server's tokens.

        Give it to ``MCPServer(auth=...)`` or ``server.http_app(auth=...)``: the app it
        protects is served with this authorization server's endpoints beside it, so
        ``mcpkit run ... -t http`` serves both. ``options`` go to
        :class:`~mcpkit.auth.ProtectedResource` (``resource_name``, ``required_scopes``...).
        """
        options.setdefault("scopes_supported", self.scopes_supported)
        return ProxiedResource(
            self,
            resource=self.resource,
            authorization_servers=[self.issuer],
            verifier=OwnTokenVerifier(self),
            **options,
        )

    async def revoke_consent(self, subject: str, client_id: str) -> None:
        """Forget that ``subject`` approved ``client_id``: the consent page shows again."""
        await self.storage.revoke_consent(subject, client_id)

    async def upstream_token(self, auth: AuthInfo | None, *, margin: float = 30.0) -> str:
        """The identity provider's access token for the user behind ``auth`` (``ctx.auth``).

        ``await ctx.auth.upstream_token()`` is the same call (:class:`OwnTokenVerifier`
        links this server's tokens to it). For tools that call the provider's APIs on the user's behalf; the token never
        leaves the server. Refreshed first (and the new tokens kept) when it expires
        within ``margin`` seconds. :class:`UpstreamError` when ``auth`` is not a token
        of this server or the grant was revoked, expired, or cannot be refreshed.
        """
        if auth is None or auth.issuer != self.issuer:
            raise UpstreamError("the request carries no token of this authorization server")
        grant_id = auth.claims.get(GRANT_CLAIM)
        if not isinstance(grant_id, str):
            raise UpstreamError("the token names no grant")
        async with self._refresh_locks.setdefault(grant_id, asyncio.Lock()):
            tokens = await self.storage.load_upstream_tokens(grant_id)
            if tokens is None:
                raise UpstreamError("the grant was revoked or has expired")
            due = tokens.access_expires_at
            if due is None or time.time() < due - margin:
                return tokens.access_token
            if tokens.refresh_token is None:
                raise UpstreamError("the provider's token expired and cannot be refreshed")
            fresh = await self.upstream.refresh(tokens.refresh_token)
            await self.storage.save_upstream_tokens(
                replace(
                    tokens,
                    access_token=fresh.access_token,
                    refresh_token=fresh.refresh_token,
                    scope=fresh.scope or tokens.scope,
                    access_expires_at=fresh.expires_at,
                )
            )
            return fresh.access_token

    def app(self, inner: Any = None) -> Any:
        """An ASGI app serving this server's endpoints, and ``inner`` for every other path."""
        return AuthServerApp(self, inner)

    def check_scopes(self, requested: Sequence[str]) -> tuple[str, ...] | None:
        """``requested`` when this server may grant it, else None (``invalid_scope``)."""
        if self.scopes_supported and not set(requested) <= set(self.scopes_supported):
            return None
        return tuple(dict.fromkeys(requested))

    def client_lifetime(self, now: float) -> float | None:
        return None if self.client_ttl is None else now + self.client_ttl


class ProxiedResource(ProtectedResource):
    """A :class:`~mcpkit.auth.ProtectedResource` whose protected app also serves its
    authorization server (:meth:`OAuthProxy.protected_resource`)."""

    __slots__ = ("proxy",)

    def __init__(self, proxy: OAuthProxy, **options: Any) -> None:
        super().__init__(**options)
        self.proxy = proxy

    def protect(self, app: Any, *, paths: Iterable[str] = ()) -> Any:
        return AuthServerApp(self.proxy, super().protect(app, paths=paths))


class OwnTokenVerifier:
    """The check of this server's own access tokens, whose :class:`AuthInfo` carries
    :meth:`OAuthProxy.upstream_token` as its ``upstream`` accessor, so a tool asks
    ``await ctx.auth.upstream_token()`` without holding the proxy.

    The JWT check is :meth:`TokenSigner.verifier`'s; the results are cached here (by
    token, until its ``exp`` or ``cache_ttl``) with the accessor already set, so a
    repeated token still costs one lookup and keeps its memoised principal.
    """

    __slots__ = ("_cache", "_jwt", "_source", "cache_ttl")

    def __init__(
        self, proxy: OAuthProxy, *, cache_size: int = 10_000, cache_ttl: float = 300.0
    ) -> None:
        self._jwt: JWTVerifier = proxy.signer.verifier(audience=proxy.resource, cache_size=0)
        self._source = proxy.upstream_token
        self._cache: TokenCache[AuthInfo] = TokenCache(cache_size)
        self.cache_ttl = cache_ttl

    async def verify(self, token: str) -> AuthInfo:
        now = time.time()
        cached = self._cache.get(token, now=now)
        if cached is not None:
            return cached
        info = replace(await self._jwt.verify(token), upstream=self._source)
        if info.expires_at is not None:
            self._cache.put(token, info, until=min(info.expires_at, now + self.cache_ttl))
        return info
