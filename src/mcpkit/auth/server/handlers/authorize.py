"""The authorization server's authorization endpoint and the consent answer.

``GET /authorize`` (OAuth 2.1 § 4.1.1): the client and its redirect URI are checked
first, and while either is unknown the error is a page here, never a redirect (an open
redirector otherwise, OAuth 2.1 § 7.12.2). After that every error goes back to the
redirect URI with ``state`` and ``iss`` (RFC 9207). PKCE with ``S256`` is required
(MCP authorization § authorization code protection), ``resource`` must name this
server's MCP resource when given (RFC 8707 § 2, MCP authorization § resource parameter),
and the scopes must be ones this server grants. The request then waits as a
:class:`~..storage.FlowTransaction` while the consent page is shown.

``POST /consent``: the flow reference, the CSRF token in the form *and* in the cookie;
deny goes back with ``access_denied``, approve moves the flow under a fresh upstream
``state`` (with its own PKCE verifier and nonce) and sends the browser to the provider.
"""

from __future__ import annotations

import hmac
import logging
import re
import secrets
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Final

from ....errors import MCPKitError
from ...client.pkce import PKCE
from ..client_documents import DocumentRefused, is_document_url
from ..consent import CSRF_COOKIE, USER_COOKIE, render_consent
from ..http import (
    BadRequest,
    OAuthError,
    Receive,
    Scope,
    Send,
    error_page,
    form,
    header,
    query,
    redirect,
    send_html,
)
from ..provider import UpstreamError
from ..redirects import matches
from ..storage import FlowTransaction, RegisteredClient

if TYPE_CHECKING:
    from ..context import ServerContext

__all__ = ["error_redirect_params", "handle_authorize", "handle_consent"]

log = logging.getLogger("mcpkit.auth.server")

# RFC 7636 § 4.2: a challenge is 43 to 128 characters of the unreserved alphabet; S256's is 43.
_CHALLENGE: Final = re.compile(r"[A-Za-z0-9\-._~]{43,128}")
_MAX_STATE: Final = 1024


