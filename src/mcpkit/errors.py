"""Every exception mcpkit raises, and the one mapping from exceptions to the wire.

Hierarchy, split by who must act::

    MCPKitError
    │
    │   the developer: a registration or an option mcpkit cannot use
    ├── ConfigurationError            bad options, bad configuration files
    │   ├── RegistrationError         several registration problems, collected
    │   ├── SignatureError            a function's parameters cannot be called by name
    │   ├── ServerJsonError           a server.json the MCP registry would reject
    │   ├── UriTemplateError          a malformed RFC 6570 template (also a ValueError)
    │   └── MissingExtra              an extra is not installed (also a ModuleNotFoundError)
    ├── LifespanError                 the server's lifespan failed to start, or is not running
    │
    │   the caller or the model: a request mcpkit refuses (a JSON-RPC error answer)
    ├── MCPError                      carries a JSON-RPC error (code, message, data)
    │   ├── InvalidRequest            -32600, the message breaks the protocol rules
    │   │   └── TooManyInputRounds    a principal holds its bound of used requestStates
    │   ├── InvalidParams             -32602, the caller sent bad arguments
    │   │   └── ElicitationValidationError  an accepted elicitation answer does not
    │   │                             fit the requested schema (a tool error if uncaught)
    │   ├── MethodNotFound            -32601
    │   ├── ResourceNotFound          -32002 (-32602 from 2026-07-28 on)
    │   ├── Forbidden                 the caller may not make this request (a middleware refused)
    │   │   └── InsufficientScope     ... its token lacks scopes (HTTP: 403 insufficient_scope)
    │   ├── CapabilityError           the peer did not declare what a call needs
    │   ├── URLElicitationRequiredError  -32042, the user must first visit URLs (URL-mode
    │   │                             elicitations in ``data``)
    │   ├── InputReplayMismatch       a tool replayed for input asked another question
    │   └── RemoteError               the peer answered one of our requests with an error
    │       └── HTTPErrorStatus       ... with an HTTP error status (``status``)
    ├── InvalidToken                  a bearer token is missing, malformed, expired or not
    │                                 for this server (HTTP: 401 invalid_token)
    ├── VerifierUnavailable           a token could not be checked (JWKS or introspection
    │                                 endpoint down): HTTP 503, never a pass
    ├── ToolError                     raised inside a tool: becomes ``isError: true``
    │   └── ToolCallError             a client called a tool that answered ``isError: true``
    │
    │   the remote peer: it went away, went silent or sent too much
    ├── PeerTimeout                   the peer did not answer in time (also a TimeoutError)
    ├── ConnectionClosed              the transport went away (also a ConnectionError)
    │   ├── ServerExited              a stdio server process exited (``returncode``)
    │   ├── SessionExpired            an HTTP server forgot our session (404)
    │   ├── Unreachable               an HTTP request could not be made or completed
    │   └── MessageTooLarge           a server message went past ``max_message_size``
    ├── StoreUnavailable              a shared store (Redis, the OAuth token file) could not
    │                                 be reached or failed: HTTP 503 / a JSON-RPC error,
    │                                 never a hang
    ├── ServerBusy                    an HTTP server process has no room for one more
    │                                 session (all busy): HTTP 503
    ├── AuthorizationFailed           an OAuth flow could not get a token (the authorization
    │   │                             server refused, or its answers failed a security check)
    │   ├── OAuthResponseTooLarge     ... an OAuth answer went past ``max_response_size``
    │   ├── UpstreamError             ... the IdP behind mcpkit's authorization server failed
    │   └── OAuthResponseTimeout      ... an OAuth exchange went past its deadline
    ├── EventTooLarge                 an SSE event went past its bound (also a ValueError)
    └── BodyTooLarge, BodyTimeout, ClientGone
                                      an HTTP request body too large, too slow or never sent;
                                      the server's HTTP intake answers 413 / 408 / nothing

``RemoteError`` is the peer's answer, so it sits under ``MCPError`` (it has a code)
although the peer, not the caller, acted. Some exceptions live elsewhere on
purpose: ``Restart`` (beside the input-round driver in ``server/``) is a ``BaseException``
used as control flow (a tool run inline asked for input and is run again as a pausable
call), not an error; ``server/middleware.py``'s private ``_Unanswered`` is a
``CancelledError`` that carries a round that ended without an answer out through the
middleware chain; and the ``mcpkit`` command's own errors (``cli/``) end as an
exit status and a message on stderr, never reach library callers or the wire.

The boundaries to the wire are in :mod:`mcpkit.protocol.error_answers`: ``to_jsonrpc_error``
turns an exception into a JSON-RPC error object (an :class:`MCPError` through its
:meth:`~MCPError.to_error`), and ``tool_error_text`` decides what a tool's exception shows
the model in an ``isError`` result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

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
    "SHUTTING_DOWN",
    "SHUTTING_DOWN_TEXT",
    "STORE_UNAVAILABLE_TEXT",
    "URL_ELICITATION_REQUIRED",
    "AuthorizationFailed",
    "BodyTimeout",
    "BodyTooLarge",
    "CapabilityError",
    "ClientGone",
    "ConfigurationError",
    "ConnectionClosed",
    "ElicitationValidationError",
    "EventTooLarge",
    "Forbidden",
    "HTTPErrorStatus",
    "InputReplayMismatch",
    "InsufficientScope",
    "InvalidParams",
    "InvalidRequest",
    "InvalidToken",
    "LifespanError",
    "MCPError",
    "MCPKitError",
    "MessageTooLarge",
    "MethodNotFound",
    "MissingExtra",
    "OAuthResponseTimeout",
    "OAuthResponseTooLarge",
    "PeerTimeout",
    "RegistrationError",
    "RemoteError",
    "ResourceNotFound",
    "ServerBusy",
    "ServerExited",
    "ServerJsonError",
    "SessionExpired",
    "SignatureError",
    "StoreUnavailable",
    "TooManyInputRounds",
    "ToolCallError",
    "ToolError",
    "URLElicitationRequiredError",
    "Unreachable",
    "UpstreamError",
    "UriTemplateError",
    "VerifierUnavailable",
]

#: What a client is told when the server's shared state store cannot be reached.
STORE_UNAVAILABLE_TEXT = (
    "Service unavailable: the server's state store cannot be reached; retry later"
)

# JSON-RPC 2.0 §5.1 and MCP's own codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
URL_ELICITATION_REQUIRED = -32042
# mcpkit's own codes lie outside JSON-RPC's reserved -32768 .. -32000: from 2026-07-28
# on, -32020 .. -32099 belong to the MCP specification alone and -32000 .. -32019 to
# legacy use (2026-07-28 basic § error codes: new codes SHOULD be allocated outside the
# reserved range). MCP defines no code for a refused request; 403 is HTTP's.
FORBIDDEN = -31403
# A request still running when its server stops (the graceful period is over) is answered
# with this rather than dropped, so the client can send it to another server; 503 is
# HTTP's Service Unavailable. Its ``data`` says so for programs: see shutting_down_error.
SHUTTING_DOWN = -31503
SHUTTING_DOWN_TEXT = (
    "Server is shutting down: the request was stopped before it finished "
    "(it may have partly run); retry it on another server"
)
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


class SignatureError(ConfigurationError):
    """Everything wrong with a function's parameters, one problem each (``problems``).

    MCP passes arguments by name, as one JSON object: a parameter must be
    callable by keyword and have a type pydantic can validate (and, for a tool,
    describe as JSON Schema). Callers prefix each problem with what they register.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


