"""Every HTTP exchange of the OAuth client, in one place: https only, a size cap, a deadline.

The OAuth client talks to servers it learned about from the network (the
protected resource names its authorization server, whose metadata names its
endpoints), so each request it makes and each answer it reads goes through
:func:`exchange`, under an :class:`ExchangePolicy`:

* **Transport security.** The token request carries the client secret, the
  authorization code and the PKCE verifier; OAuth 2.1 § 1.5 requires TLS for
  every authorization server endpoint, and RFC 9728 § 3 / RFC 8414 § 3 https
  metadata. A plain ``http`` URL is refused before a byte is sent, except on a
  loopback host (127.0.0.0/8, ``::1``, ``localhost``: RFC 8252 § 8.3, for
  development and tests) or when the caller opted in with ``allow_insecure_http``.
* **Size.** An answer is read up to ``max_response_size`` bytes (counted after
  content decoding, so a compressed body cannot expand past it); a larger
  ``Content-Length`` fails before the body is read, a longer body as soon as it
  passes the cap, and the connection is dropped
  (:class:`~mcpkit.errors.OAuthResponseTooLarge`). The same rule as the MCP
  transports' ``read_body``, which sits in a layer above this one.
* **Time.** ``timeout`` is a deadline for the whole exchange (connecting,
  sending, the headers and every byte of the body), not per read: a server that
  trickles its answer cannot hold the client
  (:class:`~mcpkit.errors.OAuthResponseTimeout`).

Connection failures stay ``httpx.HTTPError``: each caller names the endpoint it
could not reach. Redirects are never followed.
"""

from __future__ import annotations

import asyncio
import ipaddress
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit, urlunsplit

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.exchange)"):
    import httpx

from ...errors import (
    AuthorizationFailed,
    ConfigurationError,
    OAuthResponseTimeout,
    OAuthResponseTooLarge,
)

__all__ = [
    "DEFAULT_MAX_RESPONSE_SIZE",
    "DEFAULT_POLICY",
    "DEFAULT_TIMEOUT",
    "ExchangePolicy",
    "exchange",
    "is_loopback",
]

DEFAULT_MAX_RESPONSE_SIZE: Final = 1 << 20
"""1 MiB: metadata, registration and token answers are a few KiB."""
DEFAULT_TIMEOUT: Final = 30.0

# The body is decoded afresh from these bytes; the original framing no longer applies.
_FRAMING: Final = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def _shown(url: str) -> str:
    """``url`` for a message: no query or fragment (an authorization hop may carry a code)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def is_loopback(host: str | None) -> bool:
    """127.0.0.0/8, ``::1`` or ``localhost`` (RFC 8252 § 8.3)."""
    if not host:
        return False
    host = host.lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class ExchangePolicy:
    """The bounds of every exchange: ``max_response_size`` bytes, ``timeout`` seconds for
    the whole exchange, and whether plain ``http`` is allowed beyond loopback."""

    max_response_size: int = DEFAULT_MAX_RESPONSE_SIZE
    timeout: float = DEFAULT_TIMEOUT
    allow_insecure_http: bool = False

    def __post_init__(self) -> None:
        size = self.max_response_size
        if type(size) is not int or size < 1024:
            raise ConfigurationError(
                f"max_response_size must be a whole number of bytes, at least 1024, not {size!r}"
            )
        timeout = self.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ConfigurationError(f"timeout must be a number of seconds > 0, not {timeout!r}")
        if type(self.allow_insecure_http) is not bool:
            raise ConfigurationError(
                f"allow_insecure_http must be True or False, not {self.allow_insecure_http!r}"
            )

    def check_url(self, url: str, what: str) -> str:
        """``url`` when it may carry OAuth traffic; else :class:`AuthorizationFailed`
        (``insecure_endpoint``) naming it, before anything is sent there."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme == "https" or (
            scheme == "http" and (self.allow_insecure_http or is_loopback(parts.hostname))
        ):
            return url
        if scheme == "http":
            raise AuthorizationFailed(
                f"refusing {what} at {_shown(url)}: OAuth needs https (OAuth 2.1 § 1.5); plain http is "
                "accepted for a loopback host only (or with allow_insecure_http=True on a "
                "network you trust)",
                error="insecure_endpoint",
            )
        raise AuthorizationFailed(
            f"refusing {what} at {_shown(url)!r}: not an https URL", error="insecure_endpoint"
        )


DEFAULT_POLICY: Final = ExchangePolicy()


async def exchange(
    http: httpx.AsyncClient,
    request: httpx.Request,
    *,
    what: str,
    policy: ExchangePolicy = DEFAULT_POLICY,
) -> httpx.Response:
    """Send ``request`` and read its whole answer within ``policy``; the answer, read.

    ``what`` names the endpoint in the https refusal. Raises
    :class:`~mcpkit.errors.OAuthResponseTooLarge`,
    :class:`~mcpkit.errors.OAuthResponseTimeout`, ``AuthorizationFailed``
    (``insecure_endpoint``), or the ``httpx.HTTPError`` of a failed connection.
    """
    policy.check_url(str(request.url), what)
    url = _shown(str(request.url))
    limit = policy.max_response_size
    try:
        async with asyncio.timeout(policy.timeout):
            response = await http.send(request, stream=True, follow_redirects=False)
            try:
                length = response.headers.get("content-length", "")
                if length.isdigit() and int(length) > limit:
                    raise OAuthResponseTooLarge(url, limit)
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > limit:
                        raise OAuthResponseTooLarge(url, limit)
            finally:
                await response.aclose()
    except TimeoutError:
        raise OAuthResponseTimeout(url, policy.timeout) from None
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _FRAMING]
    extensions = {k: v for k, v in response.extensions.items() if k == "reason_phrase"}
    return httpx.Response(
        response.status_code,
        headers=headers,
        content=bytes(body),
        request=request,
        extensions=extensions,
    )
