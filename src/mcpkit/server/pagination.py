"""Opaque cursors for list methods (2025-11-25 server/utilities/pagination)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any, TypeVar

import orjson

from ..errors import InvalidParams

T = TypeVar("T")


def paginate(
    items: Sequence[T], cursor: Any, page_size: int | None
) -> tuple[Sequence[T], str | None]:
    """The page of ``items`` at ``cursor`` and the cursor of the next page."""
    start = 0
    if cursor is not None:
        start = _decode(cursor)
        if start > len(items):
            raise InvalidParams("Invalid cursor: past the end of the list")
    if page_size is None:
        return (items[start:] if start else items), None
    end = start + page_size
    next_cursor = _encode(end) if end < len(items) else None
    return items[start:end], next_cursor


def _encode(offset: int) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"o": offset})).decode().rstrip("=")


def _decode(cursor: Any) -> int:
    if not isinstance(cursor, str):
        raise InvalidParams("Invalid cursor: must be a string")
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        offset = orjson.loads(base64.urlsafe_b64decode(padded))["o"]
    except Exception:
        raise InvalidParams(f"Invalid cursor: {cursor!r}") from None
    if not isinstance(offset, int) or offset < 0:
        raise InvalidParams(f"Invalid cursor: {cursor!r}")
    return offset
