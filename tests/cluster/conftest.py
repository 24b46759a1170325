"""Fixtures of the multi-node tests (docs/design/scale-out.md § 15.1).

``redis_server``: one real ``redis-server`` for the run (:mod:`tests.redis_server`);
each cluster keeps to a key prefix of its own (``test-<uuid>:``).

``cluster``: N node processes (default 3), each ``tests/cluster/node.py`` (or ``mcpkit
run --redis`` with ``launcher="cli"``) serving ``tests/cluster/app.py:server`` over
Streamable HTTP on a free port with ``RedisStore(url, prefix)``, and a
:class:`~tests.cluster.rr_proxy.RoundRobinProxy` in front of them, running in the test's
event loop. Options per test with the marker ``@pytest.mark.cluster(nodes=2,
node_ttl=2.0, session_idle_timeout=5.0, json_response=True, launcher="cli")``;
``start_cluster`` makes more clusters in one test. Every node process is stopped at
teardown (SIGTERM, then SIGKILL after a bounded wait); the nodes' output is printed
then, so pytest shows it under a failed test ("Captured stdout teardown").

    async def test_x(cluster: Cluster) -> None:
        async with Client(url=cluster.url, protocol_version="2025-11-25") as client:
            ...
        cluster.proxy.log        # [Record(method, path, session_id, backend, status, rpc)]
        cluster.pids[i], cluster.urls[i]   # a node's pid and http://127.0.0.1:<port>/mcp
        cluster.kill(i)          # SIGKILL; the proxy skips it from then on
        cluster.stop(i)          # SIGTERM (graceful)
        await cluster.restart(i) # same port, a new process
        await cluster.paid()     # the pay tool's charge counter
        await cluster.run_state(tag)  # guarded_wait's state: started, completed, cancelled
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

import httpx
import pytest

from tests.cluster.app import PAID_COUNT_KEY, RUN_KEY
from tests.cluster.rr_proxy import RoundRobinProxy
from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
NODE = Path(__file__).with_name("node.py")
DEFAULT_TARGET = "tests/cluster/app.py:server"
RETRY_MS = 100  # the SSE retry hint: clients reconnect after a tenth of a second
START_TIMEOUT = 15.0  # a node prints its URL within this (two shared cores, cold imports)
STOP_TIMEOUT = 3.0
# Seconds a node's liveness key lives (RedisStore(node_ttl=...)): short, so that a node
# whose connection to Redis stays open after it stopped is noticed in seconds, not the
# default 15 (a killed process is noticed at once: its connection closes).
NODE_TTL = 2.0
_BANNER = re.compile(r"mcpkit: serving .* on (http://127\.0\.0\.1:(\d+)/mcp)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "cluster(nodes=3, node_ttl=2.0, session_idle_timeout=None, json_response=False, "
        "launcher='node'): "
        "options of the cluster fixture",
    )


class Node:
    """One node process; its stdout and stderr go to ``log_path``."""

    def __init__(self, index: int, command: list[str], env: dict[str, str], log_path: Path) -> None:
        self.index = index
        self.command = command  # without --port, added at each start
        self.env = env
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0  # 0 until the first start picked one; restarts reuse it
        self.url = ""
        self._offset = 0  # where this start's output begins in the log

    @property
    def pid(self) -> int:
        assert self.process is not None, f"node {self.index} is not running"
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def spawn(self) -> None:
        assert not self.alive, f"node {self.index} is running"
        self._offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*self.command, "--port", str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env=self.env,
            )

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    async def ready(self, http: httpx.AsyncClient) -> None:
        """Wait for the banner of this start, then for an HTTP answer on the endpoint."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert self.process is not None
            text = self.log_path.read_bytes()[self._offset :].decode(errors="replace")
            found = _BANNER.search(text)
            if found:
                self.url, self.port = found.group(1), int(found.group(2))
                break
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"node {self.index} exited with {self.process.returncode} at start:\n{text}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {self.index} did not start in {START_TIMEOUT} s:\n{text}")
            await asyncio.sleep(0.02)
        while True:  # any HTTP answer will do (a bare GET is refused: no session)
            try:
                await http.get(self.url, timeout=1)
                return
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL, and reap it."""
        process = self.process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(STOP_TIMEOUT)

    def stop(self) -> None:
        """SIGTERM (graceful), SIGKILL when it takes longer than STOP_TIMEOUT."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)


