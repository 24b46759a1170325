"""PKCE (RFC 7636) with ``S256``, and the ``state`` value of an authorization request.

OAuth 2.1 § 4.1.1 makes PKCE mandatory; MCP (basic/authorization § authorization
code protection) requires ``S256`` when the client can compute it, which it always
can. The verifier is 43 characters of the unreserved alphabet (32 random bytes,
base64url without padding), the shortest RFC 7636 § 4.1 allows at full entropy.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field

__all__ = ["PKCE", "new_state"]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True, slots=True)
class PKCE:
    """One verifier and its ``S256`` challenge; a fresh pair per authorization request."""

    verifier: str = field(repr=False)
    challenge: str
    method: str = "S256"

    @classmethod
    def new(cls) -> PKCE:
        verifier = _b64url(secrets.token_bytes(32))
        return cls(verifier=verifier, challenge=s256(verifier))


def s256(verifier: str) -> str:
    """``BASE64URL(SHA256(ASCII(code_verifier)))`` (RFC 7636 § 4.2)."""
    return _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def new_state() -> str:
    """An unguessable ``state`` binding the redirect to this request (OAuth 2.1 § 7.12)."""
    return _b64url(secrets.token_bytes(24))
