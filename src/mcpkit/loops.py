"""Event loops that mcpkit creates itself: uvloop when it is installed, else asyncio's own.

mcpkit never changes the application's event loop policy. It only chooses the loop
for the loops it owns (``run_stdio``, the blocking client facade, the ``mcpkit``
commands), and offers :func:`run` to applications that opt in::

    from mcpkit.loops import run

    run(main())          # asyncio.run(main()), on uvloop when installed

Why: on uvloop a stdio round trip costs the client about two thirds of the CPU it
costs on asyncio's selector loop (``benchmarks/README.md``, the client part). ``pip
install 'mcpkit[fast]'`` installs uvloop (through ``uvicorn[standard]``; not on
Windows, which uvloop does not support).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar, cast

__all__ = ["new_event_loop", "run"]

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
