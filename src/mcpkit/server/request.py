"""``Request``: one request a server session is serving, and the ``Send`` it answers on.

Built by :class:`~mcpkit.server.session.ServerSession` for every request it
serves; handlers and the context reach the request's id, params, ``_meta``,
progress token, cancellation signal and auth info through it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..protocol import jsonrpc
from ..protocol.observe import notify_observed
from .context import CancelSignal

if TYPE_CHECKING:
    from .session import ServerSession

__all__ = ["Request", "Send", "stop_for_shutdown", "stopped_for_shutdown"]

Send = Callable[[dict[str, Any]], Awaitable[None]]

# Tasks cancelled because their server stops while they run (its graceful period is
# over): the session answers their requests with a SHUTTING_DOWN error instead of
# nothing, on the stream each came in on, so the client knows to retry elsewhere.
# Marked here, not by a cancel message, which a handler's own awaits may replace.
_stopping: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()


def stop_for_shutdown(task: asyncio.Task[Any]) -> None:
    """Cancel ``task``, serving a request, because the server is stopping."""
    _stopping.add(task)
    task.cancel()


def stopped_for_shutdown(task: asyncio.Task[Any] | None) -> bool:
    """Was ``task`` cancelled by :func:`stop_for_shutdown`?"""
    return task is not None and task in _stopping


class Request:
    """A request being served: its id, params and the stream to answer on."""

    __slots__ = (
        "_signal",
        "auth_info",
        "id",
        "meta",
        "method",
        "params",
        "progress_token",
        "send_raw",
        "session",
        "task",
    )

    def __init__(
        self, session: ServerSession, msg: dict[str, Any], send: Send, auth_info: Any
    ) -> None:
        self.session = session
        self.id = msg["id"]
        self.method: str = msg["method"]
        params = msg.get("params")
        self.params: dict[str, Any] = params if params is not None else {}
        meta = self.params.get("_meta")
        self.meta: dict[str, Any]
        self.progress_token: str | int | None
        if isinstance(meta, dict):
            self.meta = meta
            self.progress_token = jsonrpc.progress_token(meta)
        else:  # most requests: no call to make
            self.meta = {}
            self.progress_token = None
        self.send_raw = send
        self.auth_info = auth_info
        self._signal: CancelSignal | None = None  # made when first asked for: most never are
        self.task: asyncio.Task[Any] | None = None

    @property
    def signal(self) -> CancelSignal:
        """Set when the client cancels the request."""
        signal = self._signal
        if signal is None:
            signal = self._signal = CancelSignal()
        return signal

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled the request (without making its signal)."""
        signal = self._signal
        return signal is not None and signal.cancelled

    @property
    def close_stream(self) -> Callable[[], Awaitable[None]] | None:
        """Closes the request's stream early, on transports that can (Streamable HTTP,
        SEP-1699); looked up only when asked, since on most ``send`` callables the lookup
        fails, and a failed attribute lookup costs a raised and caught exception."""
        close: Callable[[], Awaitable[None]] | None = getattr(self.send_raw, "close_stream", None)
        return close

    async def send(self, method: str, params: dict[str, Any] | None = None) -> None:
        msg = jsonrpc.notification(method, params)
        observe = self.session.server.observe  # telemetry (protocol/observe.py)
        if observe is None:
            await self.send_raw(msg)
        else:
            await notify_observed(observe, self.session, self.send_raw, msg)

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        token = self.progress_token
        call = self.session.inputs
        if call is not None:
            # A call resumed by a 2026-07-28 retry reports to that retry's token: the
            # client dropped the callback of the request that started it (mrtr).
            token = call.progress_token(token)
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and self.session.revision.progress_messages:
            params["message"] = message
        await self.send("notifications/progress", params)
