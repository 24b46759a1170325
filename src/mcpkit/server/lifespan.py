"""The application lifespan: shared resources opened once, before the first request.

``MCPServer(lifespan=fn)`` takes a function of the server that returns an async
context manager (usually an ``@asynccontextmanager`` generator). It is entered
when serving starts and exited when serving stops; what it yields is
``server.lifespan_state``, which tools, resources and prompts reach as
``ctx.lifespan_state`` and middleware as ``ctx.lifespan_state``.

Who enters it: :func:`~mcpkit.transports.stdio.serve_stdio` around the session,
the ASGI apps (``http_app``, ``sse_app``) on the ASGI ``lifespan`` startup and
shutdown events, and the in-memory clients (``mcpkit.testing.connect``,
``Client(server=...)``) around their connection. Entries nest: several
transports serving one server (two ASGI apps in one host, a test client
connected to a running server) share one entry, made by the first and exited
by the last, so the resource is opened once.

A lifespan that raises while starting stops the server: the error is raised
again as :class:`LifespanError`, which names the server and the cause (and an
ASGI server reports it as ``lifespan.startup.failed``).

Extensions (:mod:`.extension`) bring lifespans of their own: they are entered
first, in the order the extensions were added, and the server's own lifespan
inside them (so it may use what they opened); they exit in reverse order.
What they yield is not the server's ``lifespan_state``.

``server.add_lifespan(factory)`` adds lifespans entered *inside* the server's
own (after it started, in the order added; exited before it ends): a mounted
server's lifespan (``mcpkit.compose.mount``) runs there, so it may use what the
parent opened.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, LifespanError

if TYPE_CHECKING:
    from .server import MCPServer

__all__ = ["Lifespan", "LifespanError", "LifespanFactory"]

log = logging.getLogger("mcpkit.server")

#: ``lifespan(server)`` -> an async context manager; what it yields is the lifespan state.
LifespanFactory = Callable[["MCPServer"], AbstractAsyncContextManager[Any]]


class _NotRunning:
    """``lifespan_state`` while a lifespan is configured but not entered."""

    __slots__ = ()


NOT_RUNNING: Any = _NotRunning()


class Lifespan:
    """Enters ``factory(server)`` for the first user and exits it after the last."""

    __slots__ = ("_cm", "_factory", "_server", "_users", "around", "inside", "state")

    def __init__(self, server: MCPServer, factory: LifespanFactory | None) -> None:
        if factory is not None and not callable(factory):
            raise ConfigurationError(
                f"lifespan must be a function of the server returning an async context "
                f"manager (e.g. an @asynccontextmanager function), not {factory!r}"
            )
        self._server = server
        self._factory = factory
        self._users = 0
        self._cm: AbstractAsyncContextManager[Any] | None = None
        self.state: Any = None if factory is None else NOT_RUNNING
        # (label, factory) of the extensions' lifespans, entered around the server's own.
        self.around: list[tuple[str, LifespanFactory]] = []
        # (label, factory) of the lifespans added with add_lifespan, entered inside it.
        self.inside: list[tuple[str, LifespanFactory]] = []

    @property
    def running(self) -> bool:
        return self._users > 0

    @contextlib.asynccontextmanager
    async def __call__(self) -> AsyncIterator[Any]:
        await self.enter()
        try:
            yield self.state
        finally:
            await self.exit()

    async def enter(self) -> None:
        self._users += 1
        if self._users > 1 or (self._factory is None and not self.around and not self.inside):
            return
        stack = contextlib.AsyncExitStack()
        what = f"the lifespan of server {self._server.name!r}"
        try:
            for label, factory in self.around:
                what = f"the lifespan of extension {label!r} of server {self._server.name!r}"
                cm = self._open(factory, f"the lifespan of extension {label!r}")
                await stack.enter_async_context(cm)
            state = None
            if self._factory is not None:
                what = f"the lifespan of server {self._server.name!r}"
                cm = self._open(self._factory, f"lifespan({self._server.name!r})")
                state = await stack.enter_async_context(cm)
            for label, factory in self.inside:
                what = f"lifespan {label!r} of server {self._server.name!r}"
                await stack.enter_async_context(self._open(factory, f"lifespan {label!r}"))
        except BaseException as exc:
            self._users -= 1
            await stack.aclose()
            if not isinstance(exc, Exception):
                raise
            log.error("%s failed to start: %r", what, exc)
            raise LifespanError(f"{what} failed to start: {type(exc).__name__}: {exc}") from exc
        self._cm = stack
        self.state = state

    def _open(self, factory: LifespanFactory, what: str) -> AbstractAsyncContextManager[Any]:
        cm = factory(self._server)
        if not hasattr(cm, "__aenter__"):
            raise ConfigurationError(
                f"{what} returned {type(cm).__name__}, not an async context manager; "
                "decorate the function with @contextlib.asynccontextmanager"
            )
        return cm

    async def exit(self) -> None:
        self._users -= 1
        if self._users > 0 or self._cm is None:
            return
        cm, self._cm = self._cm, None
        try:
            await cm.__aexit__(None, None, None)
        finally:
            self.state = None if self._factory is None else NOT_RUNNING
