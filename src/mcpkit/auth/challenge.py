"""The ``WWW-Authenticate: Bearer ...`` challenge (RFC 6750 § 3, RFC 9728 § 5.1).

One writer for the server (401 for a missing or invalid token, 403
``insufficient_scope`` for step-up) and one reader for the client, so both sides
agree on quoting.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

__all__ = ["parse_www_authenticate", "www_authenticate"]


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def www_authenticate(
    *,
    resource_metadata: str | None = None,
    error: str | None = None,
    scopes: Iterable[str] = (),
    description: str | None = None,
    scheme: str = "Bearer",
) -> str:
    """The header value; parameters in a fixed order, absent ones left out.

    ``error`` is ``invalid_token``, ``insufficient_scope`` or ``invalid_request``
    (RFC 6750 § 3.1); ``scopes`` the ones the request needs, space separated in
    the ``scope`` parameter; ``description`` must not contain a token.
    """
    params: list[str] = []
    if resource_metadata is not None:
        params.append(f"resource_metadata={_quote(resource_metadata)}")
    if error is not None:
        params.append(f"error={_quote(error)}")
    scope = " ".join(scopes)
    if scope:
        params.append(f"scope={_quote(scope)}")
    if description is not None:
        params.append(f"error_description={_quote(description)}")
    return scheme + (" " + ", ".join(params) if params else "")


_PARAM: Final = re.compile(
    r'\s*([A-Za-z0-9_.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*(?:,|$)'
)


def parse_www_authenticate(value: str, *, scheme: str = "Bearer") -> dict[str, str] | None:
    """The parameters of the first ``scheme`` challenge in ``value``; None without one.

    Parameter names are lower-cased; quoted values are unescaped. A malformed
    tail is ignored rather than raised: the header comes from a remote peer.
    """
    start = re.search(rf"(?:^|,)\s*{re.escape(scheme)}(?:\s+|$)", value, re.IGNORECASE)
    if start is None:
        return None
    params: dict[str, str] = {}
    pos = start.end()
    while pos < len(value):
        m = _PARAM.match(value, pos)
        if m is None or m.end() == pos:
            break
        name = m.group(1).lower()
        if m.group(2) is not None:
            params.setdefault(name, re.sub(r"\\(.)", r"\1", m.group(2)))
        else:
            params.setdefault(name, m.group(3))
        pos = m.end()
    return params
