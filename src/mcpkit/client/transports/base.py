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
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ...errors import ConnectionClosed, RemoteError

__all__ = ["ClientTransport", "HTTPErrorStatus", "Inbound", "SessionExpired", "Unreachable"]


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
