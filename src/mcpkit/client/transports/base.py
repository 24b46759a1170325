"""The narrow interface between a :class:`~mcpkit.client.session.ClientSession` and the wire.

A client transport moves whole JSON-RPC messages; it never interprets them
beyond what its wire needs (the Streamable HTTP transport reads the session id
and the negotiated revision, nothing else). Inbound messages are pushed to an
:class:`Inbound` object with plain method calls: no queue and no reader task
sits between the bytes and the session (ARCHITECTURE.md, principle 3).

The contract:

* ``start(inbound)`` opens the connection and starts delivering.
* ``send(message)`` writes one message. For a request it may return before the
  answer arrives (the answer comes through ``inbound``); when the transport
  learns that a request can no longer be answered it calls
  ``inbound.request_failed(id, exc)``.
* ``inbound.connection_lost(exc)`` is called once when the connection dies for
  good (process exit, protocol garbage); every pending call then fails with it.
* ``aclose()`` releases everything (idempotent).

Every transport that reads bytes bounds what it buffers for one message by
``max_message_size`` (:data:`DEFAULT_MAX_MESSAGE_SIZE` unless configured): a
server that never ends a message (an endless JSON body, SSE ``data:`` lines
without the blank line, a stdout line without a newline) fails with
:class:`MessageTooLarge` instead of filling the client's memory.
"""

from __future__ import annotations

from typing import Any, Final, Protocol, runtime_checkable

from ...errors import ConnectionClosed, RemoteError

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "ClientTransport",
    "HTTPErrorStatus",
    "Inbound",
    "MessageTooLarge",
    "SessionExpired",
    "Unreachable",
    "message_size_problem",
]

DEFAULT_MAX_MESSAGE_SIZE: Final = 32 * 1024 * 1024
"""The largest message (bytes) a client reads from a server unless told otherwise."""


class Inbound(Protocol):
    """What a transport delivers to (implemented by ``ClientSession``)."""

    def message_received(self, message: Any) -> None:
        """One decoded JSON value from the server (a message, or a batch list)."""

    def request_failed(self, request_id: Any, exc: BaseException) -> None:
        """The request ``request_id`` cannot be answered any more (HTTP errors, dropped streams)."""

    def connection_lost(self, exc: BaseException) -> None:
        """The connection is gone for good."""


@runtime_checkable
class ClientTransport(Protocol):
    """A connection to one MCP server."""

    async def start(self, inbound: Inbound) -> None: ...

    async def send(self, message: dict[str, Any]) -> None: ...

    async def aclose(self) -> None: ...


class SessionExpired(ConnectionClosed):
    """The server no longer knows our session (Streamable HTTP: 404 with a session id, or
    a 400 that says so, as servers on the TypeScript SDK answer).

    2025-11-25 transports § session management: the client MUST start a new
    session with a fresh ``initialize``; the session does that once, then
    retries the call.
    """


class Unreachable(ConnectionClosed):
    """An HTTP request could not be made or completed (refused, DNS, TLS, reset)."""


class HTTPErrorStatus(RemoteError):
    """The server answered with an HTTP error status; ``status`` is that status.

    The choice between Streamable HTTP and the legacy HTTP+SSE transport reads
    it (2025-03-26 transports § backwards compatibility: a 4xx to the first
    POST means an older server).
    """

    def __init__(self, message: str, *, status: int, code: int, data: Any = None) -> None:
        super().__init__(message, code=code, data=data)
        self.status = status


class MessageTooLarge(ConnectionClosed):
    """A server sent a message larger than ``max_message_size``; ``limit`` is that size.

    The message is not read further (its connection or stream is dropped), so
    the request it answered fails with this error.
    """

    def __init__(self, server: str, limit: int, where: str) -> None:
        super().__init__(
            f"MCP server {server} sent a message larger than max_message_size ({_size(limit)}) "
            f"{where}; "
            "it was not read further. If the server's messages are legitimately this large, "
            "raise max_message_size (an option of Client and MCPClient, and of each server's "
            "configuration)"
        )
        self.server = server
        self.limit = limit
        self.where = where

    def __reduce__(self) -> tuple[Any, ...]:  # copy.copy() and pickling rebuild it whole
        return (type(self), (self.server, self.limit, self.where))


def message_size_problem(name: str, value: object) -> str | None:
    """Why ``value`` is not a usable ``max_message_size`` (None when it is)."""
    if type(value) is int and value >= 1024:
        return None
    return (
        f"{name} must be a whole number of bytes, at least 1024 "
        f"(the default is {DEFAULT_MAX_MESSAGE_SIZE}, 32 MiB), not {value!r}"
    )


def _size(n: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor} {unit}"
    return f"{n} bytes"
