"""An MCP authorization server backed by an upstream identity provider (an OAuth proxy).

MCP clients get what they expect (RFC 8414 metadata, RFC 7591 registration, PKCE S256,
the ``resource`` parameter, RFC 9207 ``iss``, refresh rotation, RFC 7009 revocation) while
users sign in with the company's identity provider, to which mcpkit is one
pre-registered client. Not the token check: that is :class:`mcpkit.auth.ProtectedResource`,
which :meth:`OAuthProxy.protected_resource` configures for the tokens issued here.

The package lives in the ``auth`` layer beside the resource server and the client: it
serves raw ASGI (like :mod:`mcpkit.auth.resource_server`) and wraps the MCP app from the
outside, so it imports neither the server core nor the transports. It needs the
``mcpkit[auth]`` extra (JOSE, httpx).

Module map: ``proxy`` (:class:`OAuthProxy`, the configuration), ``provider`` (the
upstream contract), ``presets/`` (identity providers), ``storage`` (state and its memory
store), ``redis_storage`` (the same on Redis, for clusters), ``encryption`` (secrets
sealed at rest), ``client_documents`` (https URLs as client ids), ``client_auth``
(their ``private_key_jwt`` assertions), ``limits`` (the registration rate limit), ``context`` (what the handlers read), ``signing`` (the access
tokens), ``metadata`` (RFC 8414), ``redirects``, ``consent`` (the page), ``handlers/``
(one module per endpoint), ``app`` (the ASGI router), ``http`` (ASGI plumbing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "OAuthProxy": ".proxy",
    "OIDCProvider": ".presets.oidc",
    "GitHubProvider": ".presets.github",
    "UpstreamProvider": ".provider",
    "UpstreamIdentity": ".provider",
    "UpstreamError": ".provider",
    "UpstreamGrant": ".provider",
    "AuthServerStorage": ".storage",
    "MemoryAuthServerStorage": ".storage",
    "EncryptedStorage": ".encryption",
    "RedisAuthServerStorage": ".redis_storage",
    "TokenSigner": ".signing",
}

__all__ = [
    "AuthServerStorage",
    "EncryptedStorage",
    "GitHubProvider",
    "MemoryAuthServerStorage",
    "OAuthProxy",
    "OIDCProvider",
    "RedisAuthServerStorage",
    "TokenSigner",
    "UpstreamError",
    "UpstreamGrant",
    "UpstreamIdentity",
    "UpstreamProvider",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)

if TYPE_CHECKING:
    from .encryption import EncryptedStorage
    from .presets.github import GitHubProvider
    from .presets.oidc import OIDCProvider
    from .provider import UpstreamError, UpstreamGrant, UpstreamIdentity, UpstreamProvider
    from .proxy import OAuthProxy
    from .redis_storage import RedisAuthServerStorage
    from .signing import TokenSigner
    from .storage import AuthServerStorage, MemoryAuthServerStorage
