"""The authorization server's revocation endpoint (RFC 7009).

The client authenticates as at the token endpoint. A refresh token ends its whole grant:
the token, every refresh token of the grant and the provider's tokens kept for it
(RFC 7009 § 2.1: revoking a refresh token SHOULD revoke the grant's access tokens too;
mcpkit's access tokens are short-lived JWTs, so they lapse within their lifetime). An
unknown token, an access token or another client's token gets ``200`` all the same
(§ 2.2: the answer says nothing about the token).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..http import BadRequest, OAuthError, Receive, Scope, Send, form, send_json
from .token import authenticate_client

if TYPE_CHECKING:
    from ..context import ServerContext

__all__ = ["handle"]


async def handle(proxy: ServerContext, scope: Scope, receive: Receive, send: Send) -> None:
    if scope["method"] != "POST":
        raise OAuthError("invalid_request", "the revocation endpoint takes a POST", status=405)
    fields = await form(scope, receive)
    client = await authenticate_client(proxy, scope, fields)
    token = fields.get("token")
    if token is None:
        raise BadRequest("token is required")
    record = await proxy.storage.take_refresh_token(token)
    if record is not None:
        if record.client_id == client.client_id:
            await proxy.storage.revoke_grant(record.grant_id)
        else:  # another client's token: put it back untouched
            await proxy.storage.save_refresh_token(token, record)
    await send_json(send, 200, {})
