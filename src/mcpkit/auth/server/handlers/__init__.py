"""The authorization server's endpoints, one module per endpoint.

``register`` (RFC 7591), ``authorize`` (the authorization request and the consent
answer), ``callback`` (the upstream provider's redirect back), ``token`` (RFC 6749 § 4.1.3
and § 6, with PKCE), ``revoke`` (RFC 7009). Each is ``async handle(proxy, scope, receive,
send)`` and raises :class:`~mcpkit.auth.server.http.OAuthError` for the app to answer.
"""
