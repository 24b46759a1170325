"""A blocking facade over the async client, for scripts and notebooks.

>>> with MCPClient(servers={...}).blocking() as mcp:            # doctest: +SKIP
...     tools = mcp.get_tools()
...     print(tools["weather_forecast"](city="Tokyo"))

Not a second client: :class:`Blocking` wraps any object of the async client
(``MCPClient``, ``Client``, a ``Tool``, ``mcp.resources``…). A private event
loop runs in a daemon thread; every method call is run there, awaited if it
returns an awaitable, and its result handed back, wrapped again when it is a
client object (so ``mcp.get_tools()["x"](...)`` blocks too). Handlers you
register run on that loop's thread. Works inside Jupyter, whose own loop is
already running in the main thread.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import Any

from ..errors import ConnectionClosed
from ..loops import cancel_and_wait, new_event_loop

__all__ = ["Blocking", "LoopThread"]

_CLOSE_METHODS = frozenset({"disconnect", "aclose"})
_STOP_WAIT = 5.0  # seconds: how long stopping the loop waits for its tasks to end


class LoopThread:
    """An event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = new_event_loop()  # uvloop when installed: mcpkit owns this loop
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="mcpkit-blocking", daemon=True
        )
        self._thread.start()

    def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on the loop (awaited if it returns an awaitable); blocks for the result."""
        if threading.current_thread() is self._thread:
            raise RuntimeError(
                "a blocking mcpkit call was made from a handler running on its own loop; "
                "handlers must use the async API"
            )
        if self.loop.is_closed():
            raise ConnectionClosed("this blocking client was closed (its event loop is stopped)")

        async def call() -> Any:
            result = fn()
            if inspect.isawaitable(result):
                result = await result
            return result

        future: Future[Any] = asyncio.run_coroutine_threadsafe(call(), self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C in the caller stops the call on the loop too
            raise

    def stop(self) -> None:
        if self.loop.is_closed():
            return

        async def shutdown() -> None:
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            # Bounded: a cancellation can be lost on Python 3.11 (loops.cancel_and_wait),
            # and the calling thread waits for this.
            await cancel_and_wait(*tasks, timeout=_STOP_WAIT, what="the blocking client's loop")
            await self.loop.shutdown_asyncgens()

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class Blocking:
    """``target``'s methods, blocking. ``with`` connects and disconnects it."""

    __slots__ = ("_root", "_runner", "_target")

    def __init__(self, target: Any, runner: LoopThread | None = None) -> None:
        self._target = target
        self._root = runner is None
        self._runner = runner or LoopThread()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value) or isinstance(value, type):
            return self._wrap(value)

        def method(*args: Any, **kwargs: Any) -> Any:
            result = self._wrap(self._runner.run(lambda: value(*args, **kwargs)))
            if self._root and name in _CLOSE_METHODS:
                self._runner.stop()
            return result

        method.__name__ = name
        method.__doc__ = getattr(value, "__doc__", None)
        return method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._wrap(self._runner.run(lambda: self._target(*args, **kwargs)))

    def __enter__(self) -> Blocking:
        try:
            self._runner.run(self._target.__aenter__)
        except BaseException:
            if self._root:
                self._runner.stop()
            raise
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._runner.run(lambda: self._target.__aexit__(et, e, tb))
        finally:
            if self._root:
                self._runner.stop()

    def close(self) -> None:
        """Stop the private loop (``with`` and ``disconnect()`` do this)."""
        if self._root:
            self._runner.stop()

    def __repr__(self) -> str:
        return f"<Blocking {self._target!r}>"

    def _wrap(self, value: Any) -> Any:
        if _is_client_object(value):
            return Blocking(value, self._runner)
        if (
            type(value) is dict
            and value
            and all(_is_client_object(v) or type(v) is dict for v in value.values())
        ):
            return {k: self._wrap(v) for k, v in value.items()}
        return value


def _is_client_object(value: Any) -> bool:
    """An object of the async client API (wrapped so its methods block too)."""
    cls = type(value)
    return (
        cls.__module__.startswith("mcpkit.client.")
        and not isinstance(value, BaseException | type)
        and not inspect.isroutine(value)
    )
