"""``mcpkit worker`` and ``mcpkit run --workers N --redis URL`` with queued tasks: real
processes, a real ``redis-server`` (the run's, each test on a prefix of its own).

The worker command itself against node A in this process is in
tests/extensions/tasks/test_queue.py (tasks accepted here, run there, killed mid-task).
"""

from __future__ import annotations

import asyncio
import os
import secrets
from typing import Any

import pytest

from mcpkit import Client
from mcpkit.extensions.tasks.client import tasks_client
from tests.cli.test_run import _running, mcpkit
from tests.redis_server import RedisServer
from tests.transports.stdio_peer import FIXTURES, REPO, TIMEOUT

pytestmark = pytest.mark.no_schema_check  # the extension's results are in no core schema

APP = str(FIXTURES / "tasks_queue_app.py")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MCPKIT_REDIS")}


def test_the_worker_needs_a_redis_url() -> None:
    proc = mcpkit("worker", APP, env=_env())
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "mcpkit: error: mcpkit worker needs --redis URL (or MCPKIT_REDIS_URL): the queue's Redis"
    ]


def test_the_worker_refuses_an_app_that_queues_no_tasks(redis_server: RedisServer) -> None:
    example = str(REPO / "examples" / "tasks_server.py")  # tasks run in process there
    proc = mcpkit("worker", example, "--redis", redis_server.url, env=_env())
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == (
        "mcpkit: error: tasks-example runs no tasks through a queue: give it "
        "tasks_extension(queue=True) (or queue=TaskQueue(...))"
    )


async def _url(proc: asyncio.subprocess.Process) -> str:
    assert proc.stderr is not None
    while True:
        line = (await asyncio.wait_for(proc.stderr.readline(), 3 * TIMEOUT)).decode()
        assert line, "mcpkit run exited"
        if line.startswith("mcpkit: serving"):
            return line.split(" on ", 1)[1].split()[0]


def _text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def test_run_with_workers_and_redis_runs_tasks_in_its_worker_processes(
    redis_server: RedisServer,
) -> None:
    prefix = f"rw{secrets.token_hex(4)}:"
    args = [APP, "-t", "http", "--port", "0", "--workers", "2", "--redis", redis_server.url]
    async with _running(*args, "--redis-prefix", prefix) as proc:
        url = await _url(proc)

        def confirm(params: dict[str, Any]) -> dict[str, Any]:
            return {"action": "accept", "content": {"ok": True}}

        async with Client(
            url=url, extensions=[tasks_client()], elicitation_handler=confirm
        ) as client:
            pids = {
                _text(await asyncio.wait_for(client.call_tool("whoami", {}), 3 * TIMEOUT))
                for _ in range(3)
            }
            approved = await asyncio.wait_for(
                client.call_tool("approve", {"item": "release"}), 3 * TIMEOUT
            )
    assert str(os.getpid()) not in pids and str(proc.pid) not in pids
    assert all(pid.isdigit() for pid in pids)
    assert _text(approved).startswith("approved release in ")
