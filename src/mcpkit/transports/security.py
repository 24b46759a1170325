"""Origin and Host validation for the HTTP transports (DNS-rebinding protection).

2025-11-25 transports § "Security Warning": servers MUST validate the
``Origin`` header and answer 403 when it is present and not allowed. A DNS
rebinding attack points an attacker's host name at 127.0.0.1, so a browser
sends requests to a local server with a foreign ``Host``; checking ``Host``
against the names the server is really reached by stops it even when the
browser sends no ``Origin``.

Patterns
--------
``allowed_hosts`` entries are ``host`` (that host, default port only),
``host:port`` or ``host:*`` (any port); IPv6 literals in brackets
(``[::1]:*``). ``allowed_origins`` entries are ``scheme://host``,
``scheme://host:port`` or ``scheme://host:*``. ``"*"`` in either list
disables that check.

Defaults (``None``)
-------------------
When the server is bound to a loopback address (``scope["server"]``), only
``127.0.0.1``, ``localhost`` and ``[::1]`` on any port are accepted as
``Host``, and only origins on those hosts (any scheme, any port). When bound
elsewhere the ``Host`` check is off (the server cannot guess its public names:
set ``allowed_hosts``) and an ``Origin`` must match the request's own
``Host`` (same-origin).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Final

__all__ = ["LOCAL_HOSTS", "RequestGuard", "Verdict"]

LOCAL_HOSTS: Final = ("127.0.0.1:*", "localhost:*", "[::1]:*")
_LOCAL_NAMES: Final = frozenset({"127.0.0.1", "localhost", "[::1]"})

# (status, message) of a rejected request; None means "allowed".
Verdict = tuple[int, str] | None

_MISSING: Final = object()
_CACHE_SIZE: Final = 256


def _split_host(value: str) -> tuple[str, str | None]:
    """``host[:port]`` → (host, port or None); IPv6 literals keep their brackets."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return value, None
        host, rest = value[: end + 1], value[end + 1 :]
        return host, rest[1:] if rest.startswith(":") else None
    host, sep, port = value.rpartition(":")
    if not sep:
        return value, None
    return host, port


class _HostPattern:
    __slots__ = ("host", "port")

    def __init__(self, spec: str) -> None:
        host, port = _split_host(spec.strip().lower())
        self.host = host
        self.port = port  # None: default port only; "*": any port

    def matches(self, host: str, port: str | None) -> bool:
        if host != self.host:
            return False
        return self.port == "*" or self.port == port


class _OriginPattern:
    __slots__ = ("hostport", "scheme")

    def __init__(self, spec: str) -> None:
        scheme, sep, rest = spec.strip().lower().partition("://")
        if not sep:
            raise ValueError(f"allowed origin {spec!r} must look like 'https://host[:port]'")
        self.scheme = scheme
        self.hostport = _HostPattern(rest.rstrip("/"))

    def matches(self, scheme: str, host: str, port: str | None) -> bool:
        return scheme == self.scheme and self.hostport.matches(host, port)


def _is_loopback(host: object) -> bool:
    if not isinstance(host, str):
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class RequestGuard:
    """Decides whether a request's ``Host`` and ``Origin`` are acceptable.

    >>> guard = RequestGuard(allowed_hosts=["api.example.com"], allowed_origins=["https://app.example.com"])
    """

    __slots__ = ("_any_host", "_any_origin", "_hosts", "_origins", "_verdicts")

    def __init__(
        self,
        *,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
    ) -> None:
        if isinstance(allowed_hosts, str) or isinstance(allowed_origins, str):
            raise TypeError("allowed_hosts and allowed_origins are lists of patterns, not strings")
        self._any_host = allowed_hosts is not None and "*" in allowed_hosts
        self._any_origin = allowed_origins is not None and "*" in allowed_origins
        self._hosts = (
            None if allowed_hosts is None else [_HostPattern(h) for h in allowed_hosts if h != "*"]
        )
        self._origins = (
            None
            if allowed_origins is None
            else [_OriginPattern(o) for o in allowed_origins if o != "*"]
        )
        self._verdicts: dict[tuple[object, bytes | None, bytes | None], object] = {}

    @staticmethod
    def _local(server: object) -> bool:
        return _is_loopback(server[0] if isinstance(server, tuple | list) and server else None)

    def check(
        self, server: object, host_header: bytes | None, origin_header: bytes | None
    ) -> Verdict:
        """``server`` is ``scope["server"]``; the headers are the raw values (or None)."""
        # Clients repeat the same Host and Origin on every request: remember the verdicts
        # (a bounded cache; a flood of distinct values just stops being cached).
        where = server[0] if isinstance(server, tuple | list) and server else None
        key = (where, host_header, origin_header)
        cached = self._verdicts.get(key, _MISSING)
        if cached is not _MISSING:
            return cached  # type: ignore[return-value]
        verdict = self._check(server, host_header, origin_header)
        if len(self._verdicts) < _CACHE_SIZE:
            self._verdicts[key] = verdict
        return verdict

    def _check(
        self, server: object, host_header: bytes | None, origin_header: bytes | None
    ) -> Verdict:
        local: bool | None = None
        host = host_header.decode("latin-1").lower() if host_header is not None else None
        if not self._any_host:
            if self._hosts is None:
                local = self._local(server)
                # Browsers always send Host; a request without one is not a rebinding attack.
                if local and host is not None and _split_host(host)[0] not in _LOCAL_NAMES:
                    return 421, f"Misdirected request: host {host!r} is not served here"
            else:
                if host is None:
                    return 421, "Misdirected request: missing Host header"
                name, port = _split_host(host)
                if not any(p.matches(name, port) for p in self._hosts):
                    return 421, f"Misdirected request: host {host!r} is not served here"
        if origin_header is None or self._any_origin:
            return None
        origin = origin_header.decode("latin-1").lower()
        scheme, sep, rest = origin.partition("://")
        if not sep:  # "null" (sandboxed frames, file://) or garbage
            return 403, f"Forbidden: origin {origin!r} is not allowed"
        name, port = _split_host(rest.rstrip("/"))
        if self._origins is not None:
            ok = any(p.matches(scheme, name, port) for p in self._origins)
        else:
            if local is None:
                local = self._local(server)
            ok = name in _LOCAL_NAMES if local else rest == host
        return None if ok else (403, f"Forbidden: origin {origin!r} is not allowed")