class _PageError(MCPKitError):
    """An error shown to the user here (the redirect URI cannot be trusted)."""

    def __init__(self, message: str, *, status: int = 400, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def error_redirect_params(
    proxy: ServerContext, error: str, description: str, state: str | None
) -> dict[str, str | None]:
    return {
        "error": error,
        "error_description": description,
        "state": state,
        "iss": proxy.issuer,
    }


async def handle_authorize(
    proxy: ServerContext, scope: Scope, receive: Receive, send: Send
) -> None:
    if scope["method"] != "GET":  # a HEAD would start a flow (a record) with no page shown
        raise OAuthError("invalid_request", "the authorization endpoint takes a GET", status=405)
    address = scope.get("client")
    who = str(address[0]) if address else "unknown"
    if await proxy.authorization_limiter.allow(who):
        page = error_page("Too many requests", "Too many sign-ins from here; retry later.")
        await send_html(send, 429, page)
        return
    try:
        params = query(scope)
        client_id = params.get("client_id")
        client = await proxy.storage.load_client(client_id) if client_id else None
        if client is None and client_id and is_document_url(client_id):
            client = await _client_from_document(proxy, client_id, who)
        if client is None:
            raise _PageError("This application is not registered with this server.")
        redirect_uri = params.get("redirect_uri")
        if redirect_uri is None:
            # OAuth 2.1 § 4.1.1: required; MCP clients always send it.
            raise _PageError("The request names no redirect URI.")
        if not matches(redirect_uri, client.redirect_uris):
            raise _PageError("The redirect URI is not one this application registered.")
    except BadRequest as exc:
        await send_html(send, 400, error_page("Bad authorization request", exc.description))
        return
    except _PageError as exc:
        wait = [(b"retry-after", str(int(exc.retry_after)).encode())] if exc.retry_after else []
        page = error_page("Bad authorization request", str(exc))
        await send_html(send, exc.status, page, headers=wait)
        return
    state = params.get("state")
    if state is not None and len(state) > _MAX_STATE:
        state = None
        error: tuple[str, str] | None = ("invalid_request", "state is too long")
    else:
        error = _request_problem(proxy, params)
    if error is None and "authorization_code" not in client.grant_types:
        error = ("unauthorized_client", "this client did not register the code flow")
    if error is not None:
        await redirect(send, redirect_uri, error_redirect_params(proxy, *error, state))
        return
    scopes = proxy.check_scopes((params.get("scope") or client.scope or "").split())
    if scopes is None:
        await redirect(
            send,
            redirect_uri,
            error_redirect_params(proxy, "invalid_scope", "a scope is not granted here", state),
        )
        return
    flow = FlowTransaction(
        id=secrets.token_urlsafe(24),
        client_id=client.client_id,
        redirect_uri=redirect_uri,
        code_challenge=params["code_challenge"],
        state=state,
        scopes=scopes,
        resource=proxy.resource,
        csrf=secrets.token_urlsafe(24),
        expires_at=time.time() + proxy.flow_ttl,
    )
    remembered = await _remembered_user(proxy, scope, client.client_id, scopes)
    if remembered is not None:
        # The user approved this client for these scopes before (and not revoked it):
        # no page this time; the callback checks the same user signs in.
        await _send_upstream(proxy, replace(flow, known_subject=remembered), send)
        return
    await proxy.storage.save_transaction("flow:" + flow.id, flow)
    page = render_consent(
        client_name=client.client_name,
        client_id=client.client_id,
        redirect_uri=redirect_uri,
        scopes=scopes,
        resource=proxy.resource,
        provider=proxy.upstream.name,
        flow_id=flow.id,
        csrf=flow.csrf,
    )
    cookie = (
        f"{CSRF_COOKIE}={flow.csrf}; Path=/; HttpOnly; SameSite=Strict; "
        f"Max-Age={int(proxy.flow_ttl)}"
    )
    if proxy.secure_cookies:
        cookie += "; Secure"
    await send_html(send, 200, page, headers=[(b"set-cookie", cookie.encode())])


async def _client_from_document(
    proxy: ServerContext, client_id: str, address: str
) -> RegisteredClient:
    """A client named by its metadata document, fetched and kept (expiring) in the store."""
    documents = proxy.client_documents
    if documents is None:
        raise _PageError("This server does not accept client metadata documents.")
    # A fetched document becomes a client record, as a registration does: the same limit.
    wait = await proxy.registration_limiter.allow(address)
    if wait is not None:
        message = "Too many new applications from here; retry later."
        raise _PageError(message, status=429, retry_after=wait)
    try:
        client = await documents.fetch(client_id)
    except DocumentRefused as exc:
        log.info("refused the client metadata document %s: %s", client_id, exc)
        raise _PageError(f"The application's metadata document was refused: {exc}") from None
    await proxy.storage.save_client(client)
    return client


def _request_problem(proxy: ServerContext, params: dict[str, str]) -> tuple[str, str] | None:
    if params.get("response_type") != "code":
        return ("unsupported_response_type", "only response_type=code is supported")
    challenge = params.get("code_challenge")
    if challenge is None:
        return ("invalid_request", "PKCE is required: send code_challenge (S256)")
    if params.get("code_challenge_method") != "S256":
        return ("invalid_request", "code_challenge_method must be S256")
    if not _CHALLENGE.fullmatch(challenge):
        return ("invalid_request", "code_challenge is malformed")
    resource = params.get("resource")
    if resource is not None and resource != proxy.resource:
        return ("invalid_target", "resource must name this server's MCP endpoint")
    return None


async def _remembered_user(
    proxy: ServerContext, scope: Scope, client_id: str, scopes: tuple[str, ...]
) -> str | None:
    """The signed-in user of this browser when they already approved ``client_id`` for
    ``scopes`` (a consent record, and the browser's signed cookie naming them)."""
    if not proxy.remember_consent:
        return None
    try:
        raw = _cookie(scope, USER_COOKIE)
    except BadRequest:
        return None
    subject = proxy.signer.read_browser(raw) if raw else None
    if subject is None:
        return None
    consent = await proxy.storage.load_consent(subject, client_id)
    if consent is None or not set(scopes) <= set(consent.scopes):
        return None
    return subject


def _cookie(scope: Scope, name: str) -> str | None:
    raw = header(scope, b"cookie")
    if raw is None:
        return None
    for part in raw.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


async def handle_consent(proxy: ServerContext, scope: Scope, receive: Receive, send: Send) -> None:
    if scope["method"] != "POST":
        raise OAuthError("invalid_request", "the consent answer takes a POST", status=405)
    try:
        fields = await form(scope, receive)
        cookie = _cookie(scope, CSRF_COOKIE)
    except BadRequest as exc:
        await send_html(send, 400, error_page("Bad consent answer", exc.description))
        return
    flow_id, csrf, action = fields.get("flow"), fields.get("csrf"), fields.get("action")
    flow = await proxy.storage.load_transaction("flow:" + flow_id) if flow_id else None
    if (
        flow is None
        or csrf is None
        or cookie is None
        or not hmac.compare_digest(csrf, flow.csrf)
        or not hmac.compare_digest(cookie, flow.csrf)
    ):
        await send_html(
            send,
            403,
            error_page(
                "Consent expired or forged",
                "This consent form is no longer valid. Start again from your application.",
            ),
        )
        return
    if action not in ("approve", "deny"):
        await send_html(send, 400, error_page("Bad consent answer", "Approve or deny."))
        return
    # Single use from here on: a replayed answer finds nothing.
    flow = await proxy.storage.take_transaction("flow:" + flow.id)
    if flow is None:
        await send_html(send, 403, error_page("Consent expired", "Start again."))
        return
    if action == "deny":
        await redirect(
            send,
            flow.redirect_uri,
            error_redirect_params(proxy, "access_denied", "the user denied access", flow.state),
        )
        return
    await _send_upstream(proxy, flow, send)


async def _send_upstream(proxy: ServerContext, flow: FlowTransaction, send: Send) -> None:
    """Move ``flow`` under a fresh upstream ``state`` and send the browser to the provider."""
    pkce = PKCE.new()
    upstream_state = secrets.token_urlsafe(24)
    nonce = secrets.token_urlsafe(24)
    moved = replace(
        flow, upstream_state=upstream_state, upstream_verifier=pkce.verifier, nonce=nonce
    )
    await proxy.storage.save_transaction("upstream:" + upstream_state, moved)
    try:
        url = await proxy.upstream.authorization_url(
            redirect_uri=proxy.callback_url,
            state=upstream_state,
            code_challenge=pkce.challenge,
            nonce=nonce,
        )
    except UpstreamError as exc:
        log.warning("the identity provider is unavailable: %s", exc)
        await proxy.storage.take_transaction("upstream:" + upstream_state)
        params = error_redirect_params(
            proxy, "temporarily_unavailable", "the identity provider is unavailable", flow.state
        )
        await redirect(send, flow.redirect_uri, params)
        return
    await redirect(send, url)
