"""Every exception mcpkit raises, and the one mapping from exceptions to the wire.

Hierarchy, split by who must act::

    MCPKitError
    ├── ConfigurationError        the developer: bad registration, bad options
    │   └── RegistrationError     several registration problems, collected
    ├── MCPError                  carries a JSON-RPC error (code, message, data)
    │   ├── InvalidRequest        -32600, the message breaks the protocol rules
    │   ├── InvalidParams         -32602, the caller sent bad arguments
    │   │   └── ElicitationValidationError  an accepted elicitation answer does not
    │   │                         fit the requested schema (a tool error if uncaught)
    │   ├── MethodNotFound        -32601
    │   ├── ResourceNotFound      -32002 (-32602 from 2026-07-28 on)
    │   ├── Forbidden             -32003, the caller may not make this request
    │   ├── CapabilityError       the peer did not declare what a call needs
    │   └── RemoteError           the peer answered one of our requests with an error
    ├── ToolError                 raised inside a tool: becomes ``isError: true``
    │   └── ToolCallError         a client called a tool that answered ``isError: true``
    ├── PeerTimeout               the peer did not answer in time
    └── ConnectionClosed          the transport went away

The two boundaries to the wire are here too: :func:`to_jsonrpc_error` turns
an exception into a JSON-RPC error object, and :func:`tool_error_text` decides
what a tool's exception shows the model in an ``isError`` result. Nothing
else builds error objects or messages from exceptions by hand.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = [
    "FORBIDDEN",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "RESOURCE_NOT_FOUND",
    "URL_ELICITATION_REQUIRED",
    "CapabilityError",
    "ConfigurationError",
    "ConnectionClosed",
    "ElicitationValidationError",
    "Forbidden",
    "InvalidParams",
    "InvalidRequest",
    "MCPError",
    "MCPKitError",
    "MethodNotFound",
    "PeerTimeout",
    "RegistrationError",
    "RemoteError",
    "ResourceNotFound",
    "ToolCallError",
    "ToolError",
    "to_jsonrpc_error",
    "tool_error_text",
]

# JSON-RPC 2.0 §5.1 and MCP's own codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
URL_ELICITATION_REQUIRED = -32042
# mcpkit's own, in the range JSON-RPC 2.0 § 5.1 leaves to the implementation
# (-32000 .. -32099); MCP defines no code for a refused request.
FORBIDDEN = -32003
# 2026-07-28 transport errors.
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022


class MCPKitError(Exception):
    """Base class of every mcpkit exception."""


class ConfigurationError(MCPKitError):
    """The developer configured something mcpkit cannot use."""


class RegistrationError(ConfigurationError):
    """One or more tools, resources or prompts could not be registered.

    ``problems`` holds one message per problem, each naming what it is about
    (``tool 'add': parameter 'a' ...``); a single problem is the whole message.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            super().__init__(self.problems[0])
            return
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} registration errors:\n{lines}")


class MCPError(MCPKitError):
    """An error with a JSON-RPC code, message and optional data."""

    code: int = INTERNAL_ERROR

    def __init__(self, message: str, *, code: int | None = None, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.data = data

    def to_error(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


class InvalidRequest(MCPError):
    code = INVALID_REQUEST


class InvalidParams(MCPError):
    code = INVALID_PARAMS


class ElicitationValidationError(InvalidParams):
    """The user accepted an elicitation, but the content does not fit the requested schema.

    Raised by ``ctx.elicit(...)``; catch it to handle the answer yourself (ask
    again, fall back, explain). ``content`` is what the client sent (not
    validated), ``errors`` one entry per problem, as pydantic reports them
    (``loc``, ``msg``, ``type``, ``input``). Uncaught in a tool, it becomes an
    ``isError`` result with :attr:`message`, which names each failing field;
    elsewhere (a resource, a prompt) a -32602 error with that message.
    """

    def __init__(self, content: Any, errors: list[ErrorDetails]) -> None:
        parts = []
        for err in errors:
            loc = ".".join(str(p) for p in err.get("loc", ()))
            parts.append(f"field {loc}: {err['msg']}" if loc else err["msg"])
        super().__init__(
            "the answer to elicitation did not match the requested schema: " + "; ".join(parts)
        )
        self.content = content
        self.errors = errors


class MethodNotFound(MCPError):
    code = METHOD_NOT_FOUND


class ResourceNotFound(MCPError):
    code = RESOURCE_NOT_FOUND

    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri}", data={"uri": uri})
        self.uri = uri


class Forbidden(MCPError):
    """The caller may not make this request (raised by a middleware or a handler).

    The client gets a JSON-RPC error with code -32003 and this message; no
    tool runs. Raise it for a policy decision (a missing scope, a rate limit,
    a tool the caller may not see), not for bad arguments (``InvalidParams``).
    """

    code = FORBIDDEN


class RemoteError(MCPError):
    """The peer answered one of our requests with a JSON-RPC error."""


class ToolError(MCPKitError):
    """Raise inside a tool to return ``isError: true`` with this message.

    Any other exception does the same, but its message is hidden unless the
    server runs with ``debug=True``; a ``ToolError`` message is always shown.
    """


class ToolCallError(ToolError):
    """A tool called through a client answered ``isError: true``.

    ``content`` and ``structured_content`` are what the tool returned (the
    error the model would see); ``result`` is the whole ``CallToolResult``.
    Raised inside a server's own tool, it becomes that tool's error result too.
    """

    def __init__(self, message: str, *, tool: str, server: str, result: dict[str, Any]) -> None:
        super().__init__(message)
        self.tool = tool
        self.server = server
        self.result = result
        content = result.get("content")
        self.content: list[Any] = content if isinstance(content, list) else []
        self.structured_content: Any = result.get("structuredContent")


class CapabilityError(MCPError):
    """The peer did not declare a capability the call needs."""

    code = INVALID_REQUEST


class PeerTimeout(MCPKitError, TimeoutError):
    """The peer did not answer within the timeout."""


class ConnectionClosed(MCPKitError, ConnectionError):
    """The connection to the peer is gone."""


def to_jsonrpc_error(exc: BaseException, *, debug: bool = False) -> dict[str, Any]:
    """The JSON-RPC error object for ``exc``; internals stay hidden unless ``debug``."""
    if isinstance(exc, MCPError):
        return exc.to_error()
    if debug:
        return {"code": INTERNAL_ERROR, "message": f"{type(exc).__name__}: {exc}"}
    return {"code": INTERNAL_ERROR, "message": "Internal error"}


def tool_error_text(exc: Exception, *, tool: str, debug: bool = False) -> str | None:
    """The text of the ``isError`` result for an exception a tool raised.

    ``None`` means the exception is a deliberate protocol error (an
    :class:`MCPError` the tool raised itself, such as ``InvalidParams``) and
    becomes a JSON-RPC error instead. :class:`ToolError` and the failures of a
    tool's own requests to the client (capability missing, timeout, the client's
    error answer, an elicitation answer that does not fit, connection gone) show
    their message, which mcpkit or the tool
    author wrote for the model. Anything else hides its text and traceback
    unless ``debug`` (2025-11-25 server/tools § error handling: tool errors are
    results the model can see; ARCHITECTURE.md principle 6: no internals leak).
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