class Cluster:
    """The nodes, the proxy in front of them, and the Redis they share."""

    def __init__(
        self, redis: RedisServer, prefix: str, nodes: list[Node], proxy: RoundRobinProxy
    ) -> None:
        self.redis = redis
        self.prefix = prefix
        self.nodes = nodes
        self.proxy = proxy
        self._http = httpx.AsyncClient()

    @property
    def url(self) -> str:
        """The MCP endpoint through the proxy."""
        return self.proxy.url + "/mcp"

    @property
    def urls(self) -> list[str]:
        """Each node's own MCP endpoint (bypassing the proxy)."""
        return [node.url for node in self.nodes]

    @property
    def pids(self) -> list[int]:
        return [node.pid for node in self.nodes]

    def kill(self, index: int) -> None:
        """SIGKILL node ``index`` (the proxy then skips it: connection refused)."""
        self.nodes[index].kill()

    def stop(self, index: int) -> None:
        """SIGTERM node ``index``: a graceful stop (its SSE streams end with a retry hint)."""
        self.nodes[index].stop()

    async def restart(self, index: int) -> int:
        """Start node ``index`` again on its port (killing it first if it runs); its pid."""
        node = self.nodes[index]
        node.kill()
        node.spawn()
        await node.ready(self._http)
        return node.pid

    async def _get(self, key: str) -> bytes | None:
        from redis.asyncio import Redis

        client = Redis.from_url(self.redis.url)
        try:
            value: bytes | None = await client.get(self.prefix + key)
        finally:
            await client.aclose()
        return value

    async def paid(self) -> int:
        """How many charges the ``pay`` tool made (its Redis counter), 0 before any."""
        return int(await self._get(PAID_COUNT_KEY) or 0)

    async def run_state(self, tag: str) -> str | None:
        """``guarded_wait(tag)``'s state: None, "started", "completed" or "cancelled"."""
        value = await self._get(RUN_KEY + tag)
        return value.decode() if value is not None else None

    def logs(self) -> str:
        """Every node's output, for failure messages."""
        return "\n".join(
            f"--- node {n.index} (pid {n.process.pid if n.process else None}, {n.url}) ---\n"
            + n.log_text()
            for n in self.nodes
        )

    async def aclose(self) -> None:
        await self.proxy.aclose()
        running = [n.process for n in self.nodes if n.process is not None and n.alive]
        for process in running:  # all at once, so they stop in parallel
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for process in running:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT)
        await self._http.aclose()


async def start_nodes(
    redis: RedisServer,
    directory: Path,
    *,
    nodes: int = 3,
    node_ttl: float | None = NODE_TTL,
    session_idle_timeout: float | None = None,
    json_response: bool = False,
    target: str = DEFAULT_TARGET,
    launcher: str | None = None,
) -> Cluster:
    """Start ``nodes`` node processes on one new prefix, and the proxy; see the module.

    ``launcher``: ``"node"`` (tests/cluster/node.py, the default) or ``"cli"`` (``python -m
    mcpkit run ... --redis``, once it exists; it takes no node_ttl nor idle timeout, so
    those are not passed); env ``MCPKIT_CLUSTER_LAUNCHER`` sets the default.
    """
    prefix = f"test-{uuid4().hex}:"
    env = {**os.environ, "MCPKIT_REDIS_URL": redis.url, "MCPKIT_REDIS_PREFIX": prefix}
    launcher = launcher or os.environ.get("MCPKIT_CLUSTER_LAUNCHER", "node")
    shared = ["--redis", redis.url, "--redis-prefix", prefix, "--retry-ms", str(RETRY_MS)]
    if json_response:
        shared.append("--json-response")
    if launcher == "cli":
        if session_idle_timeout is not None:
            raise ValueError("mcpkit run has no session idle timeout option: use the node launcher")
        command = [sys.executable, "-m", "mcpkit", "run", target, "--transport", "http", *shared]
    elif launcher == "node":
        command = [sys.executable, str(NODE), target, *shared]
        if node_ttl is not None:
            command += ["--node-ttl", str(node_ttl)]
        if session_idle_timeout is not None:
            command += ["--session-idle-timeout", str(session_idle_timeout)]
    else:
        raise ValueError(f"launcher is 'node' or 'cli', not {launcher!r}")
    started = [
        Node(i, command, env, directory / f"node-{prefix[5:13]}-{i}.log") for i in range(nodes)
    ]
    proxy = RoundRobinProxy(["http://127.0.0.1:1"] * nodes)  # set once the ports are known
    cluster = Cluster(redis, prefix, started, proxy)
    try:
        for node in started:  # all spawned before any is awaited: they start in parallel
            node.spawn()
        await asyncio.gather(*(node.ready(cluster._http) for node in started))
        for node in started:
            proxy.set_backend(node.index, node.url)
        await proxy.start()
    except BaseException:
        await cluster.aclose()
        raise
    return cluster


@pytest.fixture
async def start_cluster(
    redis_server: RedisServer, tmp_path: Path
) -> AsyncIterator[Callable[..., Awaitable[Cluster]]]:
    """``cluster = await start_cluster(nodes=2, ...)``: each is stopped after the test."""
    made: list[Cluster] = []

    async def start(**options: Any) -> Cluster:
        made.append(await start_nodes(redis_server, tmp_path, **options))
        return made[-1]

    try:
        yield start
    finally:
        for cluster in made:
            with contextlib.suppress(Exception):
                await cluster.aclose()
            print(cluster.logs())  # captured: shown when the test failed


@pytest.fixture
async def cluster(
    request: pytest.FixtureRequest, start_cluster: Callable[..., Awaitable[Cluster]]
) -> Cluster:
    marker = request.node.get_closest_marker("cluster")
    return await start_cluster(**(marker.kwargs if marker else {}))
