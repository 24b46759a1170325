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
``host:port`` or ``host:*`` (any port); ``*.example.com`` stands for every
subdomain of ``example.com`` (not ``example.com`` itself); IPv6 literals go in
brackets (``[::1]:*``). ``allowed_origins`` entries are ``scheme://host``,
``scheme://host:port`` or ``scheme://host:*``. ``"*"`` in either list
disables that check.

Defaults (``None``)
-------------------
When the request arrived on a loopback address (``scope["server"]``), only
``127.0.0.1``, ``localhost`` and ``[::1]`` on any port are accepted as
``Host``, and only origins on those hosts (any scheme, any port).

When it arrived on any other address (the server listens on ``0.0.0.0`` or a
public address) the server cannot know the names it is reached by, so it
fails closed: a ``Host`` that is a host *name* is refused (421) unless
``allowed_hosts`` lists it, while loopback names and IP literals
(``10.0.0.5:8000``, ``[2001:db8::1]``) are accepted. An IP literal cannot be
a DNS-rebinding attack: rebinding needs an attacker-controlled name in the
browser's address bar, and a page on another origin that targets the IP
directly sends that other ``Origin``. An ``Origin`` must match the request's
own ``Host`` (same-origin). The embedded server refuses to start on such an
address without ``allowed_hosts`` (:func:`exposure_problem`), so this default
matters when the app is served by another ASGI server.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..errors import ConfigurationError
from .connection_limits import DEFAULT_MAX_HEADER_SIZE

__all__ = [
    "DEFAULT_MAX_HEADER_SIZE",
    "LOCAL_HOSTS",
    "RequestGuard",
    "Verdict",
    "is_loopback_bind",
]

log = logging.getLogger("mcpkit.transports.security")

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


_HOST_FORM: Final = "'host', 'host:port', 'host:*' or '*.domain[:port]'"


class _HostPattern:
    __slots__ = ("host", "port", "suffix")

    def __init__(self, spec: str, what: str = "allowed host") -> None:
        if not isinstance(spec, str):
            raise ConfigurationError(f"{what} {spec!r} must be a string like {_HOST_FORM}")
        host, port = _split_host(spec.strip().lower())
        wildcard = host.startswith("*.")
        name = host[2:] if wildcard else host
        bad_port = port is not None and port != "*" and not (port.isdigit() and int(port) < 65536)
        if (
            not name
            or bad_port
            or (any(c in name for c in "*/@?#: \t") and not name.startswith("["))
        ):
            raise ConfigurationError(f"{what} {spec!r} must look like {_HOST_FORM}")
        self.suffix = "." + name if wildcard else None  # "*.example.com" -> ".example.com"
        self.host = host
        self.port = port  # None: default port only; "*": any port

    def matches(self, host: str, port: str | None) -> bool:
        if self.suffix is not None:
            if not host.endswith(self.suffix) or len(host) == len(self.suffix):
                return False
        elif host != self.host:
            return False
        return self.port == "*" or self.port == port


class _OriginPattern:
    __slots__ = ("hostport", "scheme")

    def __init__(self, spec: str) -> None:
        form = "'https://host', 'https://host:port' or 'https://host:*'"
        if not isinstance(spec, str):
            raise ConfigurationError(f"allowed origin {spec!r} must be a string like {form}")
        scheme, sep, rest = spec.strip().lower().partition("://")
        if not sep or not scheme or "/" in rest.rstrip("/"):
            raise ConfigurationError(f"allowed origin {spec!r} must look like {form}")
        self.scheme = scheme
        try:
            self.hostport = _HostPattern(rest.rstrip("/"), "allowed origin")
        except ConfigurationError:
            raise ConfigurationError(f"allowed origin {spec!r} must look like {form}") from None

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


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host[1:-1] if host.startswith("[") else host)
    except ValueError:
        return False
    return True


def _head_size(scope: Mapping[str, Any]) -> int:
    """Bytes of the request head as sent: request line, ``name: value`` lines, CRLFs."""
    pairs: Iterable[tuple[bytes, bytes]] = scope["headers"]
    size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") + 16
    for name, value in pairs:
        size += len(name) + len(value) + 4
    return size


def is_loopback_bind(host: str) -> bool:
    """Does listening on ``host`` keep the server reachable from this machine only?

    ``0.0.0.0``, ``::``, ``""`` and every other address or name count as exposed.
    """
    return _is_loopback(host.strip().lower())


class RequestGuard:
    """Decides whether a request's ``Host`` and ``Origin`` are acceptable.

    >>> guard = RequestGuard(allowed_hosts=["api.example.com"], allowed_origins=["https://app.example.com"])
    """

    __slots__ = (
        "_any_host",
        "_any_origin",
        "_hosts",
        "_origins",
        "_verdicts",
        "_warned",
        "max_header_size",
    )

    def __init__(
        self,
        *,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        max_header_size: int | None = DEFAULT_MAX_HEADER_SIZE,
    ) -> None:
        if isinstance(allowed_hosts, str) or isinstance(allowed_origins, str):
            raise TypeError("allowed_hosts and allowed_origins are lists of patterns, not strings")
        number = isinstance(max_header_size, int) and not isinstance(max_header_size, bool)
        if max_header_size is not None and (not number or max_header_size <= 0):
            raise ConfigurationError(
                f"max_header_size must be a positive number or None, got {max_header_size!r}"
            )
        self.max_header_size = max_header_size
        self._warned = False
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

    @property
    def hosts_configured(self) -> bool:
        """Was ``allowed_hosts`` given (a list of names, or ``["*"]`` to switch the check off)?"""
        return self._hosts is not None or self._any_host

    def admit(self, scope: Mapping[str, Any], headers: dict[bytes, bytes]) -> Verdict:
        """The verdict on a request: its head's size, then :meth:`check`.

        ``headers`` is ``dict(scope["headers"])``. The embedded server refuses a big head
        at the socket (:mod:`.connection_limits`); this sees what got past it (a pipelined
        request, another ASGI server without a limit of its own).
        """
        limit = self.max_header_size
        if limit is not None and _head_size(scope) > limit:
            return 431, (
                f"Request Header Fields Too Large: the request line and headers take more "
                f"than {limit} bytes"
            )
        return self.check(scope.get("server"), headers.get(b"host"), headers.get(b"origin"))

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
                if host is not None:
                    name = _split_host(host)[0]
                    if name not in _LOCAL_NAMES and (local or not _is_ip_literal(name)):
                        if not local:
                            self._warn_unconfigured(host)
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

    def _warn_unconfigured(self, host: str) -> None:
        if self._warned:
            return
        self._warned = True
        log.warning(
            "refused a request for host %r: the server listens on a non-loopback address "
            "and allowed_hosts is not set, so only IP addresses and localhost are served "
            "(DNS-rebinding protection); list the names clients use in allowed_hosts "
            "(mcpkit run: --allowed-host NAME), or allowed_hosts=['*'] to turn the check off",
            host,
        )
