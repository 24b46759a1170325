"""``OAuth``: the httpx authentication flow that connects a client to a protected server.

``Client(url=..., auth=OAuth(...))`` hands it to the HTTP transports, which run
every request through :meth:`OAuth.async_auth_flow`:

1. Attach the stored access token, if any (refreshed first when it is about to
   expire and the server gave a refresh token), then the request hooks.
2. On ``401``: discover the authorization server from the challenge
   (:mod:`.discovery`), refresh the token when that can work, else register if
   needed (:mod:`.registration`) and run the grant (:mod:`.grants`); then send the
   request again, once.
3. On ``403`` with ``error="insufficient_scope"``: step up, asking for the scopes
   already requested plus the challenged ones (basic/authorization § step-up
   authorization flow), at most ``max_step_up`` times for one request; then
   :class:`~mcpkit.errors.AuthorizationFailed`.

One OAuth object may serve many servers: tokens and registrations are kept in
its storage under the server's URL. Authorizations are serialised, so
concurrent requests that meet the same ``401`` run one flow, not several.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.oauth)"):
    import httpx

from ...errors import AuthorizationFailed, ConfigurationError
from ..challenge import parse_www_authenticate
from .authorizers import Authorizer
from .discovery import (
    AuthServerMetadata,
    ResourceMetadata,
    canonical_resource,
    discover_authorization_server,
    discover_resource,
    legacy_authorization_server,
)
from .exchange import DEFAULT_MAX_RESPONSE_SIZE, ExchangePolicy
from .grants import AuthorizationCodeGrant, Grant, GrantContext, union_scopes
from .hooks import RequestHook
from .registration import (
    client_metadata,
    dynamic_registration,
    metadata_document_registration,
    usable,
)
from .storage import ClientRegistration, MemoryTokenStorage, OAuthTokens, TokenStorage
from .token_endpoint import (
    CLIENT_AUTH_METHODS,
    ClientAuthMethod,
    TokenEndpoint,
    choose_auth_method,
)

__all__ = ["OAuth"]

log = logging.getLogger("mcpkit.auth.client")


@dataclass(slots=True)
class _Server:
    """What discovery found for one protected server."""

    resource: str
    resource_metadata: ResourceMetadata | None
    server: AuthServerMetadata
    scope: str | None = None  # the scope last requested from it


class OAuth(httpx.Auth):
    """OAuth 2.1 authorization for MCP over HTTP (see the module docstring).

    How tokens are obtained: ``grant`` (default: the authorization code grant
    with ``authorizer``, default :class:`~.loopback.LoopbackAuthorizer`).
    How the client is known: ``client_id``/``client_secret``
    (pre-registered; ``token_endpoint_auth_method`` when the server's metadata
    should not decide, ``client_issuer`` to use them with that authorization
    server only), else ``client_metadata_url`` (a Client ID Metadata Document,
    when the server supports them), else Dynamic Client Registration with
    ``client_name`` and ``client_metadata``. ``scopes`` replaces the
    specification's scope selection. ``storage`` keeps tokens and
    registrations (in memory by default). ``hooks`` decorate requests
    (:mod:`.hooks`); ``client_auth_methods`` adds token endpoint
    authentication methods (:mod:`.token_endpoint`).

    Every request to the authorization servers and every metadata read is bounded
    (:mod:`.exchange`): ``timeout`` seconds for the whole exchange, answers of at
    most ``max_response_size`` bytes, and https only except on loopback hosts
    unless ``allow_insecure_http``.
    """

    requires_request_body = True  # the request is sent again after a 401 or 403

    def __init__(
        self,
        *,
        authorizer: Authorizer | None = None,
        grant: Grant | None = None,
        storage: TokenStorage | None = None,
        scopes: Sequence[str] | str | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        client_issuer: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "mcpkit",
        client_metadata: Mapping[str, Any] | None = None,
        client_auth_methods: Mapping[str, ClientAuthMethod] | None = None,
        hooks: Sequence[RequestHook] = (),
        max_step_up: int = 2,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        max_response_size: int = DEFAULT_MAX_RESPONSE_SIZE,
        allow_insecure_http: bool = False,
    ) -> None:
        if grant is not None and authorizer is not None:
            raise ConfigurationError("OAuth takes authorizer= or grant=, not both")
        if client_secret is not None and client_id is None:
            raise ConfigurationError("OAuth(client_secret=...) needs client_id=")
        if client_metadata_url is not None and not client_metadata_url.startswith("https://"):
            # draft-ietf-oauth-client-id-metadata-document § 3: an https URL with a path.
            raise ConfigurationError("client_metadata_url must be an https:// URL")
        if isinstance(max_step_up, bool) or not isinstance(max_step_up, int) or max_step_up < 0:
            raise ConfigurationError(f"max_step_up must be an integer >= 0, not {max_step_up!r}")
        if grant is None:
            if authorizer is None:
                from .loopback import LoopbackAuthorizer

                authorizer = LoopbackAuthorizer()
            grant = AuthorizationCodeGrant(authorizer)
        self.grant = grant
        self.storage: TokenStorage = storage if storage is not None else MemoryTokenStorage()
        self.scopes = (
            " ".join(scopes.split() if isinstance(scopes, str) else scopes)
            if (scopes is not None)
            else None
        )
        self.client_id = client_id
        self._client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.client_issuer = client_issuer
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.client_metadata = dict(client_metadata or {})
        self.client_auth_methods = {**CLIENT_AUTH_METHODS, **(client_auth_methods or {})}
        self.hooks = tuple(hooks)
        self.max_step_up = max_step_up
        self.timeout = timeout
        self.policy = ExchangePolicy(
            max_response_size=max_response_size,
            timeout=timeout,
            allow_insecure_http=allow_insecure_http,
        )
        self._http_client = http_client
        self._servers: dict[str, _Server] = {}
        self._lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        return (
            f"OAuth(grant={type(self.grant).__name__}, client_id={self.client_id!r}, "
            f"storage={self.storage!r})"
        )

    # -- the httpx flow ---------------------------------------------------------------------
    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        # httpx.Auth's default would send the request without a token, silently.
        raise ConfigurationError("OAuth works with httpx.AsyncClient (mcpkit's transports) only")
        yield request  # pragma: no cover - makes this a generator, as httpx expects

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        # The legacy SSE transport POSTs to another path of the same server: it names the
        # server in this extension so the same tokens apply.
        named = request.extensions.get("mcpkit.server_url")
        url = canonical_resource(named if isinstance(named, str) else str(request.url))
        tokens = await self._current_tokens(url)
        unauthorized_seen = False
        step_ups = 0
        hook_retried = False
        while True:
            await self._prepare(request, tokens)
            response = yield request
            if not hook_retried and await self._hooks_retry(request, response):
                hook_retried = True
                continue
            hook_retried = False
            if response.status_code == 401 and not unauthorized_seen:
                unauthorized_seen = True
                tokens = await self._unauthorized(url, _challenge(response), tokens)
                continue
            challenge = _challenge(response) if response.status_code == 403 else {}
            if challenge.get("error") == "insufficient_scope":
                if step_ups >= self.max_step_up:
                    raise AuthorizationFailed(
                        f"{url} still refuses the token for insufficient scope after "
                        f"{step_ups} step-up authorization(s); giving up",
                        error="insufficient_scope",
                    )
                step_ups += 1
                tokens = await self._step_up(url, challenge)
                continue
            return

    async def _prepare(self, request: httpx.Request, tokens: OAuthTokens | None) -> None:
        if tokens is None:
            request.headers.pop("authorization", None)
        else:
            kind = "Bearer" if tokens.token_type.lower() == "bearer" else tokens.token_type
            request.headers["authorization"] = f"{kind} {tokens.access_token}"
        for hook in self.hooks:
            await hook.before(request, purpose="resource", tokens=tokens)

    async def _hooks_retry(self, request: httpx.Request, response: httpx.Response) -> bool:
        again = False
        for hook in self.hooks:
            again = await hook.retry(request, response, purpose="resource") or again
        return again

    # -- tokens -----------------------------------------------------------------------------
    def _flow_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    @contextlib.asynccontextmanager
    async def _http(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._http_client is not None:
            yield self._http_client
            return
        async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as http:
            yield http

    async def _current_tokens(self, url: str) -> OAuthTokens | None:
        tokens = await self.storage.load_tokens(url)
        if tokens is None or not tokens.expired() or not tokens.refresh_token:
            return tokens
        known = self._servers.get(url)
        if known is None or tokens.issuer != known.server.issuer:
            return tokens  # the 401 will tell where to refresh
        async with self._flow_lock():
            stored = await self.storage.load_tokens(url)
            if stored is not None and stored.access_token != tokens.access_token:
                return stored
            try:
                async with self._http() as http:
                    return await self._refresh(http, url, known, tokens)
            except AuthorizationFailed as exc:
                log.info("refreshing the token for %s failed (%s)", url, exc.error)
                return None

    async def _unauthorized(
        self, url: str, challenge: Mapping[str, str], sent: OAuthTokens | None
    ) -> OAuthTokens:
        async with self._flow_lock():
            stored = await self.storage.load_tokens(url)
            if stored is not None and (sent is None or stored.access_token != sent.access_token):
                return stored  # another request authorized while this one waited
            async with self._http() as http:
                found = await self._discover(http, url, challenge)
                if (
                    stored is not None
                    and stored.refresh_token
                    and stored.issuer == found.server.issuer
                ):
                    try:
                        return await self._refresh(http, url, found, stored)
                    except AuthorizationFailed as exc:
                        log.info("refreshing the token for %s failed (%s)", url, exc.error)
                scope = self._select_scope(challenge, found)
                return await self._run_grant(http, url, found, scope)

    async def _step_up(self, url: str, challenge: Mapping[str, str]) -> OAuthTokens:
        async with self._flow_lock(), self._http() as http:
            previous = self._servers.get(url)
            found = await self._discover(http, url, challenge)
            wanted = challenge.get("scope") or self._select_scope(challenge, found)
            # SEP-2350: keep what was granted before, so the new token does not lose it.
            scope = union_scopes(previous.scope if previous else None, wanted)
            log.info("step-up authorization for %s (scope %s)", url, scope)
            return await self._run_grant(http, url, found, scope)

    async def _discover(
        self, http: httpx.AsyncClient, url: str, challenge: Mapping[str, str]
    ) -> _Server:
        policy = self.policy
        header_url = challenge.get("resource_metadata")
        metadata = await discover_resource(http, url, header_url, policy=policy)
        if metadata is None:
            server = await legacy_authorization_server(http, url, policy=policy)
            resource = url
        else:
            if not metadata.authorization_servers:
                raise AuthorizationFailed(
                    f"the protected resource metadata of {url} names no authorization server",
                    error="discovery_failed",
                )
            issuer = metadata.authorization_servers[0]
            server = await discover_authorization_server(http, issuer, policy=policy)
            resource = metadata.resource
        previous = self._servers.get(url)
        found = _Server(resource, metadata, server, previous.scope if previous else None)
        if previous is not None and previous.server.issuer != server.issuer:
            found.scope = None
        self._servers[url] = found
        log.info("%s is protected by %s", url, server.issuer)
        return found

    def _select_scope(self, challenge: Mapping[str, str], found: _Server) -> str | None:
        """basic/authorization § scope selection strategy, then SEP-2207's ``offline_access``."""
        if self.scopes is not None:
            return self.scopes or None  # the caller's choice, exactly
        if challenge.get("scope"):
            scope: str | None = challenge["scope"]
        elif found.resource_metadata and found.resource_metadata.scopes_supported:
            scope = " ".join(found.resource_metadata.scopes_supported)
        else:
            scope = None
        if (
            scope
            and "offline_access" in (found.server.scopes_supported or ())
            and "refresh_token" in self.grant.grant_types
        ):
            scope = union_scopes(scope, "offline_access")
        return scope

    async def _run_grant(
        self, http: httpx.AsyncClient, url: str, found: _Server, scope: str | None
    ) -> OAuthTokens:
        registration = await self._registration(http, url, found.server)
        ctx = GrantContext(
            http=http,
            server_url=url,
            resource=found.resource,
            resource_metadata=found.resource_metadata,
            server=found.server,
            registration=registration,
            scope=scope,
            token_endpoint=self._token_endpoint(http, found.server, registration),
            policy=self.policy,
        )
        tokens = await self.grant.obtain(ctx)
        found.scope = scope
        await self.storage.save_tokens(url, tokens)
        return tokens

    async def _refresh(
        self, http: httpx.AsyncClient, url: str, found: _Server, tokens: OAuthTokens
    ) -> OAuthTokens:
        assert tokens.refresh_token is not None
        registration = await self._registration(http, url, found.server)
        form = {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "resource": found.resource,
        }
        endpoint = self._token_endpoint(http, found.server, registration)
        fresh = await endpoint.request(form, previous=tokens)
        await self.storage.save_tokens(url, fresh)
        log.info("refreshed the access token for %s", url)
        return fresh

    def _token_endpoint(
        self, http: httpx.AsyncClient, server: AuthServerMetadata, registration: ClientRegistration
    ) -> TokenEndpoint:
        return TokenEndpoint(
            http,
            server,
            registration,
            auth_methods=self.client_auth_methods,
            hooks=self.hooks,
            policy=self.policy,
        )

    # -- registration -----------------------------------------------------------------------
    async def _registration(
        self, http: httpx.AsyncClient, url: str, server: AuthServerMetadata
    ) -> ClientRegistration:
        if self.client_id is not None and self.client_issuer in (None, server.issuer):
            method = self.token_endpoint_auth_method or choose_auth_method(
                server,
                has_secret=self._client_secret is not None,
                known=tuple(self.client_auth_methods),
            )
            return ClientRegistration(
                client_id=self.client_id,
                client_secret=self._client_secret,
                token_endpoint_auth_method=method,
                issuer=self.client_issuer,
            )
        stored = await self.storage.load_registration(url)
        if stored is not None and usable(stored, server.issuer):
            return stored
        if stored is not None:
            # SEP-2352: credentials are bound to the server that issued them; the tokens
            # of the old server go too.
            log.info("%s moved to %s; registering again", url, server.issuer)
            await self.storage.clear(url)
        if self.client_metadata_url and server.client_id_metadata_document_supported:
            registration = metadata_document_registration(self.client_metadata_url, server)
        else:
            registration = await dynamic_registration(
                http, server, self.registration_metadata(server), policy=self.policy
            )
        await self.storage.save_registration(url, registration)
        return registration

    def registration_metadata(self, server: AuthServerMetadata | None = None) -> dict[str, Any]:
        """The client metadata sent to Dynamic Client Registration (RFC 7591 § 2).

        Also the content of a Client ID Metadata Document, with ``client_id`` set to
        its URL: host ``oauth.registration_metadata()`` plus that key at
        ``client_metadata_url``.
        """
        supported = server.token_endpoint_auth_methods if server is not None else ("none",)
        method = next(
            (m for m in ("none", "client_secret_basic", "client_secret_post") if m in supported),
            supported[0] if supported else "none",
        )
        metadata = client_metadata(
            client_name=self.client_name,
            redirect_uris=self.grant.redirect_uris,
            grant_types=self.grant.grant_types,
            token_endpoint_auth_method=method,
            extra=self.client_metadata,
        )
        if self.client_metadata_url and server is None:
            metadata["client_id"] = self.client_metadata_url
        return metadata


def _challenge(response: httpx.Response) -> dict[str, str]:
    """The ``WWW-Authenticate`` parameters (Bearer, else DPoP, RFC 9449 § 7.1)."""
    values = response.headers.get_list("www-authenticate")
    for scheme in ("Bearer", "DPoP"):
        for value in values:
            params = parse_www_authenticate(value, scheme=scheme)
            if params is not None:
                return params
    return {}