class ServerJsonError(ConfigurationError):
    """A server.json the registry would reject; ``problems`` names each bad field."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"server.json would be rejected by the MCP registry ({len(self.problems)} "
            f"problem(s)):\n{lines}"
        )


class UriTemplateError(ConfigurationError, ValueError):
    """A malformed URI template; names the template and the 0-based position.

    Also a ``ValueError``, as it was before it joined this hierarchy.
    """

    def __init__(self, message: str, template: str, position: int) -> None:
        super().__init__(f"{message} at position {position} in URI template {template!r}")
        self.template, self.position = template, position


class MissingExtra(ConfigurationError, ModuleNotFoundError):
    """A module needs an optional dependency that is not installed: raised at its import.

    Names the ``feature``, the missing ``package`` (also ``name``: ``except ImportError``
    still catches it) and the command that installs it: ``pip install 'mcpkit[extra]'``.
    """

    def __init__(self, feature: str, extra: str, package: str) -> None:
        hint = f"pip install 'mcpkit[{extra}]'"
        super().__init__(f"{feature} needs {package}, which is not installed: {hint}", name=package)
        self.feature, self.extra, self.package = feature, extra, package

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.feature, self.extra, self.package))


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


class TooManyInputRounds(InvalidRequest):
    """A principal holds its bound of unexpired used ``requestState``s (the memory store's
    ``max_entries_per_principal``): the state is not used up, so the same retry may come
    again later. ``-32600`` on an HTTP 200, like ``max_inflight``; ``data`` names the bound."""

    def __init__(self, bound: int) -> None:
        super().__init__(
            f"Invalid request: too many input-required rounds in progress for this client "
            f"(the limit is {bound} unexpired requestStates per principal); retry later",
            data={"maxRoundsPerPrincipal": bound},
        )


class InvalidParams(MCPError):
    code = INVALID_PARAMS


class ElicitationValidationError(InvalidParams):
    """The user accepted an elicitation, but the content does not fit the requested schema.

    Raised by ``ctx.elicit(...)``; catch it to handle the answer yourself (ask again, fall back,
    explain). ``content`` is what the client sent (not validated), ``errors`` one entry per
    problem, as pydantic reports them (``loc``, ``msg``, ``type``, ``input``). Uncaught in a
    tool, it becomes an ``isError`` result with :attr:`message`, which names each failing field;
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
        self.content, self.errors = content, errors


