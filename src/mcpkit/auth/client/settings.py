"""An :class:`~.oauth.OAuth` flow from plain settings: config files and the command line.

The ``auth`` key of a server definition (:mod:`mcpkit.client.config`) is either
the string ``"oauth"`` (every default: Dynamic Client Registration or a Client
ID Metadata Document, the browser on a loopback port, tokens in the user's
private token file) or an object::

    {"type": "oauth",
     "scopes": ["mcp:read"],                 # else the specification's scope selection
     "client_id": "...", "client_secret": "...",   # pre-registered (secret: prefer
                                                   # "client_secret_env": "VAR")
     "token_endpoint_auth_method": "client_secret_basic",
     "client_metadata_url": "https://app.example/client.json",
     "client_name": "my app",
     "storage": "file" | "memory",           # default "file"
     "token_file": "~/.config/myapp/tokens.json",
     "redirect_port": 33418, "open_browser": true}

Unknown keys are refused, so a typo does not silently drop a setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from ...errors import ConfigurationError
from .file_storage import FileTokenStorage
from .loopback import LoopbackAuthorizer
from .oauth import OAuth
from .storage import MemoryTokenStorage, TokenStorage

__all__ = ["oauth_from_config"]

_KEYS: Final = frozenset(
    {
        "type",
        "scopes",
        "client_id",
        "client_secret",
        "client_secret_env",
        "token_endpoint_auth_method",
        "client_metadata_url",
        "client_name",
        "storage",
        "token_file",
        "redirect_port",
        "open_browser",
    }
)


def _text(settings: Mapping[str, Any], key: str) -> str | None:
    value = settings.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"auth: {key!r} must be a non-empty string")
    return value


def oauth_from_config(value: str | Mapping[str, Any]) -> OAuth:
    """The OAuth flow ``value`` describes (see the module docstring)."""
    if isinstance(value, str):
        if value.lower() != "oauth":
            raise ConfigurationError(f"auth must be 'oauth' or an object, not {value!r}")
        value = {}
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"auth must be 'oauth' or an object, not {type(value).__name__}")
    if str(value.get("type", "oauth")).lower() != "oauth":
        # client_credentials, workload_identity: the authorization extensions' flows.
        from .machine_settings import machine_from_config

        return machine_from_config(value)
    unknown = sorted(set(value) - _KEYS)
    if unknown:
        raise ConfigurationError(
            f"auth: unknown setting(s) {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(sorted(_KEYS))})"
        )
    kind = str(value.get("type", "oauth")).lower()
    if kind != "oauth":
        raise ConfigurationError(f"auth: unknown type {value.get('type')!r} (use 'oauth')")
    scopes = value.get("scopes")
    if isinstance(scopes, str):
        scopes = scopes.split()
    if scopes is not None and (
        not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes)
    ):
        raise ConfigurationError("auth: 'scopes' must be a list of strings")
    secret = _text(value, "client_secret")
    secret_env = _text(value, "client_secret_env")
    if secret_env is not None:
        secret = os.environ.get(secret_env)
        if secret is None:
            raise ConfigurationError(f"auth: environment variable {secret_env} is not set")
    storage_kind = str(value.get("storage", "file")).lower()
    storage: TokenStorage
    if storage_kind == "memory":
        storage = MemoryTokenStorage()
    elif storage_kind == "file":
        token_file = _text(value, "token_file")
        storage = FileTokenStorage(os.path.expanduser(token_file) if token_file else None)
    else:
        raise ConfigurationError("auth: 'storage' must be 'file' or 'memory'")
    port = value.get("redirect_port", 0)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigurationError("auth: 'redirect_port' must be a port number")
    open_browser = value.get("open_browser", True)
    if not isinstance(open_browser, bool):
        raise ConfigurationError("auth: 'open_browser' must be true or false")
    return OAuth(
        authorizer=LoopbackAuthorizer(port=port, open_browser=open_browser),
        storage=storage,
        scopes=scopes,
        client_id=_text(value, "client_id"),
        client_secret=secret,
        token_endpoint_auth_method=_text(value, "token_endpoint_auth_method"),
        client_metadata_url=_text(value, "client_metadata_url"),
        client_name=_text(value, "client_name") or "mcpkit",
    )
