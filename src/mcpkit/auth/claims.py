"""Reading access-token claims: times, audience, scopes, and the :class:`AuthInfo` they make.

Shared by the JWT verifier (RFC 9068 claims) and the introspection verifier (RFC 7662
answers, which use the same claim names). No I/O and no crypto: the signature, when
there is one, was checked before these run. Every failure is an
:class:`~mcpkit.errors.InvalidToken` whose message names the problem and never
contains the token.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import ConfigurationError, InsufficientScope, InvalidToken
from .info import AuthInfo

__all__ = [
    "audience_list",
    "auth_info_from_claims",
    "check_audience",
    "check_required_scopes",
    "check_times",
    "client_id_from",
    "scopes_from",
    "token_digest",
]


def token_digest(token: str) -> bytes:
    """The key caches and lookup tables use for a token, so none of them compares raw tokens."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def audience_list(audience: str | Sequence[str], *, what: str = "audience") -> tuple[str, ...]:
    """A configured audience as a non-empty tuple (a ``ConfigurationError`` otherwise)."""
    values = (audience,) if isinstance(audience, str) else tuple(audience)
    if not values or not all(isinstance(v, str) and v for v in values):
        raise ConfigurationError(f"{what} must be a non-empty string or a list of them")
    return values


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    # JSON numbers only: a bool is an int in Python, a string is not a NumericDate.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidToken(f"token claim '{name}' is not a number")
    # A NumericDate is a finite number (RFC 7519 § 2). Python's json reads NaN and
    # Infinity, and every comparison with NaN is false: an 'exp' of NaN would never
    # expire. An integer too large for a float overflows.
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise InvalidToken(f"token claim '{name}' is not a finite number")
    return number


def check_times(
    claims: Mapping[str, Any], *, now: float, leeway: float, require_exp: bool
) -> float | None:
    """Check ``exp``, ``nbf`` and ``iat`` (RFC 7519 § 4.1.4-6) with ``leeway`` seconds of skew.

    Returns ``exp`` (None when absent and not required).
    """
    exp = _number(claims, "exp")
    if exp is None:
        if require_exp:
            raise InvalidToken("token has no expiry ('exp' claim)")
    elif now > exp + leeway:
        raise InvalidToken("token expired")
    nbf = _number(claims, "nbf")
    if nbf is not None and now + leeway < nbf:
        raise InvalidToken("token not yet valid ('nbf' is in the future)")
    iat = _number(claims, "iat")
    if iat is not None and now + leeway < iat:
        raise InvalidToken("token issued in the future ('iat')")
    return exp


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def check_audience(
    claims: Mapping[str, Any], accepted: Sequence[str], *, names: Sequence[str] = ("aud",)
) -> str:
    """The accepted audience the token names (in any of the claims ``names``).

    MCP authorization § token audience binding: a server MUST reject tokens that do
    not name it, so a token issued for another resource is never accepted (and never
    passed through). Exact string comparison, as RFC 7519 § 4.1.3 asks.
    """
    present = False
    for name in names:
        values = _strings(claims.get(name))
        present = present or bool(values)
        for value in values:
            if value in accepted:
                return value
    if not present:
        raise InvalidToken("token has no audience ('aud' claim)")
    raise InvalidToken("wrong audience: the token was issued for another resource")


def scopes_from(claims: Mapping[str, Any]) -> frozenset[str]:
    """Granted scopes: ``scope`` (space-delimited, RFC 9068 § 2.2.3 / RFC 8693 § 4.2), else ``scp``.

    ``scp`` is a list at several providers and a space-delimited string at others
    (Microsoft Entra ID); both are read.
    """
    value = claims.get("scope")
    if value is None:
        value = claims.get("scp")
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(s for s in value if isinstance(s, str) and s)
    return frozenset()


def client_id_from(claims: Mapping[str, Any]) -> str | None:
    """``client_id`` (RFC 9068 § 2.2, RFC 7662 § 2.2), else OpenID Connect's ``azp``."""
    for name in ("client_id", "azp"):
        value = claims.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def check_required_scopes(scopes: frozenset[str], required: Iterable[str]) -> None:
    """Raise :class:`~mcpkit.errors.InsufficientScope` when ``required`` are not all granted.

    A valid token without the scopes is a 403 ``insufficient_scope`` (RFC 6750 § 3.1),
    not a 401: the client may step up instead of starting over.
    """
    missing = [s for s in required if s not in scopes]
    if missing:
        raise InsufficientScope(missing)


def auth_info_from_claims(
    token: str,
    claims: Mapping[str, Any],
    *,
    expires_at: float | None,
    resource: str | None,
) -> AuthInfo:
    """The :class:`AuthInfo` of a verified token from its claims (or introspection answer).

    ``sub`` is a string (RFC 7519 § 4.1.2, RFC 7662 § 2.2): one of another type, or
    empty, is refused rather than dropped, since the subject is what sessions and
    ``requestState`` are bound to (``AuthInfo.principal``). A token without ``sub``
    is accepted and is its own principal.
    """
    sub = claims.get("sub")
    if sub is not None and (type(sub) is not str or not sub):
        raise InvalidToken("token claim 'sub' is not a non-empty string")
    iss = claims.get("iss")
    return AuthInfo(
        token=token,
        subject=sub,
        client_id=client_id_from(claims),
        issuer=iss if isinstance(iss, str) else None,
        scopes=scopes_from(claims),
        expires_at=expires_at,
        resource=resource,
        claims=dict(claims),
    )
