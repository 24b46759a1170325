"""Error masking: internal details out of the errors clients see, in full in the log.

::

    from mcpkit.middleware import mask_errors

    server.add_middleware(mask_errors())   # first, so it wraps the others

mcpkit already answers an unexpected exception with a bare ``Internal error``
(unless ``MCPServer(debug=True)``). What still reaches a client is what code
raised *deliberately* as an :class:`~mcpkit.errors.MCPError`: an upstream's
error relayed by a proxy, a handler's ``MCPError("query failed: <SQL>")``, the
``data`` of either, and with ``debug=True`` every exception's text. This
middleware lets through the errors a caller must understand to act
(:data:`CLIENT_CODES`: bad request or params, unknown method or resource,
forbidden, rate limited, shutting down, the 2026-07-28 transport codes), and
replaces every other with ``Internal error (reference <id>)``, code ``-32603``,
no ``data``; the log gets the original message, code, data and traceback under
the same reference, so an operator can find what a user reports.

"Production mode" is the default ``enabled=None``: masking when the server was
not made with ``debug=True``. Tool errors (``isError`` results) are the model's
to read and are not touched: mcpkit already hides an unexpected exception's
text in them unless ``debug``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Collection
from typing import Any, Final

from ..errors import (
    FORBIDDEN,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    SHUTTING_DOWN,
    UNSUPPORTED_VERSION,
    URL_ELICITATION_REQUIRED,
    MCPError,
)
from ..protocol.http_errors import TOO_MANY_REQUESTS
from ..server.middleware import CallNext, Middleware, MiddlewareContext

__all__ = ["CLIENT_CODES", "MASKED_LOGGER", "mask_errors"]

MASKED_LOGGER: Final = "mcpkit.errors"

#: Codes whose errors are the caller's to act on, passed through as they are.
CLIENT_CODES: Final = frozenset(
    {
        PARSE_ERROR,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        INVALID_PARAMS,
        RESOURCE_NOT_FOUND,
        URL_ELICITATION_REQUIRED,
        FORBIDDEN,
        SHUTTING_DOWN,
        TOO_MANY_REQUESTS,
        HEADER_MISMATCH,
        MISSING_CAPABILITY,
        UNSUPPORTED_VERSION,
    }
)


def mask_errors(
    *,
    enabled: bool | None = None,
    expose: Collection[int] = CLIENT_CODES,
    logger: logging.Logger | str = MASKED_LOGGER,
) -> Middleware:
    """A middleware masking every error whose code is not in ``expose`` (see the module).

    ``enabled``: True or False; None masks when the server's ``debug`` is off.
    """
    exposed = frozenset(expose)
    log = logging.getLogger(logger) if isinstance(logger, str) else logger

    async def masked(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        try:
            return await call_next(ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if (enabled is False) or (enabled is None and ctx.server.debug):
                raise
            if isinstance(exc, MCPError) and exc.code in exposed:
                raise
            reference = secrets.token_hex(6)
            code = exc.code if isinstance(exc, MCPError) else None
            data = exc.data if isinstance(exc, MCPError) else None
            log.error(
                "masked error %s for %s (request %r): code %s: %s; data: %r",
                reference,
                ctx.method,
                ctx.request_id,
                code,
                exc,
                data,
                exc_info=exc,
            )
            raise MCPError(f"Internal error (reference {reference})", code=INTERNAL_ERROR) from exc

    return masked
