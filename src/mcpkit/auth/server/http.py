"""Raw ASGI plumbing of the authorization server: bounded bodies, forms, OAuth answers.

This package sits below :mod:`mcpkit.transports` (the ``auth`` layer), so it reads and
writes ASGI messages itself, as the resource-server layer does. Every input is bounded
(query, body, each parameter) and a parameter given twice is refused (RFC 6749 § 3.1,
§ 3.2); every answer of an OAuth endpoint is ``no-store`` (RFC 6749 § 5.1).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode

import orjson

from ...errors import MCPKitError

__all__ = [
    "BadRequest",
    "OAuthError",
    "form",
    "query",
    "read_body",
    "redirect",
    "send_html",
    "send_json",
    "send_oauth_error",
]

Scope = Any
Receive = Any
Send = Any

MAX_BODY: Final = 16 * 1024
MAX_QUERY: Final = 8 * 1024
MAX_VALUE: Final = 2048

_NO_STORE: Final = [(b"cache-control", b"no-store"), (b"pragma", b"no-cache")]
# No external assets, no framing (clickjacking of the consent page). No form-action:
# browsers apply it to the redirects that follow a form post too, and the consent
# answer redirects to the identity provider or back to the client, both elsewhere.
_PAGE_POLICY: Final = (
    b"default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"
)


class OAuthError(MCPKitError):
    """An OAuth error answer (RFC 6749 § 5.2): ``error`` code, description, HTTP status."""

    def __init__(
        self,
        error: str,
        description: str,
        *,
        status: int = 400,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status
        self.headers = headers or []


class BadRequest(OAuthError):
    """``invalid_request``: malformed, oversized or repeated input."""

    def __init__(self, description: str, *, status: int = 400) -> None:
        super().__init__("invalid_request", description, status=status)


def _pairs(raw: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in parse_qsl(raw, keep_blank_values=True, max_num_fields=64):
        if key in out:
            raise BadRequest(f"parameter {key!r} given more than once")
        if len(value) > MAX_VALUE:
            raise BadRequest(f"parameter {key!r} is too long")
        if value:  # RFC 6749 § 3.1: an empty parameter is as if omitted
            out[key] = value
    return out


def query(scope: Scope) -> dict[str, str]:
    raw: bytes = scope.get("query_string", b"")
    if len(raw) > MAX_QUERY:
        raise BadRequest("the query string is too long", status=414)
    try:
        return _pairs(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(f"malformed query string: {type(exc).__name__}") from None


async def read_body(receive: Receive, *, limit: int = MAX_BODY) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise BadRequest("the client went away")
        body += message.get("body", b"")
        if len(body) > limit:
            raise BadRequest("the request body is too large", status=413)
        if not message.get("more_body"):
            return bytes(body)


def header(scope: Scope, name: bytes) -> str | None:
    values = [v for k, v in scope["headers"] if k == name]
    if len(values) > 1:
        raise BadRequest(f"more than one {name.decode()} header")
    return values[0].decode("latin-1") if values else None


async def form(scope: Scope, receive: Receive) -> dict[str, str]:
    """The ``application/x-www-form-urlencoded`` body (RFC 6749 § 3.2, RFC 7009 § 2.1)."""
    kind = (header(scope, b"content-type") or "").split(";", 1)[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise BadRequest("the body must be application/x-www-form-urlencoded")
    body = await read_body(receive)
    try:
        return _pairs(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(f"malformed form body: {type(exc).__name__}") from None


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    out = [(b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})


async def send_json(
    send: Send,
    status: int,
    data: Mapping[str, Any],
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    cache: bytes | None = None,
) -> None:
    extra = [(b"cache-control", cache)] if cache is not None else _NO_STORE
    await _send(
        send,
        status,
        orjson.dumps(data),
        [(b"content-type", b"application/json"), *extra, *(headers or [])],
    )


async def send_oauth_error(send: Send, exc: OAuthError) -> None:
    headers: list[tuple[bytes, bytes]] = list(exc.headers)
    if exc.status == 401:  # RFC 6749 § 5.2: invalid_client with HTTP Basic gets a challenge
        headers.append((b"www-authenticate", b'Basic realm="mcpkit"'))
    await send_json(
        send,
        exc.status,
        {"error": exc.error, "error_description": exc.description},
        headers=headers,
    )


async def send_html(
    send: Send, status: int, page: str, *, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await _send(
        send,
        status,
        page.encode("utf-8"),
        [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-security-policy", _PAGE_POLICY),
            (b"x-frame-options", b"DENY"),
            (b"referrer-policy", b"no-referrer"),
            *_NO_STORE,
            *(headers or []),
        ],
    )


async def redirect(
    send: Send,
    url: str,
    params: Mapping[str, str | None] | None = None,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """302 to ``url`` with ``params`` added to its query (the None ones left out)."""
    if params:
        extra = urlencode({k: v for k, v in params.items() if v is not None})
        url = f"{url}{'&' if '?' in url else '?'}{extra}"
    await _send(
        send,
        302,
        b"",
        [(b"location", url.encode("utf-8")), *_NO_STORE, *(headers or [])],
    )


def error_page(title: str, message: str) -> str:
    """A plain page for errors that must not go back to an unverified redirect URI."""
    return (
        "<!doctype html><html lang=en><meta charset=utf-8><title>"
        f"{html.escape(title)}</title><body><main><h1>{html.escape(title)}</h1>"
        f"<p>{html.escape(message)}</p></main></body></html>"
    )
