"""``StaticTokenVerifier``: a fixed table of bearer tokens, for development and tests.

Not for production: the tokens never expire unless you say so, cannot be revoked
without a restart, and say nothing an authorization server vouched for. What it
does get right is the comparison: tokens are looked up by their SHA-256 digest
and confirmed with :func:`hmac.compare_digest`, so the time an answer takes says
nothing about how much of a guessed token was right.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

from ..errors import ConfigurationError, InvalidToken
from .claims import token_digest
from .info import AuthInfo

__all__ = ["StaticTokenEntry", "StaticTokenVerifier"]

StaticTokenEntry: TypeAlias = AuthInfo | Mapping[str, Any] | Iterable[str]
"""What a token maps to: an :class:`AuthInfo`, a dict of its fields, or just the scopes."""

_FIELDS = frozenset(
    {"subject", "client_id", "issuer", "scopes", "expires_at", "resource", "claims"}
)


def _entry_info(token: str, entry: StaticTokenEntry, default_client_id: str | None) -> AuthInfo:
    if isinstance(entry, AuthInfo):
        fields = _as_fields(entry)
    elif isinstance(entry, Mapping):
        unknown = sorted(set(entry) - _FIELDS)
        if unknown:
            raise ConfigurationError(
                f"static token entry: unknown field(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(_FIELDS))})"
            )
        fields = dict(entry)
    elif isinstance(entry, str):
        # A bare string would be read as a set of one-letter scopes.
        raise ConfigurationError("static token entry: give scopes as a list, not a string")
    else:
        fields = {"scopes": entry}
    scopes = fields.get("scopes", ())
    if isinstance(scopes, str):
        scopes = scopes.split()
    fields["scopes"] = frozenset(scopes)
    fields["claims"] = dict(fields.get("claims") or {})
    subject = fields.get("subject")
    if subject is not None and (not isinstance(subject, str) or not subject):
        # Sessions are bound to the subject (AuthInfo.principal); leave it out for a
        # token that is its own principal.
        raise ConfigurationError(
            f"static token entry: subject must be a non-empty string, not {subject!r}"
        )
    if fields.get("client_id") is None:
        fields["client_id"] = default_client_id
    return AuthInfo(token=token, **fields)


class StaticTokenVerifier:
    """Accepts exactly the tokens of ``tokens``; each maps to what the token stands for.

    ::

        StaticTokenVerifier({
            "dev-token-alice": {"subject": "alice", "scopes": ["mcp:read", "mcp:write"]},
            "dev-token-ci": ["mcp:read"],                      # scopes only
            "dev-token-old": AuthInfo(token="", subject="bob", expires_at=1767225600),
        })

    An entry's ``expires_at`` (Unix time) makes the token stop working then; the
    ``token`` field of an :class:`AuthInfo` entry is ignored (the table key is the
    token). ``client_id`` defaults to ``default_client_id`` when an entry has none.
    """

    def __init__(
        self,
        tokens: Mapping[str, StaticTokenEntry],
        *,
        default_client_id: str | None = None,
    ) -> None:
        table: dict[bytes, tuple[bytes, AuthInfo]] = {}
        for token, entry in tokens.items():
            if not isinstance(token, str) or not token:
                raise ConfigurationError("static tokens must be non-empty strings")
            info = _entry_info(token, entry, default_client_id)
            digest = token_digest(token)
            table[digest] = (digest, info)
        self._table = table

    async def verify(self, token: str) -> AuthInfo | None:
        digest = token_digest(token)
        found = self._table.get(digest)
        # The dict lookup only narrows by digest; compare_digest is the real check.
        if found is None or not hmac.compare_digest(found[0], digest):
            return None
        info = found[1]
        if info.expired(now=time.time()):
            raise InvalidToken("token expired")
        return info

    def __repr__(self) -> str:  # never the tokens
        return f"StaticTokenVerifier(<{len(self._table)} tokens>)"


def _as_fields(info: AuthInfo) -> dict[str, Any]:
    return {
        "subject": info.subject,
        "client_id": info.client_id,
        "issuer": info.issuer,
        "scopes": info.scopes,
        "expires_at": info.expires_at,
        "resource": info.resource,
        "claims": info.claims,
    }
