"""Reading HTTP answers the same way in both HTTP client transports (httpx responses)."""

from __future__ import annotations

import httpx
import orjson

from ...errors import INTERNAL_ERROR
from .base import HTTPErrorStatus, Unreachable

__all__ = ["content_type", "http_error", "unreachable"]


def content_type(resp: httpx.Response) -> str:
    """The media type alone, lower case (``text/event-stream; charset=utf-8`` → ``text/event-stream``)."""
    value: str = resp.headers.get("content-type", "")
    return value.partition(";")[0].strip().lower()


def http_error(resp: httpx.Response, label: str) -> HTTPErrorStatus:
    """The error for an HTTP error status (the body may carry a JSON-RPC error, without an id)."""
    status = resp.status_code
    try:
        body = orjson.loads(resp.content)
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
    text = resp.text[:300].strip()
    return HTTPErrorStatus(
        f"HTTP {status} {resp.reason_phrase} from {label}" + (f": {text}" if text else ""),
        status=status,
        code=INTERNAL_ERROR,
        data={"status": status},
    )


def unreachable(exc: httpx.HTTPError, url: str) -> Unreachable:
    """The error for a request that could not be made; it names the URL, not just a label."""
    return Unreachable(f"HTTP request to {url} failed: {type(exc).__name__}: {exc}")
