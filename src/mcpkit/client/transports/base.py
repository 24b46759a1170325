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

from ...errors import HTTPErrorStatus, MessageTooLarge, SessionExpired, Unreachable

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


def message_size_problem(name: str, value: object) -> str | None:
    """Why ``value`` is not a usable ``max_message_size`` (None when it is)."""
    if type(value) is int and value >= 1024:
        return None
    return (
        f"{name} must be a whole number of bytes, at least 1024 "
        f"(the default is {DEFAULT_MAX_MESSAGE_SIZE}, 32 MiB), not {value!r}"
    )
