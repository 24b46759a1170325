"""Reading HTTP answers the same way in both HTTP client transports (httpx responses)."""

from __future__ import annotations

from typing import Final

import orjson

from ..._extras import require_extra

with require_extra(
    "client", feature="the HTTP client transports (mcpkit.client.transports.http_responses)"
):
    import httpx

from ...errors import INTERNAL_ERROR
from .base import HTTPErrorStatus, MessageTooLarge, Unreachable

__all__ = ["content_type", "error_body", "http_error", "read_body", "unreachable"]

_ERROR_BODY: Final = 64 * 1024


def content_type(resp: httpx.Response) -> str:
    """The media type alone, lower case (``text/event-stream; charset=utf-8`` → ``text/event-stream``)."""
    value: str = resp.headers.get("content-type", "")
    return value.partition(";")[0].strip().lower()


async def read_body(resp: httpx.Response, limit: int, label: str) -> bytes:
    """The body of a streamed response, read only up to ``limit`` bytes (else MessageTooLarge).

    Counted after content decoding, so a compressed body cannot expand past the limit
    either. A ``Content-Length`` over the limit fails before anything is read.
    """
    length = resp.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise MessageTooLarge(label, limit, f"as an HTTP body of {length} bytes")
    body = bytearray()
    async for chunk in resp.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise MessageTooLarge(label, limit, "as an HTTP body")
    return bytes(body)


async def error_body(resp: httpx.Response, limit: int) -> bytes:
    """The start of an error answer's body: at most ``min(limit, 64 KiB)``, the rest unread.

    The status is the news; a JSON-RPC error object, if any, is small.
    """
    limit = min(limit, _ERROR_BODY)
    body = bytearray()
    async for chunk in resp.aiter_bytes():
        body += chunk
        if len(body) >= limit:
            break
    return bytes(body[:limit])


def http_error(resp: httpx.Response, label: str, content: bytes | None = None) -> HTTPErrorStatus:
    """The error for an HTTP error status (the body may carry a JSON-RPC error, without an id).

    ``content`` is the body when it was read with :func:`read_body` (else ``resp.content``).
    """
    status = resp.status_code
    raw = resp.content if content is None else content
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        body = None
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        code = err.get("code")
        return HTTPErrorStatus(
            f"{err['message']} (HTTP {status} from {label})",
            status=status,
            code=code if type(code) is int else INTERNAL_ERROR,
            data=err.get("data"),
        )
    text = raw[:300].decode("utf-8", "replace").strip()
    return HTTPErrorStatus(
        f"HTTP {status} {resp.reason_phrase} from {label}" + (f": {text}" if text else ""),
        status=status,
        code=INTERNAL_ERROR,
        data={"status": status},
    )


def unreachable(exc: httpx.HTTPError, url: str) -> Unreachable:
    """The error for a request that could not be made; it names the URL, not just a label."""
    return Unreachable(f"HTTP request to {url} failed: {type(exc).__name__}: {exc}")
