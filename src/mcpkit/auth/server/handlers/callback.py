"""The authorization server's upstream callback: the provider's redirect back to mcpkit.

``GET /auth/callback?code=...&state=...`` (the one redirect URI registered at the
provider). The ``state`` is taken (single use) from the flows the consent approved; an
unknown or replayed one gets an error page, never a redirect. A provider error, or a
code the provider will not exchange, goes back to the MCP client as ``access_denied``
(``state`` and ``iss`` included). On success the provider's tokens are kept under a new
grant id, and the MCP client gets its own short-lived, single-use code.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import TYPE_CHECKING

from ..consent import USER_COOKIE
from ..http import BadRequest, Receive, Scope, Send, error_page, query, redirect, send_html
from ..provider import UpstreamError
from ..storage import AuthCode, Consent, UpstreamTokens
from .authorize import error_redirect_params

if TYPE_CHECKING:
    from ..context import ServerContext

__all__ = ["CALLBACK_PATH", "handle"]

CALLBACK_PATH = "/auth/callback"
"""Where the provider sends the browser back: ``{base_url}/auth/callback``, registered there."""

log = logging.getLogger("mcpkit.auth.server")

# Claims of the ID token copied into mcpkit's access tokens, so tools see who signed in.
_IDENTITY_CLAIMS = ("email", "email_verified", "name", "preferred_username")


async def handle(proxy: ServerContext, scope: Scope, receive: Receive, send: Send) -> None:
    try:
        params = query(scope)
    except BadRequest as exc:
        await send_html(send, 400, error_page("Bad sign-in answer", exc.description))
        return
    upstream_state = params.get("state")
    flow = (
        await proxy.storage.take_transaction("upstream:" + upstream_state)
        if upstream_state
        else None
    )
    if flow is None or flow.upstream_verifier is None or flow.nonce is None:
        await send_html(
            send,
            400,
            error_page(
                "Sign-in expired or forged",
                "This sign-in does not belong to a pending authorization. "
                "Start again from your application.",
            ),
        )
        return
    code = params.get("code")
    if code is None:
        # The provider's own error (the user refused there, say): not echoed verbatim.
        denied = error_redirect_params(
            proxy, "access_denied", "the identity provider did not sign the user in", flow.state
        )
        await redirect(send, flow.redirect_uri, denied)
        return
    try:
        identity = await proxy.upstream.complete(
            code=code,
            redirect_uri=proxy.callback_url,
            code_verifier=flow.upstream_verifier,
            nonce=flow.nonce,
            iss=params.get("iss"),
        )
    except UpstreamError as exc:
        log.warning("the identity provider's sign-in failed: %s", exc)
        failed = error_redirect_params(
            proxy, "access_denied", "the sign-in at the identity provider failed", flow.state
        )
        await redirect(send, flow.redirect_uri, failed)
        return
    if flow.known_subject is not None and identity.subject != flow.known_subject:
        # Consent was remembered for another user of this browser: this one never gave it.
        other = error_redirect_params(
            proxy, "access_denied", "signed in as another user than the one who approved",
            flow.state,
        )  # fmt: skip
        await redirect(send, flow.redirect_uri, other, headers=[_forget_user(proxy)])
        return
    now = time.time()
    grant_id = secrets.token_urlsafe(18)
    grant_expires = now + proxy.refresh_token_ttl
    await proxy.storage.save_upstream_tokens(
        UpstreamTokens(
            grant_id=grant_id,
            access_token=identity.access_token,
            refresh_token=identity.refresh_token,
            id_token=identity.id_token,
            scope=identity.scope,
            access_expires_at=identity.expires_at,
            expires_at=grant_expires,
        )
    )
    await proxy.storage.save_consent(
        Consent(
            subject=identity.subject,
            client_id=flow.client_id,
            scopes=flow.scopes,
            expires_at=now + proxy.consent_ttl,
        )
    )
    claims = {k: identity.claims[k] for k in _IDENTITY_CLAIMS if k in identity.claims}
    ours = secrets.token_urlsafe(32)
    await proxy.storage.save_code(
        ours,
        AuthCode(
            client_id=flow.client_id,
            redirect_uri=flow.redirect_uri,
            code_challenge=flow.code_challenge,
            scopes=flow.scopes,
            resource=flow.resource,
            subject=identity.subject,
            grant_id=grant_id,
            expires_at=now + proxy.code_ttl,
            claims=claims,
        ),
    )
    headers = [_remember_user(proxy, identity.subject)] if proxy.remember_consent else []
    await redirect(
        send,
        flow.redirect_uri,
        {"code": ours, "state": flow.state, "iss": proxy.issuer},
        headers=headers,
    )


def _cookie_attributes(proxy: ServerContext, max_age: int) -> str:
    secure = "; Secure" if proxy.secure_cookies else ""
    return f"Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}"


def _remember_user(proxy: ServerContext, subject: str) -> tuple[bytes, bytes]:
    note = proxy.signer.sign_browser(subject, ttl=proxy.consent_ttl)
    value = f"{USER_COOKIE}={note}; {_cookie_attributes(proxy, int(proxy.consent_ttl))}"
    return (b"set-cookie", value.encode())


def _forget_user(proxy: ServerContext) -> tuple[bytes, bytes]:
    return (b"set-cookie", f"{USER_COOKIE}=; {_cookie_attributes(proxy, 0)}".encode())
