"""Requests to an authorization server's token endpoint (OAuth 2.1 § 3.2, RFC 6749 § 5).

:class:`TokenEndpoint` authenticates the client the way its registration says
(``token_endpoint_auth_method``), lets the request hooks decorate the request,
sends it and turns the answer into :class:`~.storage.OAuthTokens` or an
:class:`~mcpkit.errors.AuthorizationFailed` carrying the server's ``error``
code. Every grant (authorization code, refresh, and the extensions' client
credentials, JWT bearer, token exchange) goes through it.

Client authentication methods are functions in a table, so another one can be
added without touching this module: :data:`CLIENT_AUTH_METHODS` holds ``none``,
``client_secret_basic`` and ``client_secret_post`` (OAuth 2.1 § 2.4.1); pass
``OAuth(client_auth_methods={"private_key_jwt": fn})`` (RFC 7523 § 2.2) to add
one. A method receives a :class:`ClientAuthRequest` and edits its ``form`` and
``headers``.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias
from urllib.parse import quote_plus

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.token_endpoint)"):
    import httpx

from ...errors import AuthorizationFailed
from .discovery import AuthServerMetadata
from .exchange import DEFAULT_POLICY, ExchangePolicy, exchange
from .hooks import RequestHook
from .storage import ClientRegistration, OAuthTokens

__all__ = [
    "CLIENT_AUTH_METHODS",
    "ClientAuthMethod",
    "ClientAuthRequest",
    "TokenEndpoint",
    "choose_auth_method",
    "token_answer",
]

log = logging.getLogger("mcpkit.auth.client")


@dataclass(slots=True, kw_only=True)
class ClientAuthRequest:
    """What a client authentication method may read and change."""

    registration: ClientRegistration
    server: AuthServerMetadata
    token_endpoint: str
    form: dict[str, str] = field(repr=False)
    headers: dict[str, str] = field(repr=False)


ClientAuthMethod: TypeAlias = Callable[[ClientAuthRequest], Awaitable[None]]


async def _none(req: ClientAuthRequest) -> None:
    # OAuth 2.1 § 2.4: a public client identifies itself with client_id in the body.
    req.form["client_id"] = req.registration.client_id


def _secret(req: ClientAuthRequest) -> str:
    secret = req.registration.client_secret
    if not secret:
        raise AuthorizationFailed(
            f"client authentication {req.registration.token_endpoint_auth_method!r} needs a "
            "client secret and the registration has none",
            error="invalid_client",
        )
    return secret


async def _basic(req: ClientAuthRequest) -> None:
    # RFC 6749 § 2.3.1: both parts form-urlencoded before base64 (a ':' in the id).
    pair = f"{quote_plus(req.registration.client_id)}:{quote_plus(_secret(req))}"
    req.headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    # The id in the body as well: RFC 6749 § 4.1.3 allows it, and authorization servers
    # built on the official MCP SDK refuse a token request without it ("Missing client_id").
    req.form["client_id"] = req.registration.client_id


async def _post(req: ClientAuthRequest) -> None:
    req.form["client_id"] = req.registration.client_id
    req.form["client_secret"] = _secret(req)


CLIENT_AUTH_METHODS: Final[Mapping[str, ClientAuthMethod]] = {
    "none": _none,
    "client_secret_basic": _basic,
    "client_secret_post": _post,
}


def choose_auth_method(
    server: AuthServerMetadata, *, has_secret: bool, known: Sequence[str] = ()
) -> str:
    """The method to use with ``server`` when the registration does not say.

    With a secret: ``client_secret_basic``, else ``client_secret_post``, as the
    server supports them; then any other method we know (``known``) it supports.
    Without one: ``none``.
    """
    supported = server.token_endpoint_auth_methods
    if not has_secret:
        return "none"
    for method in ("client_secret_basic", "client_secret_post", *known):
        if method in supported:
            return method
    return "client_secret_basic"


def _tokens(data: Mapping[str, Any], issuer: str, previous: OAuthTokens | None) -> OAuthTokens:
    token = data.get("access_token")
    if not isinstance(token, str) or not token:
        raise AuthorizationFailed("the token endpoint answered without an access_token")
    expires_in = data.get("expires_in")
    expires_at = (
        time.time() + float(expires_in)
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool)
        else None
    )
    refresh = data.get("refresh_token")
    scope = data.get("scope")
    return OAuthTokens(
        access_token=token,
        token_type=str(data.get("token_type") or "Bearer"),
        expires_at=expires_at,
        # OAuth 2.1 § 4.3.3: a refresh answer without a new refresh token keeps the old one.
        refresh_token=refresh
        if isinstance(refresh, str)
        else (previous.refresh_token if previous else None),
        scope=scope if isinstance(scope, str) else (previous.scope if previous else None),
        issuer=issuer,
    )


class TokenEndpoint:
    """The token endpoint of one authorization server, for one client registration."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        server: AuthServerMetadata,
        registration: ClientRegistration,
        *,
        auth_methods: Mapping[str, ClientAuthMethod] | None = None,
        hooks: Sequence[RequestHook] = (),
        policy: ExchangePolicy = DEFAULT_POLICY,
    ) -> None:
        if not server.token_endpoint:
            raise AuthorizationFailed(
                f"authorization server {server.issuer} has no token endpoint",
                error="discovery_failed",
            )
        # Checked before the grant starts (before the user is sent to authorize), and again
        # by exchange() before anything is sent: no secret, code or verifier on plain http.
        self.url = policy.check_url(server.token_endpoint, "the token endpoint")
        self.http = http
        self.server = server
        self.registration = registration
        self.auth_methods = {**CLIENT_AUTH_METHODS, **(auth_methods or {})}
        self.hooks = tuple(hooks)
        self.policy = policy

    async def request(
        self, form: Mapping[str, str], *, previous: OAuthTokens | None = None
    ) -> OAuthTokens:
        """POST ``form`` (``grant_type`` and its parameters) and return the tokens.

        ``previous`` is the token set being refreshed (its refresh token is kept when
        the answer has none). Raises :class:`AuthorizationFailed` with the server's
        ``error`` (``invalid_grant``, ``invalid_client``...) when it refuses.
        """
        method_name = self.registration.token_endpoint_auth_method
        method = self.auth_methods.get(method_name)
        if method is None:
            raise AuthorizationFailed(
                f"client authentication method {method_name!r} is not available "
                f"(known: {', '.join(sorted(self.auth_methods))})",
                error="invalid_client",
            )
        resp: httpx.Response | None = None
        for attempt in range(2):
            req = ClientAuthRequest(
                registration=self.registration,
                server=self.server,
                token_endpoint=self.url,
                form=dict(form),
                headers={"accept": "application/json"},
            )
            await method(req)
            request = self.http.build_request("POST", self.url, data=req.form, headers=req.headers)
            for hook in self.hooks:
                await hook.before(request, purpose="token", tokens=None)
            try:
                resp = await exchange(
                    self.http, request, what="the token endpoint", policy=self.policy
                )
            except httpx.HTTPError as exc:
                raise AuthorizationFailed(
                    f"cannot reach the token endpoint {self.url}: {type(exc).__name__}",
                    error="token_request_failed",
                ) from exc
            if attempt == 0 and resp.status_code >= 400:
                again = False
                for hook in self.hooks:
                    again = await hook.retry(request, resp, purpose="token") or again
                if again:
                    continue
            break
        assert resp is not None
        return self._answer(resp, form.get("grant_type", "?"), previous)

    def _answer(
        self, resp: httpx.Response, grant_type: str, previous: OAuthTokens | None
    ) -> OAuthTokens:
        data = token_answer(resp, f"the token endpoint {self.url} refused the {grant_type} grant")
        log.debug("token endpoint %s issued tokens (%s grant)", self.url, grant_type)
        return _tokens(data, self.server.issuer, previous)


def token_answer(resp: httpx.Response, refused: str) -> dict[str, Any]:
    """A token endpoint's JSON answer, or :class:`AuthorizationFailed` saying ``refused``
    with the OAuth ``error`` code (RFC 6749 § 5.2) and a bounded description."""
    try:
        data = resp.json()
    except ValueError:
        data = None
    if resp.status_code != 200 or not isinstance(data, dict):
        error = data.get("error") if isinstance(data, dict) else None
        description = data.get("error_description") if isinstance(data, dict) else None
        text = refused + (f": {error}" if isinstance(error, str) else f" (HTTP {resp.status_code})")
        if isinstance(description, str):
            text += f" ({description[:200]})"
        raise AuthorizationFailed(text, error=error if isinstance(error, str) else None)
    return data
