"""Authorizers: who takes the user through the authorization endpoint.

The authorization code grant needs someone to open the authorization URL, let
the user sign in and consent, and hand back the URL the authorization server
redirected to (it carries ``code``, ``state`` and maybe ``iss``). An
:class:`Authorizer` is that someone: :class:`~.loopback.LoopbackAuthorizer`
opens the browser and receives the redirect on a loopback port (command line
and desktop apps, OAuth 2.1 § 8.4.2), :class:`HeadlessAuthorizer` follows the
redirects itself (an authorization server that approves without a person: tests,
the conformance suite, a trusted internal server). A web application implements
its own: send the user to the URL, and return the callback URL it received.
"""

from __future__ import annotations

import logging
import re
from typing import Final, Protocol, runtime_checkable
from urllib.parse import urljoin

from ..._extras import require_extra

with require_extra("auth", feature="the OAuth client (mcpkit.auth.client.authorizers)"):
    import httpx

from ...errors import AuthorizationFailed
from .exchange import DEFAULT_TIMEOUT, ExchangePolicy, exchange

__all__ = ["Authorizer", "HeadlessAuthorizer"]

_MAX_HOPS: Final = 10
_SECRET_PARAM: Final = re.compile(r"([?&](?:code|access_token|refresh_token|id_token)=)[^&'\"\s]+")


class _RedactCodes(logging.Filter):
    """httpcore's DEBUG trace prints raw response headers, so the authorization response's
    ``Location`` (with its code) would reach the logs when this authorizer follows it."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        redacted = _SECRET_PARAM.sub(r"\1[redacted]", text)
        if redacted != text:
            record.msg, record.args = redacted, ()
        return True


_REDACT: Final = _RedactCodes()


def _redact_http_traces() -> None:
    for name in ("httpcore.http11", "httpcore.http2"):
        logger = logging.getLogger(name)
        if _REDACT not in logger.filters:
            logger.addFilter(_REDACT)


@runtime_checkable
class Authorizer(Protocol):
    @property
    def redirect_uri(self) -> str:
        """The redirect URI to register and to send (fixed before the first request)."""
        ...

    async def authorize(self, url: str) -> str:
        """Take the user through ``url``; return the URL redirected to ``redirect_uri``."""
        ...


class HeadlessAuthorizer:
    """Follows the authorization endpoint's redirects without a browser or a person.

    Useful only with an authorization server that redirects straight back (it
    approved without asking). The redirect URI is never requested: its URL, with
    the response parameters, is the result. Each hop is bounded like every other
    exchange of the OAuth client: ``timeout`` seconds, 1 MiB of body at most.
    """

    def __init__(
        self,
        redirect_uri: str = "http://127.0.0.1:33418/callback",
        *,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._redirect_uri = redirect_uri
        self._http = http_client
        # Nothing secret goes out on these requests (the code comes back in a Location),
        # and the https rule was applied to the authorization endpoint at discovery.
        self._policy = ExchangePolicy(allow_insecure_http=True, timeout=timeout)

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, url: str) -> str:
        _redact_http_traces()
        http = self._http or httpx.AsyncClient(timeout=self._policy.timeout)
        try:
            for _ in range(_MAX_HOPS):
                request = http.build_request("GET", url)
                try:
                    resp = await exchange(
                        http, request, what="the authorization endpoint", policy=self._policy
                    )
                except httpx.HTTPError as exc:
                    raise AuthorizationFailed(
                        f"cannot reach the authorization endpoint: {type(exc).__name__}",
                        error="authorization_request_failed",
                    ) from exc
                location = resp.headers.get("location")
                if not resp.is_redirect or not location:
                    raise AuthorizationFailed(
                        f"the authorization endpoint answered HTTP {resp.status_code} "
                        "without redirecting back (it needs a person: use LoopbackAuthorizer)",
                        error="authorization_request_failed",
                    )
                url = urljoin(url, location)
                if url.split("?", 1)[0] == self._redirect_uri.split("?", 1)[0]:
                    return url
            raise AuthorizationFailed(
                "too many redirects at the authorization endpoint",
                error="authorization_request_failed",
            )
        finally:
            if self._http is None:
                await http.aclose()

    def __repr__(self) -> str:
        return f"HeadlessAuthorizer(redirect_uri={self._redirect_uri!r})"
