"""What an exception becomes on the wire: a JSON-RPC error object, or a tool's ``isError`` text.

These are the boundaries between :mod:`mcpkit.errors`' exceptions and what a peer reads:
nothing else builds error objects or messages from exceptions by hand, so no internal
detail leaks through a second path.
"""

from __future__ import annotations

import traceback
from typing import Any

from ..errors import (
    INTERNAL_ERROR,
    SHUTTING_DOWN,
    SHUTTING_DOWN_TEXT,
    STORE_UNAVAILABLE_TEXT,
    CapabilityError,
    ConnectionClosed,
    ElicitationValidationError,
    MCPError,
    PeerTimeout,
    RemoteError,
    StoreUnavailable,
    ToolError,
)

__all__ = ["shutting_down_error", "to_jsonrpc_error", "tool_error_text"]


def to_jsonrpc_error(exc: BaseException, *, debug: bool = False) -> dict[str, Any]:
    """The JSON-RPC error object for ``exc``; internals stay hidden unless ``debug``."""
    if isinstance(exc, MCPError):
        return exc.to_error()
    if isinstance(exc, StoreUnavailable) and not debug:
        # The operator's problem, but the caller should know it is worth retrying later.
        return {"code": INTERNAL_ERROR, "message": STORE_UNAVAILABLE_TEXT}
    if debug:
        return {"code": INTERNAL_ERROR, "message": f"{type(exc).__name__}: {exc}"}
    return {"code": INTERNAL_ERROR, "message": "Internal error"}


def shutting_down_error() -> dict[str, Any]:
    """The JSON-RPC error answering a request its stopping server cut short."""
    return {
        "code": SHUTTING_DOWN,
        "message": SHUTTING_DOWN_TEXT,
        "data": {"reason": "shutdown", "retry": "elsewhere"},
    }


def tool_error_text(exc: Exception, *, tool: str, debug: bool = False) -> str | None:
    """The text of the ``isError`` result for an exception a tool raised.

    ``None`` means the exception is a deliberate protocol error (an
    :class:`MCPError` the tool raised itself, such as ``InvalidParams``) and
    becomes a JSON-RPC error instead. :class:`ToolError` and the failures of a
    tool's own requests to the client (capability missing, timeout, the client's
    error answer, an elicitation answer that does not fit, connection gone) show
    their message, written for the model. Anything else hides its text and traceback
    unless ``debug`` (2025-11-25 server/tools § error handling; no internals leak).
    """
    if isinstance(exc, ToolError | PeerTimeout | ConnectionClosed):
        return str(exc) or type(exc).__name__
    if isinstance(exc, CapabilityError | RemoteError | ElicitationValidationError):
        return exc.message
    if isinstance(exc, MCPError):
        return None
    if debug:
        trace = "".join(traceback.format_exception(exc))
        return f"Error executing tool '{tool}': {exc!r}\n{trace}"
    return f"Error executing tool '{tool}': an internal error occurred"
