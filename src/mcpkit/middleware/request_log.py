"""Structured request logging: one JSON line per request, without arguments or tokens.

::

    import logging
    from mcpkit.middleware import request_logging

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    server.add_middleware(request_logging())

Each request the server serves (every method of its table, both eras; not
notifications) ends with one record on the ``mcpkit.requests`` logger whose
message is a JSON object::

    {"method": "tools/call", "target": "search", "outcome": "ok", "duration_ms": 3.21,
     "request_id": 7, "session": "3f9c…", "subject": "alice", "client_id": "shop-ui",
     "transport": "streamable_http", "revision": "2025-11-25"}

``target`` is what the request names: the tool or prompt (``params.name``), the
resource (``params.uri``), the completion's reference; absent otherwise.
``outcome`` is ``ok``, ``tool_error`` (a ``tools/call`` result with ``isError``),
``input_required`` (a 2026-07-28 round that asks for more), ``error`` (with
``error_code``) or ``cancelled``. ``subject`` and ``client_id`` come from the
verified token, never the token itself. Arguments are left out unless
``include_arguments=True`` (they may hold personal data or secrets a caller
pasted in). Level INFO for answered requests, WARNING for errors; when the logger
would drop the record, nothing is measured or encoded.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, Final

import orjson

from ..errors import MCPError
from ..server.middleware import CallNext, Middleware, MiddlewareContext

__all__ = ["REQUEST_LOGGER", "request_logging", "target_of"]

REQUEST_LOGGER: Final = "mcpkit.requests"

_BY_NAME: Final = frozenset({"tools/call", "prompts/get"})
_BY_URI: Final = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})


def target_of(method: str, params: dict[str, Any]) -> str | None:
    """What a request names: its tool, prompt, resource or completion reference."""
    key = "name" if method in _BY_NAME else "uri" if method in _BY_URI else None
    if key is None:
        if method != "completion/complete":
            return None
        ref = params.get("ref")
        if not isinstance(ref, dict):
            return None
        key, params = ("name" if "name" in ref else "uri"), ref
    value = params.get(key)
    return value if isinstance(value, str) else None


def request_logging(
    *,
    logger: logging.Logger | str = REQUEST_LOGGER,
    level: int = logging.INFO,
    error_level: int = logging.WARNING,
    include_arguments: bool = False,
) -> Middleware:
    """A middleware writing one JSON line per request to ``logger`` (see the module)."""
    log = logging.getLogger(logger) if isinstance(logger, str) else logger
    lowest = min(level, error_level)

    async def logged(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        if not log.isEnabledFor(lowest):
            return await call_next(ctx)
        started = time.perf_counter()
        record: dict[str, Any] = {"method": ctx.method}
        target = target_of(ctx.method, ctx.params)
        if target is not None:
            record["target"] = target
        at = level
        try:
            result = await call_next(ctx)
        except MCPError as exc:
            record["outcome"] = "error"
            record["error_code"] = exc.code
            at = error_level
            raise
        except asyncio.CancelledError:
            record["outcome"] = "cancelled"
            raise
        except Exception as exc:  # an inner middleware's own failure
            record["outcome"] = "error"
            record["error_type"] = type(exc).__name__
            at = error_level
            raise
        else:
            if result.get("isError") is True:
                record["outcome"] = "tool_error"
            elif result.get("resultType") == "input_required":
                record["outcome"] = "input_required"
            else:
                record["outcome"] = "ok"
            return result
        finally:
            record["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
            _describe(ctx, record, include_arguments)
            if log.isEnabledFor(at):
                log.log(at, _dumps(record))

    return logged


def _dumps(record: dict[str, Any]) -> str:
    try:
        return orjson.dumps(record, default=repr).decode()
    except TypeError:  # an integer beyond 64 bits (a request id, an argument)
        return json.dumps(record, default=repr, ensure_ascii=False)


def _describe(ctx: MiddlewareContext, record: dict[str, Any], arguments: bool) -> None:
    record["request_id"] = ctx.request_id
    if ctx.session_id is not None:
        record["session"] = ctx.session_id
    auth = ctx.auth
    if auth is not None:
        subject = getattr(auth, "subject", None)
        if subject is not None:
            record["subject"] = subject
        client_id = getattr(auth, "client_id", None)
        if client_id is not None:
            record["client_id"] = client_id
    record["transport"] = ctx.transport
    record["revision"] = ctx.revision
    if arguments and "arguments" in ctx.params:
        record["arguments"] = ctx.params["arguments"]
