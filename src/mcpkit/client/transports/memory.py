"""A client transport straight into an :class:`~mcpkit.server.server.MCPServer` object.

No sockets and no subprocess, yet every message crosses ``orjson`` both ways,
so the client and the server see exactly the JSON a real wire would carry.
Each client request is served in its own task, as a real transport would: a
tool waiting for an elicitation answer must not block reading that answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import orjson

from ...errors import ConnectionClosed
from ...protocol import jsonrpc
from ...protocol.jsonrpc import Kind
from .base import Inbound

__all__ = ["InProcessServer", "InProcessSession", "MemoryTransport"]

Deliver = Callable[[dict[str, Any]], Awaitable[None]]


class InProcessSession(Protocol):
    """One server-side session, as :meth:`InProcessServer.create_session` makes it."""

    def receive(self, msg: Any) -> Kind: ...

    async def serve(self, msg: dict[str, Any], send: Deliver) -> dict[str, Any] | None: ...

    def close(self) -> None: ...


class InProcessServer(Protocol):
    """What the in-memory transport needs of a server; :class:`mcpkit.MCPServer` has it.

    A protocol rather than ``MCPServer`` itself: the client and the server are
    siblings that do not import each other (``docs/architecture.md``).
    """

    def create_session(self, *, standalone: Deliver, transport: str) -> InProcessSession: ...

    def lifespan_context(self) -> AbstractAsyncContextManager[Any]: ...


class MemoryTransport:
    """Connects a client session to ``server`` in the same event loop."""

    def __init__(self, server: InProcessServer) -> None:
        self.server = server
        self.session: InProcessSession | None = None
        self._inbound: Inbound | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._lifespan: AbstractAsyncContextManager[Any] | None = None

    async def start(self, inbound: Inbound) -> None:
        # The server's lifespan runs while this connection is open (entered once, however
        # many connections share the server).
        lifespan = self.server.lifespan_context()
        await lifespan.__aenter__()
        self._lifespan = lifespan
        self._inbound = inbound
        self.session = self.server.create_session(standalone=self._deliver, transport="memory")

    async def send(self, message: dict[str, Any]) -> None:
        session = self.session
        if session is None or self._closed:
            raise ConnectionClosed("the in-memory connection is closed")
        wire = orjson.loads(jsonrpc.dumps(message))
        kind = session.receive(wire)  # notifications and answers: handled here, in order
        if kind is Kind.REQUEST:
            task = asyncio.get_running_loop().create_task(self._serve(session, wire))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif kind is Kind.INVALID or kind is Kind.BATCH:  # the client sends no batches
            await self._deliver(jsonrpc.invalid_request(wire))

    async def _serve(self, session: InProcessSession, msg: dict[str, Any]) -> None:
        out = await session.serve(msg, self._deliver)
        if out is not None:
            await self._deliver(out)

    async def _deliver(self, message: dict[str, Any]) -> None:
        if self._closed or self._inbound is None:
            return
        self._inbound.message_received(orjson.loads(jsonrpc.dumps(message)))

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        if self.session is not None:
            self.session.close()
        lifespan, self._lifespan = self._lifespan, None
        if lifespan is not None:
            await lifespan.__aexit__(None, None, None)
