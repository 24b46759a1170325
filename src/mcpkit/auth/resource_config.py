"""Checks of a protected resource's configuration, and where its metadata lives.

What :class:`~mcpkit.auth.ProtectedResource` validates when it is built: URLs of
the resource and its authorization servers (https, or http on loopback for
development), OAuth scope names; and the RFC 9728 § 3.1 metadata URL of a
resource identifier.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Final, cast
from urllib.parse import urlsplit

__all__ = ["WELL_KNOWN_PATH", "metadata_url_for", "scope_problems", "url_problem"]

WELL_KNOWN_PATH: Final = "/.well-known/oauth-protected-resource"
"""RFC 9728 § 3: the well-known URI suffix of protected resource metadata."""

# RFC 6749 § 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
_SCOPE_TOKEN: Final = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_problem(what: str, url: object, *, path_allowed: bool = True) -> str | None:
    """Why ``url`` cannot identify a resource or an authorization server, or None.

    https, or http on a loopback host for development (OAuth 2.1 § 1.5: every
    endpoint but loopback redirects uses TLS); never a fragment (RFC 8707 § 2,
    RFC 9728 § 1.2).
    """
    if not isinstance(url, str) or not url:
        return f"{what} must be an absolute URL string, not {url!r}"
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        return f"{what} {url!r} is not a valid URL ({exc})"
    if parts.scheme not in ("https", "http") or not host:
        return f"{what} {url!r} must be an absolute https:// URL"
    if parts.scheme == "http" and not _is_loopback(host):
        return (
            f"{what} {url!r} must use https (plain http is accepted only on a loopback host "
            "such as localhost or 127.0.0.1, for development)"
        )
    if parts.fragment or url.endswith("#"):
        return f"{what} {url!r} must not contain a fragment (RFC 8707 § 2)"
    if not path_allowed and parts.path not in ("", "/"):
        return f"{what} {url!r} must not have a path"
    return None


def scope_problems(what: str, scopes: object) -> tuple[list[str], tuple[str, ...]]:
    if isinstance(scopes, str):
        return [f"{what} must be a list of scope names, not the string {scopes!r}"], ()
    try:
        items: tuple[object, ...] = tuple(cast("Iterable[object]", scopes))
    except TypeError:
        return [f"{what} must be a list of scope names, not {scopes!r}"], ()
    bad = [s for s in items if not isinstance(s, str) or _SCOPE_TOKEN.fullmatch(s) is None]
    if bad:
        return [
            f"{what}: {bad!r} are not OAuth scope names (RFC 6749 § 3.3: visible ASCII, no "
            "spaces, quotes or backslashes)"
        ], ()
    return [], tuple(dict.fromkeys(str(s) for s in items))


def metadata_url_for(resource: str) -> str:
    """The RFC 9728 § 3.1 metadata URL of ``resource``: the well-known suffix goes
    between the host and the path (``https://h/mcp`` -> ``https://h/.well-known/
    oauth-protected-resource/mcp``); a resource at the root has no path suffix."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/") if parts.path != "/" else ""
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN_PATH}{path}{query}"
