"""Input inside a task (SEP-2663 ``input_required``): :class:`TaskInputs`, one per running task.

A task's tool asks with the same ``await ctx.elicit(...)`` / ``ctx.sample(...)`` /
``ctx.list_roots()`` as everywhere else; the server part runs it under
:func:`mcpkit.server.context.requests_answered_by` with :meth:`TaskInputs.ask`, so that
each request becomes an entry of the task's ``inputRequests``:

1. the request gets a key, unique over the task's lifetime (ext-tasks: keys are
   server-assigned; a key is never reused, so a late answer to an old question
   cannot answer a new one);
2. the task moves to ``input_required`` with every outstanding request (two questions
   asked at once are both listed);
3. ``tasks/update {inputResponses}`` (:meth:`TaskInputs.answer`) resolves the keys it
   knows and ignores the rest ("servers MUST ignore responses for unknown or
   already-satisfied keys"); before it acknowledges, the task shows only the requests
   still unanswered, or is ``working`` again when none is left.

Every write of one task's record goes through one lock, so that concurrent questions and
answers never publish a stale list.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ...errors import PeerTimeout

__all__ = ["TaskInputs"]

#: ``await publish(outstanding)``: record the outstanding requests (empty: working again).
Publish = Callable[[dict[str, dict[str, Any]]], Awaitable[None]]


class TaskInputs:
    """The outstanding input requests of one running task, and their answers."""

    def __init__(self, publish: Publish) -> None:
        self._publish = publish
        self._lock = asyncio.Lock()
        self._outstanding: dict[str, dict[str, Any]] = {}
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._used: set[str] = set()
        self._counter = itertools.count(1)

    def _key(self, method: str, wanted: str | None) -> str:
        base = wanted or method.split("/")[0]  # elicitation, sampling, roots
        key = base
        while key in self._used:
            key = f"{base}_{next(self._counter)}"
        self._used.add(key)
        return key

    async def _write(self) -> None:
        async with self._lock:
            await self._publish(dict(self._outstanding))

    async def ask(
        self, method: str, params: dict[str, Any] | None, key: str | None, timeout: float | None
    ) -> dict[str, Any]:
        """Ask the client through the task; the result of the client's answer.

        ``timeout`` (seconds; None: until the task ends) raises
        :class:`~mcpkit.errors.PeerTimeout`."""
        name = self._key(method, key)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._outstanding[name] = {"method": method, "params": dict(params or {})}
        self._waiting[name] = future
        await self._write()
        try:
            if timeout is None:
                return await future
            try:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for can drop the
                # handler's cancellation (CPython gh-86296), and the server's stop waits.
                async with asyncio.timeout(timeout):
                    return await asyncio.shield(future)
            except TimeoutError:
                raise PeerTimeout(
                    f"the client did not answer {method} within {timeout:g} s"
                ) from None
        finally:
            # Still listed only when it was not answered (timeout, cancellation).
            if self._outstanding.pop(name, None) is not None:
                self._waiting.pop(name, None)
                if not future.done():
                    future.cancel()
                await asyncio.shield(self._write())

    async def answer(self, responses: Mapping[str, Any]) -> int:
        """Resolve the outstanding requests ``responses`` answers (objects only); the
        number resolved. The record is updated before this returns."""
        resolved = 0
        for name, value in responses.items():
            future = self._waiting.get(name)
            if future is None or future.done() or not isinstance(value, dict):
                continue  # unknown, already satisfied, or not a result: asked again
            del self._waiting[name]
            del self._outstanding[name]
            future.set_result(value)
            resolved += 1
        if resolved:
            await self._write()
        return resolved
