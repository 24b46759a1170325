"""A worker of a multi-process server (uvicorn --workers, gunicorn) that keeps its sessions
in its own memory warns at startup: requests reaching another worker would get 404.

The check runs in a real child process (``multiprocessing`` spawn, as uvicorn's
``--workers`` starts them), whose app goes through the ASGI lifespan startup.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from typing import Any


def _startup_warnings(kind: str) -> list[str]:
    """In the child: build an app, run its lifespan startup, return the warnings logged."""
    from mcpkit import MCPServer

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                records.append(record.getMessage())

    logging.getLogger("mcpkit").addHandler(Keep())
    server = MCPServer(name="w", version="1")
    app: Any = server.http_app(stateless=(kind == "stateless"))

    async def startup() -> None:
        events = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return events.pop(0)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app({"type": "lifespan"}, receive, send)
        assert sent[0]["type"] == "lifespan.startup.complete", sent

    asyncio.run(startup())
    return records


def _child(kind: str, out: Any) -> None:
    out.send(_startup_warnings(kind))


def run_in_worker(kind: str) -> list[str]:
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    process = ctx.Process(target=_child, args=(kind, child))
    process.start()
    try:
        assert parent.poll(60), "the worker process did not answer"
        warnings: list[str] = parent.recv()
    finally:
        process.join(10)
    return warnings


def test_a_worker_with_process_local_sessions_warns() -> None:
    warnings = run_in_worker("sessions")
    assert any("one of several workers" in w and "404" in w for w in warnings), warnings


def test_a_stateless_worker_or_a_single_process_does_not() -> None:
    assert run_in_worker("stateless") == []
    assert _startup_warnings("sessions") == []  # this process has no multiprocessing parent
