"""Machine-to-machine auth from plain settings: the ``auth`` object of a config file.

:func:`~.settings.oauth_from_config` hands every ``type`` other than ``oauth``
here::

    {"type": "client_credentials",
     "client_id": "reporting-service",
     "client_secret_env": "MCP_CLIENT_SECRET",     # or "client_secret", or:
     "private_key_file": "~/.config/svc/key.pem",  # private_key_jwt
     "algorithm": "ES256", "key_id": "2026-01",    # optional
     "token_endpoint_auth_method": "client_secret_post",
     "scopes": ["mcp:read"], "dpop": true,
     "storage": "memory" | "file", "token_file": "..."}

    {"type": "workload_identity",
     "client_id": "billing-worker",
     "assertion_file": "/var/run/secrets/tokens/mcp-token",   # or "assertion_env"
     "scopes": ["mcp:read"], "dpop": false}

Tokens are kept in memory unless ``"storage": "file"``: these flows get a new
token without anyone's help, and a DPoP-bound token is useless to the next run
(its key is not saved). Enterprise-managed authorization needs the user's ID
token from a sign-on, which is no setting: build :class:`~.machine.EnterpriseAuth`
in code. Unknown keys are refused, so a typo does not silently drop a setting.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ...errors import ConfigurationError
from .file_storage import FileTokenStorage
from .machine import ClientCredentials, WorkloadIdentity
from .oauth import OAuth
from .storage import MemoryTokenStorage, TokenStorage

__all__ = ["machine_from_config"]

_COMMON: Final = frozenset(
    {"type", "client_id", "scopes", "dpop", "storage", "token_file", "token_endpoint_auth_method"}
)
_CREDENTIALS: Final = frozenset(
    {"client_secret", "client_secret_env", "private_key_file", "algorithm", "key_id"}
)
_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "client_credentials": _COMMON | _CREDENTIALS,
    "workload_identity": _COMMON | _CREDENTIALS | {"assertion_file", "assertion_env"},
}


def _text(settings: Mapping[str, Any], key: str) -> str | None:
    value = settings.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigurationError(f"auth: {key!r} must be a non-empty string")
    return value


def _env(settings: Mapping[str, Any], key: str) -> str | None:
    name = _text(settings, key)
    if name is None:
        return None
    value = os.environ.get(name)
    if not value:
        raise ConfigurationError(f"auth: environment variable {name} is not set")
    return value


def _storage(settings: Mapping[str, Any]) -> TokenStorage:
    kind = str(settings.get("storage", "memory")).lower()
    if kind == "memory":
        return MemoryTokenStorage()
    if kind == "file":
        token_file = _text(settings, "token_file")
        return FileTokenStorage(os.path.expanduser(token_file) if token_file else None)
    raise ConfigurationError("auth: 'storage' must be 'memory' or 'file'")


def _scopes(settings: Mapping[str, Any]) -> list[str] | None:
    scopes = settings.get("scopes")
    if isinstance(scopes, str):
        scopes = scopes.split()
    if scopes is not None and (
        not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes)
    ):
        raise ConfigurationError("auth: 'scopes' must be a list of strings")
    return scopes


def machine_from_config(settings: Mapping[str, Any]) -> OAuth:
    """The flow a ``client_credentials`` or ``workload_identity`` object describes."""
    kind = str(settings.get("type", "")).lower()
    known = _KEYS.get(kind)
    if known is None:
        raise ConfigurationError(
            f"auth: unknown type {settings.get('type')!r} "
            "(use 'oauth', 'client_credentials' or 'workload_identity')"
        )
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ConfigurationError(
            f"auth: unknown setting(s) {', '.join(map(repr, unknown))} for {kind} "
            f"(known: {', '.join(sorted(known))})"
        )
    client_id = _text(settings, "client_id")
    if client_id is None:
        raise ConfigurationError(f"auth: {kind} needs 'client_id'")
    dpop = settings.get("dpop", False)
    if not isinstance(dpop, bool):
        raise ConfigurationError("auth: 'dpop' must be true or false")
    secret = _text(settings, "client_secret") or _env(settings, "client_secret_env")
    key_file = _text(settings, "private_key_file")
    private_key = Path(key_file).expanduser().read_text(encoding="utf-8") if key_file else None
    options: dict[str, Any] = {
        "client_secret": secret,
        "private_key": private_key,
        "algorithm": _text(settings, "algorithm"),
        "key_id": _text(settings, "key_id"),
        "token_endpoint_auth_method": _text(settings, "token_endpoint_auth_method"),
        "scopes": _scopes(settings),
        "dpop": dpop,
        "storage": _storage(settings),
    }
    if kind == "client_credentials":
        return ClientCredentials(client_id, **options)
    assertion_file = _text(settings, "assertion_file")
    assertion_env = _text(settings, "assertion_env")
    if (assertion_file is None) == (assertion_env is None):
        raise ConfigurationError(
            "auth: workload_identity needs exactly one of 'assertion_file' and 'assertion_env'"
        )
    if assertion_file is not None:
        return WorkloadIdentity(Path(assertion_file).expanduser(), client_id=client_id, **options)
    assert assertion_env is not None

    def from_env() -> str:  # read at each grant: the variable may be refreshed in-process
        value = os.environ.get(assertion_env)
        if not value:
            raise ConfigurationError(f"auth: environment variable {assertion_env} is not set")
        return value

    return WorkloadIdentity(from_env, client_id=client_id, **options)
