"""Tasks through the job queue (:mod:`mcpkit.extensions.tasks.queue`): a real
``redis-server``, real ``mcpkit worker`` processes.

Node A is a server in this process that accepts tasks and runs none
(``TaskQueue(consume=False)``); the tasks run in ``mcpkit worker`` subprocesses of
``tests/fixtures/tasks_queue_app.py`` on the same Redis and prefix. Each test has a
prefix of its own, so queues and records never mix.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from mcpkit import Client, MCPServer
from mcpkit.errors import INTERNAL_ERROR, ConfigurationError, RemoteError
from mcpkit.extensions.tasks import tasks_extension
from mcpkit.extensions.tasks.client import TaskHandle, call_tool_task, tasks_client
from mcpkit.extensions.tasks.queue import TaskQueue
from mcpkit.extensions.tasks.states import TaskStatus
from mcpkit.stores.redis import RedisStore
from tests.fixtures.tasks_queue_app import make
from tests.redis_server import RedisServer
from tests.transports.stdio_peer import FIXTURES, REPO

pytestmark = pytest.mark.no_schema_check  # the extension's results are in no core schema

APP = str(FIXTURES / "tasks_queue_app.py")
ERAS = ["2026-07-28", "2025-11-25"]
DEADLINE = 20.0


@pytest.fixture
def prefix() -> str:
    return f"tq{secrets.token_hex(4)}:"


@pytest.fixture
def node_a(redis_server: RedisServer, prefix: str) -> Iterator[MCPServer]:
    server = make(consume=False)
    store = RedisStore(redis_server.url, prefix=prefix)
    server.use_store(store)
    yield server


class Workers:
    """``mcpkit worker`` subprocesses on the test's Redis and prefix."""

    def __init__(self, url: str, prefix: str) -> None:
        self.url = url
        self.prefix = prefix
        self.procs: list[asyncio.subprocess.Process] = []

    async def start(self, *, queue_url: str | None = None) -> asyncio.subprocess.Process:
        env = {**os.environ, "TASKS_QUEUE_REDELIVERY_S": "1"}
        if queue_url is not None:
            env["TASKS_QUEUE_URL"] = queue_url
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mcpkit",
            "worker",
            APP,
            "--redis",
            self.url,
            "--redis-prefix",
            self.prefix,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(REPO),
            env=env,
        )
        self.procs.append(proc)
        assert proc.stderr is not None
        line = await asyncio.wait_for(proc.stderr.readline(), DEADLINE)
        assert b"mcpkit worker: running the queued tasks of tasks-queue-app" in line, line
        return proc

    async def stop_all(self) -> None:
        for proc in self.procs:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()


@pytest.fixture
async def workers(redis_server: RedisServer, prefix: str) -> AsyncIterator[Workers]:
    pool = Workers(redis_server.url, prefix)
    try:
        yield pool
    finally:
        await pool.stop_all()


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def _until(path_glob: tuple[Path, str], count: int = 1) -> list[Path]:
    folder, pattern = path_glob
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE
    while loop.time() < deadline:
        found = sorted(folder.glob(pattern))
        if len(found) >= count:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {pattern} in {folder} within {DEADLINE} s")


@pytest.mark.parametrize("era", ERAS)
async def test_a_task_accepted_by_one_node_runs_on_a_worker_process(
    node_a: MCPServer, workers: Workers, era: str
) -> None:
    worker = await workers.start()
    statuses: list[str | None] = []
    async with Client(
        server=node_a,
        protocol_version=era,
        extensions=[tasks_client(on_status=lambda s: statuses.append(s.status_message))],
    ) as client:
        result = await asyncio.wait_for(client.call_tool("whoami", {}), DEADLINE)
    assert text(result) == str(worker.pid) != str(os.getpid())
    # ctx.progress on the worker became the task's status message.
    assert f"running in {worker.pid}" in statuses


@pytest.mark.parametrize("era", ERAS)
async def test_elicitation_in_a_queued_task_is_answered_through_tasks_update(
    node_a: MCPServer, workers: Workers, era: str
) -> None:
    worker = await workers.start()
    asked: list[dict[str, Any]] = []

    def confirm(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {"ok": True}}

    async with Client(
        server=node_a,
        protocol_version=era,
        extensions=[tasks_client()],
        elicitation_handler=confirm,
    ) as client:
        result = await asyncio.wait_for(client.call_tool("approve", {"item": "q3"}), DEADLINE)
    assert text(result) == f"approved q3 in {worker.pid}"
    assert [p["message"] for p in asked] == ["Approve q3?"]


