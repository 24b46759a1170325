"""Talking to the authorization server's endpoints (JWKS, introspection) from a verifier.

One rule for both verifiers: an endpoint that fails, times out, answers an error
status or sends something that is not a JSON object (or too much of it) makes
the token *uncheckable*, which is :class:`~mcpkit.errors.VerifierUnavailable`
(HTTP 503), never a pass and never a 401. httpx is imported here, so only the
verifiers that talk to the network load it (the ``mcpkit[auth]`` extra).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

from .._extras import require_extra

with require_extra("auth", feature="the token verifiers' HTTP calls (mcpkit.auth.endpoints)"):
    import httpx

from ..errors import ConfigurationError, VerifierUnavailable

__all__ = ["HTTPClientSlot", "check_endpoint_url", "fetch_json"]

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def check_endpoint_url(url: str, *, what: str, allow_insecure_http: bool) -> str:
    """``url`` when it is https (or plain http to a loopback host, or when allowed).

    Keys and introspection answers decide who gets in, and the introspection
    request carries the token and the client secret: OAuth 2.1 § 1.5 requires TLS
    for them. Loopback stays usable for development and tests.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ConfigurationError(f"{what} must be an absolute https URL, not {url!r}")
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK and not allow_insecure_http:
        raise ConfigurationError(
            f"{what} must use https (plain http is accepted for localhost only, or with "
            "allow_insecure_http=True)"
        )
    return url


class HTTPClientSlot:
    """A verifier's httpx client: the caller's, or one made on first use and closed by ``aclose``.

    A client made here is remade when used from another event loop (``asyncio.run``
    twice, a test per loop): its pooled connections belong to the loop that opened
    them and would fail in another one.
    """

    __slots__ = ("_client", "_given", "_loop", "_timeout")

    def __init__(self, client: httpx.AsyncClient | None, *, timeout: float) -> None:
        self._given = client
        self._timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> httpx.AsyncClient:
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # No redirects: an endpoint that moves is a configuration problem to fix,
            # not something to follow with a token in the body.
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self._timeout), follow_redirects=False
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the client made here (a client passed in belongs to its owner)."""
        client, loop = self._client, self._loop
        self._client = self._loop = None
        # A client of another (possibly closed) loop cannot be closed from this one;
        # its connections went with that loop.
        if client is not None and loop is asyncio.get_running_loop():
            await client.aclose()


async def fetch_json(
    client: httpx.AsyncClient,
    request: httpx.Request,
    *,
    what: str,
    timeout: float,
    max_bytes: int,
) -> dict[str, Any]:
    """Send ``request``; the JSON object of a ``200`` answer, else ``VerifierUnavailable``.

    ``timeout`` bounds the whole exchange (a server that drips its body cannot hold
    the request longer); ``max_bytes`` bounds the body. Messages name ``what`` and
    the problem, never the request body (it may hold the token or a secret).
    """
    try:
        async with asyncio.timeout(timeout):
            response = await client.send(request, stream=True)
            try:
                if response.status_code != 200:
                    raise VerifierUnavailable(f"{what} answered HTTP {response.status_code}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        raise VerifierUnavailable(f"{what} sent more than {max_bytes} bytes")
            finally:
                await response.aclose()
    except TimeoutError:
        raise VerifierUnavailable(f"{what} did not answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise VerifierUnavailable(f"{what} could not be reached ({type(exc).__name__})") from None
    try:
        value = json.loads(body)
    except ValueError:
        raise VerifierUnavailable(f"{what} did not answer with JSON") from None
    if not isinstance(value, dict):
        raise VerifierUnavailable(f"{what} did not answer with a JSON object")
    return value
