"""Authorization for MCP over HTTP: a protected server and an OAuth client.

The specification's authorization (``basic/authorization`` of revisions 2025-03-26
and later) applies to HTTP transports only; stdio servers take their credentials
from the environment. This package holds what both sides share and needs no
extra: :class:`AuthInfo` (what a verified token says, handed to handlers as
``ctx.auth``) and the ``WWW-Authenticate`` challenge format. Token verification
(JWT, introspection) and the OAuth client flows live in submodules; the ones that
need JOSE and crypto import them from the ``mcpkit[auth]`` extra when used.
"""

from __future__ import annotations

from .challenge import parse_www_authenticate, www_authenticate
from .info import AUTH_SCOPE_KEY, RESOURCE_METADATA_SCOPE_KEY, AuthInfo

__all__ = [
    "AUTH_SCOPE_KEY",
    "RESOURCE_METADATA_SCOPE_KEY",
    "AuthInfo",
    "parse_www_authenticate",
    "www_authenticate",
]
