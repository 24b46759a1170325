"""A session's traffic to its client: server→client requests and notifications.

:class:`SessionOutbound` is mixed into :class:`~.session.ServerSession`: sending a
request (elicitation, sampling, roots) and awaiting its answer, or turning it into an
input request on the stateless era (:mod:`.stateless.input_required`), or handing it to
detached work's own channel (a task of the tasks extension, ``context.requests_answered_by``);
why no request can reach a client at all; notifications and log messages.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..errors import CapabilityError, ConnectionClosed, PeerTimeout
from ..protocol import jsonrpc
from ..protocol.lifecycle import State
from ..protocol.observe import notify_observed, observed
from .context import LOG_LEVELS, request_asker

if TYPE_CHECKING:
    from ..protocol.correlation import Outgoing
    from ..protocol.versions import Revision
    from .request import Request, Send
    from .server import MCPServer
    from .stateless.input_required import ParkedCall

__all__ = ["SessionOutbound"]

log = logging.getLogger("mcpkit.server")


class SessionOutbound:
    """Mixed into ``ServerSession``; the attributes it names are the session's own."""

    __slots__ = ()

    if TYPE_CHECKING:
        server: MCPServer
        state: State
        stateless: bool
        detached: bool
        inputs: ParkedCall | None
        revision: Revision
        log_level: int
        client_capabilities: dict[str, Any]
        standalone: Send

        @property
        def outgoing(self) -> Outgoing: ...

    async def send_request(
        self,
        method: str,
        params: dict[str, Any] | None,
        request: Request | None = None,
        *,
        timeout: float | None = None,
        capability: str | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        """Send a request to the client and await its result.

        On the stateless era the request becomes an input request of an
        input-required result (MRTR) named ``key``, and the answer arrives with
        the client's retry (see :mod:`.stateless.input_required`).

        Raises :class:`CapabilityError` when ``capability`` was not declared by the
        client, :class:`PeerTimeout` when it does not answer within ``timeout``
        (default: the server's ``request_timeout``), :class:`RemoteError` when it
        answers with an error and :class:`ConnectionClosed` when the session ends.
        """
        if self.state is State.CLOSED:
            raise ConnectionClosed(f"cannot send {method}: the session is closed")
        unreachable = self.unreachable(method)
        if unreachable is not None:
            raise unreachable
        if capability is not None and capability not in self.client_capabilities:
            raise CapabilityError(
                f"the client did not declare the '{capability}' capability, so the server cannot send {method}"
            )
        asker = request_asker()
        if asker is not None:  # detached work (a task) asks through its own channel
            return await asker(method, params, key, timeout)
        if self.inputs is not None:
            return await self.inputs.ask(method, params, key, timeout)
        if self.stateless:
            raise CapabilityError(
                f"cannot send {method}: this server runs in stateless mode, which has no channel "
                "for server-to-client requests"
            )
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        outgoing = self.outgoing
        _, message = outgoing.open(method, params, fut)
        send = request.send_raw if request is not None else self.standalone
        wait = self.server.request_timeout if timeout is None else timeout
        observe = self.server.observe  # telemetry (protocol/observe.py): a client span
        observer = observe(self, "request", method) if observe is not None else None
        if observer is None:
            return await self._exchange(outgoing, fut, message, send, wait)
        observer.opened(message)  # may add trace context to its _meta
        return await observed(observer, self._exchange(outgoing, fut, message, send, wait))

    async def _exchange(
        self,
        outgoing: Outgoing,
        fut: asyncio.Future[dict[str, Any]],
        message: dict[str, Any],
        send: Send,
        wait: float,
    ) -> dict[str, Any]:
        """Send the request ``message`` and await its answer ``fut``, at most ``wait`` s."""
        rid, method = message["id"], message["method"]
        try:
            await send(message)
            async with asyncio.timeout(wait):  # not wait_for: on 3.11 it can lose a cancel
                return await fut
        except TimeoutError:
            cancelled = outgoing.cancel(rid, "timeout")
            if cancelled is not None:
                try:
                    await send(cancelled)
                except Exception:
                    pass
            raise PeerTimeout(f"the client did not answer {method} within {wait:g} s") from None
        finally:
            outgoing.forget(rid)

    def unreachable(self, method: str) -> CapabilityError | None:
        """Why no request can reach the client at all, whatever capabilities it declared.

        On the handshake era's stateless HTTP mode every POST gets a fresh session
        that never saw ``initialize``, so the client's capabilities are unknown: say
        that the mode is why, not that the client failed to declare them. A detached
        session (``server.execute_tool``) has no client to ask: say that.
        """
        if self.detached:
            return CapabilityError(
                f"cannot send {method}: no client is connected (the tool runs directly, through "
                "server.execute_tool), so nothing can answer a server-to-client request; call "
                "the tool through a client (for tests, mcpkit.testing.connect(server)) instead"
            )
        if not self.stateless or self.inputs is not None or self.revision.era == "stateless":
            return None
        return CapabilityError(
            f"cannot send {method}: this server runs in stateless mode (stateless HTTP: each "
            "request is served without a session), which has no channel for server-to-client "
            "requests, whatever capabilities the client declared; serve with sessions (the "
            "default) for this tool, or use a client on protocol revision 2026-07-28, which "
            "answers such requests in input-required rounds"
        )

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """A notification not related to any request (standalone stream)."""
        if self.state is State.NEW:
            return
        msg = jsonrpc.notification(method, params)
        observe = self.server.observe  # telemetry (protocol/observe.py)
        try:
            if observe is None:
                await self.standalone(msg)
            else:
                await notify_observed(observe, self, self.standalone, msg)
        except Exception as exc:  # a gone client must not break the notifier
            log.debug("could not deliver %s: %s", method, exc)

    async def log(
        self, request: Request | None, level: str, data: Any, *, logger: str | None = None
    ) -> None:
        rank = LOG_LEVELS.get(level)
        if rank is None:
            raise ValueError(f"unknown log level {level!r}")
        if rank < self.log_level:
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        msg = jsonrpc.notification("notifications/message", params)
        send = request.send_raw if request is not None else self.standalone
        observe = self.server.observe  # telemetry (protocol/observe.py)
        await (send(msg) if observe is None else notify_observed(observe, self, send, msg))