async def _killed_mid_task(
    node_a: MCPServer, workers: Workers, tmp_path: Path, tool: str, how: str = "kill"
) -> tuple[TaskHandle, asyncio.subprocess.Process, dict[str, Any] | RemoteError]:
    first = await workers.start()
    marker = tmp_path / "m"
    async with Client(
        server=node_a, protocol_version="2026-07-28", extensions=[tasks_client()]
    ) as client:
        handle = await call_tool_task(client, tool, {"marker": str(marker)})
        assert isinstance(handle, TaskHandle)
        await _until((tmp_path, f"m.{first.pid}.1.started"))
        if how == "kill":
            first.kill()  # SIGKILL mid-task: no chance to hand the job back
        else:
            first.send_signal(signal.SIGTERM)  # a rolling restart: stopped under the task
        await asyncio.wait_for(first.wait(), DEADLINE)
        second = await workers.start()
        (tmp_path / "m.go").touch()
        try:
            outcome: dict[str, Any] | RemoteError = await asyncio.wait_for(
                handle.result(), DEADLINE
            )
        except RemoteError as exc:
            outcome = exc
    return handle, second, outcome


@pytest.mark.parametrize("how", ["kill", "term"])
async def test_an_idempotent_tool_is_run_again_when_its_worker_is_killed(
    node_a: MCPServer, workers: Workers, tmp_path: Path, how: str
) -> None:
    _, second, outcome = await _killed_mid_task(node_a, workers, tmp_path, "hold_again", how)
    assert isinstance(outcome, dict)
    assert text(outcome) == str(second.pid)
    assert (tmp_path / f"m.{second.pid}.2.started").exists()


@pytest.mark.parametrize("how", ["kill", "term"])
async def test_a_tool_not_declared_idempotent_fails_when_its_worker_is_killed(
    node_a: MCPServer, workers: Workers, tmp_path: Path, how: str
) -> None:
    _, _, outcome = await _killed_mid_task(node_a, workers, tmp_path, "hold", how)
    assert isinstance(outcome, RemoteError)
    assert outcome.code == INTERNAL_ERROR
    assert "not declared idempotent" in str(outcome) and "'hold'" in str(outcome)
    assert not list(tmp_path.glob("m.*.2.started"))  # never run a second time


async def test_cancel_on_the_accepting_node_reaches_the_handler_on_the_worker(
    node_a: MCPServer, workers: Workers, tmp_path: Path
) -> None:
    worker = await workers.start()
    marker = tmp_path / "m"
    async with Client(
        server=node_a, protocol_version="2026-07-28", extensions=[tasks_client()]
    ) as client:
        handle = await call_tool_task(client, "hold", {"marker": str(marker)})
        assert isinstance(handle, TaskHandle)
        await _until((tmp_path, f"m.{worker.pid}.1.started"))
        await handle.cancel()
        state = await handle.get()
        assert state.status is TaskStatus.CANCELLED
    # The worker stays up and takes the next task: the cancelled handler ended.
    async with Client(
        server=node_a, protocol_version="2026-07-28", extensions=[tasks_client()]
    ) as client:
        result = await asyncio.wait_for(client.call_tool("whoami", {}), DEADLINE)
    assert text(result) == str(worker.pid)


async def test_a_queue_needs_a_shared_task_store() -> None:
    server = MCPServer(name="q", version="1")

    @server.tool
    def f() -> str:
        return "x"

    server.add_extension(
        tasks_extension(tools={"f": "required"}, queue=TaskQueue(url="redis://127.0.0.1:1/0"))
    )
    with pytest.raises(Exception, match="needs a shared task store"):
        async with server.lifespan_context():
            pass


