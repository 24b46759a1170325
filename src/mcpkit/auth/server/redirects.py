"""Redirect URIs of registered clients: what may be registered, and the exact match.

Registration (RFC 7591 § 2, OAuth 2.1 § 2.3.1, RFC 8252 § 7): an https URL, an http URL
on a loopback address (a native app's listener), or a private-use scheme in reverse
domain form (``com.example.app:/cb``); never a fragment, never ``javascript:`` or
``data:``. Matching (OAuth 2.1 § 4.1.1.1: exact string comparison) allows one
exception: the port of a loopback http URI may differ, because the app picks a free
port at run time (RFC 8252 § 7.3).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit, urlunsplit

__all__ = ["MAX_REDIRECT_URIS", "matches", "redirect_uri_problem"]

MAX_REDIRECT_URIS: Final = 10
MAX_URI_LENGTH: Final = 2000
_LOOPBACK: Final = frozenset({"127.0.0.1", "::1", "localhost"})


def _loopback_http(uri: str) -> bool:
    parts = urlsplit(uri)
    return (
        parts.scheme == "http"
        and parts.hostname in _LOOPBACK
        and parts.username is None
        and parts.password is None
    )


def redirect_uri_problem(uri: object) -> str | None:
    """Why ``uri`` cannot be registered, or None when it can."""
    if not isinstance(uri, str) or not uri:
        return "a redirect URI must be a non-empty string"
    if len(uri) > MAX_URI_LENGTH:
        return "a redirect URI is too long"
    if any(c in uri for c in ' \t\r\n<>"\\'):
        return "a redirect URI must not contain spaces, quotes or angle brackets"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (raises on a malformed port)
    except ValueError:
        return f"redirect URI {uri!r} is malformed"
    if parts.username is not None or parts.password is not None:
        return f"redirect URI {uri!r} must not carry user information"
    if parts.fragment or "#" in uri:
        return f"redirect URI {uri!r} must not have a fragment (RFC 6749 § 3.1.2)"
    if parts.scheme == "https":
        return None if parts.hostname else f"redirect URI {uri!r} has no host"
    if parts.scheme == "http":
        if parts.hostname in _LOOPBACK:
            return None
        return f"redirect URI {uri!r}: plain http is allowed for loopback addresses only"
    # RFC 8252 § 7.1: a private-use scheme is a reverse domain name the app controls.
    if "." in parts.scheme and not parts.netloc:
        return None
    return f"redirect URI {uri!r} must be https, loopback http or a reverse-domain scheme"


def _without_port(uri: str) -> str:
    parts = urlsplit(uri)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def matches(requested: str, registered: Iterable[str]) -> bool:
    """True when ``requested`` is one of ``registered`` (loopback ports aside)."""
    for uri in registered:
        if requested == uri:
            return True
        if _loopback_http(uri) and _loopback_http(requested):
            if _without_port(requested) == _without_port(uri):
                return True
    return False