class MethodNotFound(MCPError):
    code = METHOD_NOT_FOUND


class ResourceNotFound(MCPError):
    code = RESOURCE_NOT_FOUND

    def __init__(self, uri: str) -> None:
        super().__init__(f"Resource not found: {uri}", data={"uri": uri})
        self.uri = uri


class InputReplayMismatch(MCPError):
    """A replayed handler asked another question than the one its journal recorded.

    A tool asking the client for input may be run again with the answers so far
    (2026-07-28 input rounds); it must ask the same questions in the same order.
    """

    code = INTERNAL_ERROR


class LifespanError(MCPKitError):
    """The server's lifespan failed to start (the cause is ``__cause__``), or is not running."""


class Forbidden(MCPError):
    """The caller may not make this request: a JSON-RPC error -31403 with this message.

    Raise it (in a middleware or handler) for a policy decision (a missing scope, a rate
    limit, a hidden tool), not for bad arguments (``InvalidParams``); no tool runs."""

    code = FORBIDDEN


class InsufficientScope(Forbidden):
    """The request's token lacks ``scopes`` (all of them are needed).

    Over HTTP the transport answers ``403`` with ``WWW-Authenticate: Bearer
    error="insufficient_scope", scope="..."`` so the client can step up (RFC 6750
    § 3.1, MCP authorization § scope challenge handling); elsewhere it is a
    JSON-RPC error like any ``Forbidden``.
    """

    def __init__(self, scopes: Any, message: str | None = None) -> None:
        self.scopes: tuple[str, ...] = tuple(scopes)
        super().__init__(
            message or "insufficient scope: this request needs " + " ".join(self.scopes),
            data={"requiredScopes": list(self.scopes)},
        )


class InvalidToken(MCPKitError):
    """A bearer token is missing, malformed, expired, revoked or issued for another resource.

    Raised by verifiers (returning None means the same): HTTP ``401``, ``WWW-Authenticate:
    Bearer error="invalid_token"``, the message as ``error_description`` (never the token)."""


class VerifierUnavailable(MCPKitError):
    """A token could not be checked: the JWKS or introspection endpoint failed or timed out.

    Not the token's fault, so not a 401 (which would send the client to get a new token):
    the HTTP layer answers ``503`` and logs the cause. The request never runs unverified.
    """


class StoreUnavailable(MCPKitError):
    """A shared store (``mcpkit.stores.redis``) could not be reached, timed out or failed.

    Raised within the store's bounded timeouts, never after a hang; the message names its
    URL, password hidden. The operator's to fix: HTTP answers ``503``, a JSON-RPC request
    an internal error that leaks nothing about the store. The next operation reconnects.
    """


class ServerBusy(MCPKitError):
    """This server process has no room for one more live session: it holds
    ``max_sessions``, every one of them busy. The HTTP transport answers ``503``
    (the client may retry later); in a cluster another node may have room.
    """


class AuthorizationFailed(MCPKitError):
    """An OAuth flow could not obtain a token for a protected server.

    ``error`` is the authorization server's OAuth error code (``invalid_grant``, ...), else
    a short mcpkit reason (``issuer_mismatch``, ``retry_limit``, ...). Messages never
    contain tokens, secrets or authorization codes."""

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


class UpstreamError(AuthorizationFailed):
    """The IdP behind mcpkit's authorization server failed; ``error``: the OAuth code sent on."""

    def __init__(self, message: str, *, error: str = "server_error") -> None:
        super().__init__(message, error=error)


class OAuthResponseTooLarge(AuthorizationFailed):
    """An answer to the OAuth client (metadata, registration, token) was larger than
    ``max_response_size`` bytes; it was not read further. ``error`` is ``response_too_large``.
    """

    def __init__(self, url: str, limit: int) -> None:
        super().__init__(
            f"{url} sent an OAuth answer larger than max_response_size ({_size(limit)}); "
            "it was not read further",
            error="response_too_large",
        )
        self.url, self.limit = url, limit

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.url, self.limit))


class OAuthResponseTimeout(AuthorizationFailed):
    """An exchange of the OAuth client (the request and its whole answer) took longer
    than its deadline (the OAuth object's ``timeout``). ``error`` is ``response_timeout``.
    """

    def __init__(self, url: str, timeout: float) -> None:
        super().__init__(
            f"{url} did not send its whole OAuth answer within {timeout:g} s; gave up",
            error="response_timeout",
        )
        self.url, self.timeout = url, timeout

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.url, self.timeout))


