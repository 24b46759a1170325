"""Event loops that mcpkit creates itself (uvloop when installed), and ending tasks on them.

mcpkit never changes the application's event loop policy. It only chooses the loop
for the loops it owns (``run_stdio``, the blocking client facade, the ``mcpkit``
commands), and offers :func:`run` to applications that opt in::

    from mcpkit.loops import run

    run(main())          # asyncio.run(main()), on uvloop when installed

Why: on uvloop a stdio round trip costs the client about two thirds of the CPU it
costs on asyncio's selector loop (``benchmarks/README.md``, the client part). ``pip
install 'mcpkit[fast]'`` installs uvloop (through ``uvicorn[standard]``; not on
Windows, which uvloop does not support).

:func:`cancel_and_wait` ends tasks at shutdown and close, bounded even where a
cancellation is lost (Python 3.11, CPython gh-86296).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar, cast

__all__ = ["cancel_and_wait", "new_event_loop", "run"]

logger = logging.getLogger(__name__)

# How often a task still running is cancelled again (see cancel_and_wait).
RECANCEL_INTERVAL = 0.1

T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop: uvloop's when uvloop is importable, else asyncio's default."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return cast(asyncio.AbstractEventLoop, uvloop.new_event_loop())


def run(main: Coroutine[Any, Any, T], *, debug: bool | None = None) -> T:
    """``asyncio.run(main)`` on a loop from :func:`new_event_loop` (the opt-in helper)."""
    with asyncio.Runner(debug=debug, loop_factory=new_event_loop) as runner:
        return runner.run(main)


async def cancel_and_wait(*tasks: asyncio.Future[Any], timeout: float, what: str) -> bool:
    """Cancel ``tasks`` and wait until each ended, cancelling again those still running.

    Once is not always enough: on Python 3.11, ``asyncio.wait_for`` (which redis-py
    sends every command through when a socket timeout is set, and other libraries use
    too) drops a cancellation that arrives as the awaitable it waits for completes
    (CPython gh-86296, fixed in 3.12), and the task runs on; a bare ``await task``
    after ``task.cancel()`` then waits forever. Tasks still running after ``timeout``
    seconds are left running, with a warning naming ``what``, and False is returned;
    True when every task ended.

    The caller's own cancellation is never swallowed: it propagates at once (the tasks
    were cancelled already). How the tasks ended is neither raised nor logged (their
    exceptions count as retrieved): the caller inspects the tasks where it cares.
    """
    pending = {task for task in tasks if not task.done()}
    if pending:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while pending:
            for task in pending:
                task.cancel()
            left = deadline - loop.time()
            if left <= 0:
                names = sorted(
                    t.get_name() if isinstance(t, asyncio.Task) else repr(t) for t in pending
                )
                logger.warning("%s: %s did not stop within %g s", what, ", ".join(names), timeout)
                break
            _, pending = await asyncio.wait(pending, timeout=min(left, RECANCEL_INTERVAL))
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: asyncio logs no "exception was never retrieved"
    return not pending
