"""``requestState`` of the 2026-07-28 input rounds: signed, bound to the principal.

A state is ``base64url(payload).base64url(HMAC-SHA256)`` (the format and the
rules are in :mod:`.input_required`); this module seals and opens it, and says who
the principal of a request is (:func:`principal_of`). It holds no state of its
own: a codec is the server's keys and a lifetime.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from ...auth.info import AuthInfo
from ...errors import ConfigurationError, InvalidParams

__all__ = ["RequestStateCodec", "check_keys", "principal_of"]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


_B64URL: Final = re.compile(r"[A-Za-z0-9_-]*")


def _unb64(text: str) -> bytes:
    """Strict: the one unpadded base64url spelling ``_b64`` gives, nothing else.

    ``urlsafe_b64decode`` alone skips characters outside the alphabet and ignores
    the unused low bits of the last character, so many texts decode alike.
    """
    if _B64URL.fullmatch(text) is None or len(text) % 4 == 1:
        raise ValueError("not unpadded base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:
        raise ValueError("not the canonical base64url spelling")
    return data


# Fields that name who a principal is (OAuth token introspection, RFC 7662 § 2.2, and
# JWT claims, RFC 7519 § 4.1), most specific first; the subject ones among them.
_IDENTITY_FIELDS: Final = ("iss", "sub", "client_id", "subject", "user_id", "user", "username")
_SUBJECT_FIELDS: Final = frozenset({"sub", "subject", "user_id", "user", "username"})


def _names_someone(value: Any) -> bool:
    """A usable subject: a non-empty string or an integer (orjson writes 1 and "1"
    apart, so the two never name the same principal)."""
    return (type(value) is str and value != "") or type(value) is int


def principal_of(auth_info: Any) -> str | None:
    """The identity a ``requestState`` is bound to, from what auth middleware put in the
    ASGI scope (``mcpkit.auth``); None for an unauthenticated request.

    An :class:`AuthInfo` says so itself (:attr:`AuthInfo.principal`). A string or
    number is the identity itself. A mapping or an object with a subject (``sub``,
    ``subject``, ``user_id``, ``user`` or ``username``: a non-empty string or an
    integer, as keys or attributes) is named by its identity fields (those and
    ``iss``, ``client_id``), so a refreshed token of the same subject keeps its
    states. Without a subject, never by the client id or issuer alone (every user
    of one client would share them): a mapping is named by all its content, a
    dataclass or pydantic model by its fields, any other object by its attributes,
    or only by its type when it has none (give it a ``sub`` for a real binding).
    """
    if auth_info is None:
        return None
    if isinstance(auth_info, AuthInfo):
        return auth_info.principal  # mcpkit's own, memoised on the AuthInfo
    if isinstance(auth_info, str | int | float):
        return str(auth_info)
    whole: Any
    if isinstance(auth_info, Mapping):
        found = {k: auth_info[k] for k in _IDENTITY_FIELDS if auth_info.get(k) is not None}
        named = any(_names_someone(found.get(k)) for k in _SUBJECT_FIELDS)
        whole = found if named else dict(auth_info)
    else:
        found = {k: v for k in _IDENTITY_FIELDS if (v := getattr(auth_info, k, None)) is not None}
        dump = getattr(auth_info, "model_dump", None)
        if any(_names_someone(found.get(k)) for k in _SUBJECT_FIELDS):
            whole = found
        elif callable(dump):
            whole = dump(mode="json")
        elif dataclasses.is_dataclass(auth_info):
            whole = auth_info
        elif getattr(auth_info, "__dict__", None):
            whole = {"type": _type_name(auth_info), "attributes": vars(auth_info)}
        else:
            whole = {"type": _type_name(auth_info)}
    try:
        blob = orjson.dumps(
            whole, default=_identity_part, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
        )
    except TypeError:  # orjson.JSONEncodeError: say, an integer beyond 64 bits
        try:
            return json.dumps(whole, default=_identity_part, sort_keys=True)
        except (TypeError, ValueError):
            return _type_name(auth_info)
    return blob.decode()


def _type_name(value: Any) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


def _identity_part(value: Any) -> Any:
    if isinstance(value, set | frozenset | tuple):
        return sorted(map(str, value))
    return f"<{type(value).__qualname__}>"  # never an address: stable across workers


def check_keys(keys: Sequence[bytes]) -> None:
    """Refuse signing keys an attacker could guess: at least one, 32 bytes or more each."""
    if not keys or any(len(k) < 32 for k in keys):
        raise ConfigurationError("request state keys: at least one, each of 32 bytes or more")


class RequestStateCodec:
    """Seals and opens ``requestState`` tokens (HMAC-SHA256, rotating keys, expiry)."""

    def __init__(self, keys: Sequence[bytes], *, ttl: float) -> None:
        check_keys(keys)
        self._keys = tuple(keys)
        self.ttl = ttl

    def seal(self, payload: dict[str, Any], *, principal: str | None = None) -> str:
        """Sign ``payload``; with ``principal``, only that principal can open it."""
        sealed = {**payload, "exp": time.time() + self.ttl}
        sealed.pop("p", None)
        if principal is not None:
            sealed["p"] = _principal_tag(self._keys[0], principal)
        body = _b64(orjson.dumps(sealed))
        mac = hmac.new(self._keys[0], body.encode(), hashlib.sha256).digest()
        return f"{body}.{_b64(mac)}"

    def open(self, token: Any, *, principal: str | None = None) -> dict[str, Any] | None:
        """The payload of a genuine, unexpired token; None for anything else.

        Raises :class:`~mcpkit.errors.InvalidParams` for a genuine token sealed for
        another principal than ``principal`` (or for none, or for one when
        ``principal`` is None), so the caller can say so.
        """
        if not isinstance(token, str) or token.count(".") != 1:
            return None
        body, mac_text = token.split(".")
        try:
            mac = _unb64(mac_text)
        except (binascii.Error, ValueError):
            return None
        key = next(
            (
                k
                for k in self._keys
                if hmac.compare_digest(mac, hmac.new(k, body.encode(), hashlib.sha256).digest())
            ),
            None,
        )
        if key is None:
            return None
        try:
            payload = orjson.loads(_unb64(body))
        except (binascii.Error, ValueError, orjson.JSONDecodeError):
            return None
        if not isinstance(payload, dict) or not isinstance(payload.get("exp"), int | float):
            return None
        if payload["exp"] <= time.time():
            return None
        expected = None if principal is None else _principal_tag(key, principal)
        tag = payload.get("p")
        if tag != expected:
            if expected is None:
                why = "issued to an authenticated principal, but this request has none"
            elif tag is None:
                why = "issued to an unauthenticated request, but this one is authenticated"
            else:
                why = "issued to another principal than the one making this request"
            raise InvalidParams(f"requestState was {why}; a state is good only for its principal")
        return payload


def _principal_tag(key: bytes, principal: str) -> str:
    """A keyed digest of the principal: binds the state without showing who it names."""
    mac = hmac.new(key, b"mcpkit principal\x00" + principal.encode(), hashlib.sha256)
    return _b64(mac.digest()[:16])