class RemoteError(MCPError):
    """The peer answered one of our requests with a JSON-RPC error."""


class HTTPErrorStatus(RemoteError):
    """The server answered with an HTTP error status; ``status`` is that status.

    The choice between Streamable HTTP and the legacy HTTP+SSE transport reads it (2025-03-26
    transports § backwards compatibility: a 4xx to the first POST means an older server).
    """

    def __init__(self, message: str, *, status: int, code: int, data: Any = None) -> None:
        super().__init__(message, code=code, data=data)
        self.status = status


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
        self.tool, self.server, self.result = tool, server, result
        content = result.get("content")
        self.content: list[Any] = content if isinstance(content, list) else []
        self.structured_content: Any = result.get("structuredContent")


class CapabilityError(MCPError):
    """The peer did not declare a capability the call needs."""

    code = INVALID_REQUEST


class URLElicitationRequiredError(MCPError):
    """Raise from a handler when the request cannot go on until the user visits URLs.

    2025-11-25 client/elicitation § error handling: the client gets error
    ``-32042`` with ``data.elicitations`` (each a URL-mode elicitation with its
    ``elicitationId``; build them as :class:`mcpkit.URLElicitation`, which checks the URL)
    and may retry once ``notifications/elicitation/complete`` arrives (send it with
    ``server.complete_elicitation`` or ``ctx.complete_elicitation``). On a tool it is a
    protocol error, not a tool result, because the client, not the model, has to act on it.
    """

    def __init__(self, elicitations: Sequence[_URLElicitationLike], message: str | None = None):
        if not elicitations:
            raise ValueError("URLElicitationRequiredError needs at least one URL elicitation")
        self.elicitations = list(elicitations)
        count = len(self.elicitations)
        text = message or (
            "this request needs the user to complete "
            + ("an elicitation" if count == 1 else f"{count} elicitations")
            + " in the browser first"
        )
        super().__init__(
            text,
            code=URL_ELICITATION_REQUIRED,
            data={"elicitations": [item.to_params() for item in self.elicitations]},
        )


class _URLElicitationLike(Protocol):
    """What :class:`URLElicitationRequiredError` needs of an elicitation (``URLElicitation``)."""

    @property
    def url(self) -> str: ...

    def to_params(self) -> dict[str, Any]: ...


class PeerTimeout(MCPKitError, TimeoutError):
    """The peer did not answer within the timeout."""


class ConnectionClosed(MCPKitError, ConnectionError):
    """The connection to the peer is gone."""


class ServerExited(ConnectionClosed):
    """The server process exited (or stopped being usable); ``returncode`` may be None."""

    def __init__(self, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode


class SessionExpired(ConnectionClosed):
    """The server no longer knows our session (Streamable HTTP: 404 with a session id, or
    a 400 that says so, as servers on the TypeScript SDK answer).

    2025-11-25 transports § session management: the client MUST start a new session with a fresh
    ``initialize``; the session does that once, then retries the call.
    """


class Unreachable(ConnectionClosed):
    """An HTTP request could not be made or completed (refused, DNS, TLS, reset)."""


class MessageTooLarge(ConnectionClosed):
    """A server sent a message larger than ``max_message_size`` (``limit``): it is not read
    further (its connection or stream is dropped), and the request it answered fails."""

    def __init__(self, server: str, limit: int, where: str) -> None:
        super().__init__(
            f"MCP server {server} sent a message larger than max_message_size ({_size(limit)}) "
            f"{where}; "
            "it was not read further. If the server's messages are legitimately this large, "
            "raise max_message_size (an option of Client and MCPClient, and of each server's "
            "configuration)"
        )
        self.server, self.limit, self.where = server, limit, where

    def __reduce__(self) -> tuple[Any, ...]:  # copy.copy() and pickling rebuild it whole
        return (type(self), (self.server, self.limit, self.where))


def _size(n: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor} {unit}"
    return f"{n} bytes"


class EventTooLarge(MCPKitError, ValueError):
    """An SSE event (or a line) went past ``max_event_size`` bytes; the stream is unusable
    (the client's transports turn it into :class:`MessageTooLarge`)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"an SSE event is larger than {limit} bytes")
        self.limit = limit


class BodyTooLarge(MCPKitError):
    """An HTTP request body exceeds the configured limit (the server answers 413)."""


class BodyTimeout(MCPKitError):
    """An HTTP request body did not arrive within the configured time (the server answers 408)."""


class ClientGone(MCPKitError):
    """The HTTP client disconnected before its request body arrived (nobody to answer)."""