def test_a_tool_is_idempotent_by_its_annotation_or_by_the_queues_option() -> None:
    server = make(consume=False)
    plain, named = TaskQueue(), TaskQueue(idempotent={"hold"})
    assert plain.is_idempotent(server, "hold_again")  # ToolAnnotations(idempotent_hint=True)
    assert not plain.is_idempotent(server, "hold")
    assert named.is_idempotent(server, "hold")
    assert not named.is_idempotent(server, "unknown")


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"concurrency": 0}, "concurrency must be a positive integer"),
        ({"max_attempts": 0}, "max_attempts must be a positive integer"),
        ({"redelivery_s": 0}, "redelivery_s must be positive"),
        ({"idempotent": "hold"}, "idempotent must be a collection of tool names"),
    ],
)
def test_bad_queue_options_are_refused_with_their_name(
    options: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        TaskQueue(**options)


async def test_without_a_store_the_servers_redis_store_keeps_the_records(
    redis_server: RedisServer, prefix: str
) -> None:
    def node() -> MCPServer:
        server = MCPServer(name="in-process", version="1")

        @server.tool
        async def slow() -> str:
            await asyncio.sleep(0.2)
            return "done"

        server.use_store(RedisStore(redis_server.url, prefix=prefix))
        server.add_extension(tasks_extension(tools={"slow": "required"}, poll_interval_ms=50))
        return server

    era = "2026-07-28"  # no session: the id alone is the bearer, on any node
    async with (
        Client(server=node(), protocol_version=era, extensions=[tasks_client()]) as on_a,
        Client(server=node(), protocol_version=era, extensions=[tasks_client()]) as on_b,
    ):
        handle = await call_tool_task(on_a, "slow", {})
        assert isinstance(handle, TaskHandle)
        # Node B never saw the task: it reads the record node A wrote to the shared Redis.
        result = await asyncio.wait_for(TaskHandle(on_b, handle.task_id).result(), DEADLINE)
    assert text(result) == "done"


class Relay:
    """A TCP relay to Redis that drops the connection carrying a reply with ``marker`` in
    it, instead of passing that reply on (once): the worker's connection dropped right
    after Redis handed it an answer, which never reaches the worker."""

    def __init__(self, port: int, marker: bytes) -> None:
        self.port = port
        self.marker = marker
        self.dropped = False
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Relay:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"redis://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/0"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, watch: bool) -> None:
            try:
                while data := await src.read(65536):
                    if watch and not self.dropped and self.marker in data:
                        self.dropped = True
                        writer.transport.abort()
                        up_writer.transport.abort()
                        return
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            dst.close()

        await asyncio.gather(pipe(reader, up_writer, False), pipe(up_reader, writer, True))


async def test_an_answer_taken_as_the_workers_connection_drops_is_not_lost(
    node_a: MCPServer, workers: Workers, redis_server: RedisServer
) -> None:
    # The answer as tasks/update pushes it: the reply that hands it to the worker.
    async with Relay(redis_server.port, b'"action":"accept"') as relay:
        worker = await workers.start(queue_url=relay.url)
        async with Client(
            server=node_a,
            protocol_version="2026-07-28",
            extensions=[tasks_client()],
            elicitation_handler=lambda p: {"action": "accept", "content": {"ok": True}},
        ) as client:
            result = await asyncio.wait_for(client.call_tool("approve", {"item": "q4"}), DEADLINE)
        assert relay.dropped  # the handover was cut, and the answer still arrived
        assert text(result) == f"approved q4 in {worker.pid}"
        await workers.stop_all()


async def test_a_cancel_whose_signal_the_worker_missed_still_reaches_the_handler(
    node_a: MCPServer, workers: Workers, tmp_path: Path, redis_server: RedisServer
) -> None:
    worker = await workers.start()
    marker = tmp_path / "m"
    async with Client(
        server=node_a, protocol_version="2026-07-28", extensions=[tasks_client()]
    ) as client:
        handle = await call_tool_task(client, "hold", {"marker": str(marker)})
        assert isinstance(handle, TaskHandle)
        await _until((tmp_path, f"m.{worker.pid}.1.started"))
        # The worker's pub/sub connection (pydocket's cancellation listener) dropped: it
        # reconnects a second later, and the cancel is published meanwhile, to nobody.
        redis = Redis.from_url(redis_server.url)
        try:
            listeners = [
                line.split()[0].split("=")[1]
                for line in (await redis.execute_command("CLIENT", "LIST")).decode().splitlines()
                if " psub=1 " in f" {line} "
            ]
            assert listeners
            for client_id in listeners:
                await redis.execute_command("CLIENT", "KILL", "ID", client_id)
        finally:
            await redis.aclose()
        await handle.cancel()
        assert (await handle.get()).status is TaskStatus.CANCELLED
        # The handler itself saw the cancellation (it would otherwise wait for m.go).
        await _until((tmp_path, f"m.{worker.pid}.cancelled"))
    async with Client(
        server=node_a, protocol_version="2026-07-28", extensions=[tasks_client()]
    ) as client:
        result = await asyncio.wait_for(client.call_tool("whoami", {}), DEADLINE)
    assert text(result) == str(worker.pid)  # the worker goes on
