"""Reading HTTP answers the same way in both HTTP client transports (httpx's or LeanHTTP's)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Final, Protocol

import orjson

from ..._extras import require_extra

with require_extra(
    "client", feature="the HTTP client transports (mcpkit.client.transports.http_responses)"
):
    import httpx

from ...errors import INTERNAL_ERROR
from .base import HTTPErrorStatus, MessageTooLarge, Unreachable
from .http11 import LeanResponse

__all__ = ["Answer", "content_type", "error_body", "http_error", "read_body", "unreachable"]

_ERROR_BODY: Final = 64 * 1024


class Answer(Protocol):
    """What the transports read of an answer: an ``httpx.Response`` or a ``LeanResponse``."""

    @property
    def status_code(self) -> int: ...

    @property
    def reason_phrase(self) -> str: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...


def content_type(resp: Answer) -> str:
    """The media type alone, lower case (``text/event-stream; charset=utf-8`` → ``text/event-stream``)."""
    value: str = resp.headers.get("content-type", "")
    return value.partition(";")[0].strip().lower()


async def read_body(resp: Answer, limit: int, label: str) -> bytes:
    """The body of a streamed response, read only up to ``limit`` bytes (else MessageTooLarge).

    Counted after content decoding, so a compressed body cannot expand past the limit
    either. A ``Content-Length`` over the limit fails before anything is read.
    """
    length = resp.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise MessageTooLarge(label, limit, f"as an HTTP body of {length} bytes")
    whole = resp.received() if isinstance(resp, LeanResponse) else None
    if whole is not None:  # all of it arrived with the head, as small answers do
        if len(whole) > limit:
            raise MessageTooLarge(label, limit, "as an HTTP body")
        return whole
    body = bytearray()
    async for chunk in resp.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise MessageTooLarge(label, limit, "as an HTTP body")
    return bytes(body)


async def error_body(resp: Answer, limit: int) -> bytes:
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


def http_error(resp: Answer, label: str, content: bytes | None = None) -> HTTPErrorStatus:
    """The error for an HTTP error status (the body may carry a JSON-RPC error, without an id).

    ``content`` is the body when it was read with :func:`read_body` (else ``resp.content``).
    """
    status = resp.status_code
    if content is None:
        assert isinstance(resp, httpx.Response)  # LeanHTTP's answers are always read first
        content = resp.content
    raw = content
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
