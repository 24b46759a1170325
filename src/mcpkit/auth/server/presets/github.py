"""GitHub as the authorization server's identity provider (OAuth 2.0, not OpenID Connect).

GitHub publishes no discovery document and issues no ID token. Its endpoints are fixed
(``{base_url}/login/oauth/authorize`` and ``/login/oauth/access_token``) and who signed in
comes from the REST API: ``GET {api_url}/user`` with the user's token. The subject is the
account's numeric ``id`` as a string, never the ``login``: a login can be renamed and then
taken by another account, so it is only a claim (``preferred_username``). What GitHub
does differently from RFC 6749, as documented: the token endpoint answers form-encoded
unless asked for JSON (``Accept: application/json``), reports a refused code or refresh
token as HTTP 200 with an ``error`` field, and lists granted scopes comma-separated.
OAuth apps' tokens do not expire; a GitHub App with expiring user tokens gets
``expires_in`` and a refresh token (rotated on every use), which :meth:`refresh` renews.
GitHub Enterprise Server: ``base_url="https://HOST"``, ``api_url="https://HOST/api/v3"``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, Final

from ...._extras import require_extra

# As in .oidc: the package's first import meets a missing extra, whichever preset is asked.
with require_extra("auth", feature="identity provider support (mcpkit.auth.server.presets)"):
    import httpx

from ....errors import ConfigurationError, VerifierUnavailable
from ...endpoints import HTTPClientSlot, check_endpoint_url, fetch_json
from ..provider import UpstreamError, UpstreamGrant, UpstreamIdentity
from .oidc import expires_at_of

__all__ = ["GitHubProvider", "github"]

_MAX_BYTES: Final = 256 * 1024
# GitHub's REST API refuses requests without a User-Agent and asks for a version.
_API_HEADERS: Final = {
    "accept": "application/vnd.github+json",
    "x-github-api-version": "2022-11-28",
    "user-agent": "mcpkit-auth-server",
}


class GitHubProvider:
    """Sign-in with a GitHub OAuth app (or a GitHub App's user authorization).

    ``client_id``/``client_secret`` are the app's; its callback URL is
    ``{public_url}/auth/callback``. ``scopes``: ``read:user`` reads the profile,
    ``user:email`` the verified address when the profile shows none. The tokens the
    tools get (:meth:`~mcpkit.auth.AuthInfo.upstream_token`) carry these scopes.
    """

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str,
        scopes: Sequence[str] = ("read:user", "user:email"),
        base_url: str = "https://github.com",
        api_url: str = "https://api.github.com",
        name: str = "GitHub",
        timeout: float = 10.0,
        http_client: httpx.AsyncClient | None = None,
        allow_insecure_http: bool = False,
    ) -> None:
        if not client_id or not client_secret:
            raise ConfigurationError("GitHubProvider: client_id and client_secret are required")
        insecure = allow_insecure_http
        self.base_url = check_endpoint_url(
            base_url.rstrip("/"), what="GitHub base_url", allow_insecure_http=insecure
        )
        self.api_url = check_endpoint_url(
            api_url.rstrip("/"), what="GitHub api_url", allow_insecure_http=insecure
        )
        self.client_id = client_id
        self._secret = client_secret
        self.scopes = tuple(dict.fromkeys(scopes))
        self._name = name
        self.timeout = timeout
        self._http = HTTPClientSlot(http_client, timeout=timeout)

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"GitHubProvider(base_url={self.base_url!r}, client_id={self.client_id!r})"

    async def authorization_url(
        self, *, redirect_uri: str, state: str, code_challenge: str, nonce: str
    ) -> str:
        # No nonce: there is no ID token to carry it; PKCE and state bind the answer.
        query = httpx.QueryParams(
            client_id=self.client_id,
            redirect_uri=redirect_uri,
            scope=" ".join(self.scopes),
            state=state,
            code_challenge=code_challenge,
            code_challenge_method="S256",
        )
        return f"{self.base_url}/login/oauth/authorize?{query}"

    async def complete(
        self,
        *,
        code: str,
        redirect_uri: str,
        code_verifier: str,
        nonce: str,
        iss: str | None,
    ) -> UpstreamIdentity:
        if iss is not None and iss != self.base_url:
            raise UpstreamError("the callback names another issuer (RFC 9207)")
        answer = await self._token_request(
            {"code": code, "redirect_uri": redirect_uri, "code_verifier": code_verifier}
        )
        access = answer["access_token"]
        user = await self._api(access, "/user")
        user_id = user.get("id")
        if isinstance(user_id, bool) or not isinstance(user_id, int):
            raise UpstreamError("GitHub's /user answer has no numeric id")
        claims: dict[str, Any] = {"github_id": user_id}
        for claim, key in (("preferred_username", "login"), ("name", "name"),
                           ("email", "email"), ("picture", "avatar_url"),
                           ("profile", "html_url")):  # fmt: skip
            if isinstance(user.get(key), str):
                claims[claim] = user[key]
        scope = _scope(answer)
        if "email" not in claims and "user:email" in (scope or "").split():
            claims.update(await self._primary_email(access))
        refresh = answer.get("refresh_token")
        return UpstreamIdentity(
            subject=str(user_id),
            claims=claims,
            access_token=access,
            refresh_token=refresh if isinstance(refresh, str) else None,
            scope=scope,
            expires_at=expires_at_of(answer),
        )

    async def refresh(self, refresh_token: str) -> UpstreamGrant:
        answer = await self._token_request(
            {"grant_type": "refresh_token", "refresh_token": refresh_token}
        )
        refresh = answer.get("refresh_token")
        return UpstreamGrant(
            access_token=answer["access_token"],
            # GitHub rotates: the new one replaces the old (kept only if none came).
            refresh_token=refresh if isinstance(refresh, str) else refresh_token,
            scope=_scope(answer),
            expires_at=expires_at_of(answer),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _token_request(self, form: dict[str, str]) -> dict[str, Any]:
        """The token endpoint's JSON answer, its ``error`` (sent with HTTP 200) raised."""
        http = self._http.get()
        request = http.build_request(
            "POST",
            f"{self.base_url}/login/oauth/access_token",
            data={**form, "client_id": self.client_id, "client_secret": self._secret},
            # Without it GitHub answers application/x-www-form-urlencoded.
            headers={"accept": "application/json"},
        )
        try:
            answer = await fetch_json(
                http, request, what="GitHub's token endpoint", timeout=self.timeout,
                max_bytes=_MAX_BYTES,
            )  # fmt: skip
        except VerifierUnavailable as exc:
            raise UpstreamError(str(exc), error="temporarily_unavailable") from None
        error = answer.get("error")
        if error is not None:
            # The code only: GitHub's description is not needed in mcpkit's logs.
            raise UpstreamError(f"GitHub refused the grant ({error})", error="access_denied")
        if not isinstance(answer.get("access_token"), str):
            raise UpstreamError("GitHub's token answer has no access token")
        if str(answer.get("token_type", "bearer")).lower() != "bearer":
            raise UpstreamError("GitHub's token answer is not a bearer token")
        return answer

    async def _api(self, access_token: str, path: str) -> Any:
        """``GET {api_url}{path}`` as the user: its JSON, bounded in time and size."""
        http = self._http.get()
        request = http.build_request(
            "GET",
            f"{self.api_url}{path}",
            headers={**_API_HEADERS, "authorization": f"Bearer {access_token}"},
        )
        body = bytearray()
        try:
            async with asyncio.timeout(self.timeout):
                response = await http.send(request, stream=True)
                try:
                    response.raise_for_status()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > _MAX_BYTES:
                            raise ValueError("too large")
                finally:
                    await response.aclose()
            return json.loads(body)
        except (httpx.HTTPError, ValueError, TimeoutError) as exc:
            raise UpstreamError(
                f"GitHub's {path} could not be read ({type(exc).__name__})",
                error="temporarily_unavailable",
            ) from None

    async def _primary_email(self, access_token: str) -> dict[str, Any]:
        """The primary address when verified (``GET /user/emails``, ``user:email`` scope)."""
        try:
            emails = await self._api(access_token, "/user/emails")
        except UpstreamError:
            return {}  # the profile alone still says who signed in
        for entry in emails if isinstance(emails, list) else ():
            if (
                isinstance(entry, dict)
                and entry.get("primary") is True
                and entry.get("verified") is True
                and isinstance(entry.get("email"), str)
            ):
                return {"email": entry["email"], "email_verified": True}
        return {}


def _scope(answer: dict[str, Any]) -> str | None:
    """The granted scopes, space-separated as RFC 6749 § 3.3 has them (GitHub: commas)."""
    scope = answer.get("scope")
    if not isinstance(scope, str):
        return None
    return " ".join(s for s in scope.replace(",", " ").split() if s)


def github(
    *,
    client_id: str,
    client_secret: str,
    scopes: Sequence[str] = ("read:user", "user:email"),
    **options: Any,
) -> GitHubProvider:
    """GitHub sign-in with an OAuth app registered at github.com (Settings → Developer
    settings → OAuth Apps), or on GitHub Enterprise Server with ``base_url``/``api_url``."""
    return GitHubProvider(
        client_id=client_id, client_secret=client_secret, scopes=scopes, **options
    )
