"""mcpkit.loops: uvloop for the loops mcpkit owns, and never a change to the application's policy."""

from __future__ import annotations

import asyncio
import sys

import pytest
import uvloop

from mcpkit.client.blocking import LoopThread
from mcpkit.loops import new_event_loop, run

pytestmark = pytest.mark.uvloop


def test_new_event_loop_is_uvloop_when_installed() -> None:
    loop = new_event_loop()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def test_new_event_loop_falls_back_to_asyncio_without_uvloop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now raises ImportError
    loop = new_event_loop()
    try:
        assert not isinstance(loop, uvloop.Loop)
        assert isinstance(loop, asyncio.AbstractEventLoop)
    finally:
        loop.close()


def test_run_runs_the_coroutine_on_uvloop_and_leaves_the_policy_alone() -> None:
    policy = asyncio.get_event_loop_policy()

    async def main() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert run(main()).startswith("uvloop")
    assert asyncio.get_event_loop_policy() is policy


def test_run_propagates_the_coroutine_exception() -> None:
    async def main() -> None:
        raise LookupError("boom")

    with pytest.raises(LookupError, match="boom"):
        run(main())


def test_the_blocking_facade_owns_a_uvloop_loop() -> None:
    thread = LoopThread()
    try:
        assert isinstance(thread.loop, uvloop.Loop)
        assert thread.run(lambda: 41 + 1) == 42
    finally:
        thread.stop()
    assert thread.loop.is_closed()
