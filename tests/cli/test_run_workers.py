"""``mcpkit run --redis URL`` and ``--workers N``: real processes, a real ``redis-server``.

The workers are real ``spawn``-ed processes sharing the port the parent bound; which
one answers is the kernel's choice, so the tests ask (a tool returning ``os.getpid()``)
over fresh connections until they have seen what they need, bounded by a deadline.
Most of them initialize and call on one keep-alive connection, so that they are about
the processes; one checks that a session (in Redis) is served by both workers.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpkit import InputRoundOptions, MCPServer
from mcpkit.errors import ConfigurationError
from mcpkit.stores import MemoryInputRoundStore, MemoryStore
from tests.cli.test_run import INIT, _running, mcpkit
from tests.redis_server import RedisServer
from tests.transports.stdio_peer import FIXTURES, REPO, TIMEOUT

SERVERS = FIXTURES / "cli_workers.py"
PIDS = f"{SERVERS}:pids"
WITH_STORE = f"{SERVERS}:with_store"
HEADERS = {"Accept": "application/json, text/event-stream"}
SHARED_STATE = "mcpkit: error: several workers need shared state: give --redis URL, or --stateless"


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the block ends


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPKIT_REDIS")}
    return {**env, **extra}


# -- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [PIDS, "--redis", "redis://127.0.0.1:1/0"],
            "mcpkit: error: --redis cannot be used with --transport stdio",
        ),
        (
            [PIDS, "--workers", "2"],
            "mcpkit: error: --workers cannot be used with --transport stdio",
        ),
        (
            [PIDS, "-t", "http", "--workers", "0"],
            "mcpkit: error: --workers must be a positive integer, got 0",
        ),
        (
            [PIDS, "-t", "http", "--workers", "-3"],
            "mcpkit: error: --workers must be a positive integer, got -3",
        ),
        (
            [PIDS, "-t", "http", "--redis-prefix", "app:"],
            "mcpkit: error: --redis-prefix needs --redis URL (or MCPKIT_REDIS_URL)",
        ),
        (
            [WITH_STORE, "-t", "http", "--redis", "redis://127.0.0.1:1/0"],
            "mcpkit: error: the server already has a store; drop --redis or the store= argument",
        ),
        (
            [PIDS, "--max-requests", "5"],
            "mcpkit: error: --max-requests cannot be used with --transport stdio",
        ),
        (
            [PIDS, "-t", "http", "--max-requests", "0"],
            "mcpkit: error: --max-requests must be a positive integer, got 0",
        ),
        (
            [PIDS, "-t", "http", "--max-requests-jitter", "3"],
            "mcpkit: error: --max-requests-jitter needs --max-requests",
        ),
        (
            [PIDS, "-t", "http", "--max-requests", "5", "--max-requests-jitter", "-1"],
            "mcpkit: error: --max-requests-jitter must be 0 or more, got -1",
        ),
        (
            [PIDS, "-t", "http", "--max-memory", "0"],
            "mcpkit: error: --max-memory must be a positive number of megabytes, got 0",
        ),
        (
            [PIDS, "-t", "http", "--max-memory", "100"],
            "mcpkit: error: --max-requests and --max-memory replace worker processes, so "
            "sessions must outlive them: give --redis URL, or --stateless",
        ),
    ],
)
def test_usage_mistakes_are_one_line_with_status_2(args: list[str], message: str) -> None:
    proc = mcpkit("run", *args, env=_env())
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [message]


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_several_workers_without_shared_state_are_refused(transport: str) -> None:
    proc = mcpkit("run", PIDS, "-t", transport, "--workers", "2", "--port", "0", env=_env())
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert line.startswith(SHARED_STATE)


def test_the_redis_url_may_come_from_the_environment() -> None:
    # From the environment, the store is refused for the same reason as with the flag...
    env = _env(MCPKIT_REDIS_URL="redis://127.0.0.1:1/0")
    proc = mcpkit("run", WITH_STORE, "-t", "http", env=env)
    assert proc.returncode == 2
    assert "the server already has a store" in proc.stderr
    # ...and stdio, which shares nothing, says the variable is the problem.
    proc = mcpkit("run", PIDS, env=env)
    assert proc.returncode == 2
    assert proc.stderr.startswith("mcpkit: error: MCPKIT_REDIS_URL is set, but --transport stdio")


def test_a_missing_redis_package_names_the_extra() -> None:
    script = (
        "import sys; sys.modules['redis'] = None; from mcpkit.cli import main; "
        f"sys.exit(main(['run', {PIDS!r}, '-t', 'http', '--port', '0', "
        "'--redis', 'redis://127.0.0.1:1/0']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        env=_env(),
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "mcpkit: error: --redis needs redis, which is not installed: pip install 'mcpkit[redis]'"
    ]


@pytest.mark.parametrize("extra", [["-t", "http"], ["-t", "sse"], ["-t", "http", "--workers", "2"]])
def test_an_unreachable_redis_is_one_line_naming_it_and_status_1(extra: list[str]) -> None:
    port = _closed_port()
    url = f"redis://:hunter2@127.0.0.1:{port}/0"
    proc = mcpkit("run", PIDS, *extra, "--port", "0", "--redis", url, env=_env())
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(
        f"mcpkit: error: cannot reach Redis at redis://:***@127.0.0.1:{port}/0"
    )
    assert "hunter2" not in proc.stderr
    assert "serving" not in proc.stderr  # no banner: the server never was up


@pytest.mark.parametrize("extra", [[], ["--workers", "2", "--stateless"]])
def test_a_failing_lifespan_over_http_is_one_line_and_status_1(extra: list[str]) -> None:
    proc = mcpkit("run", f"{SERVERS}:broken_lifespan", "-t", "http", "--port", "0", *extra)
    assert proc.returncode == 1
    # The server's own log line about its lifespan may come first; then the error, once.
    assert proc.stderr.splitlines()[-1] == (
        "mcpkit: error: the lifespan of server 'broken' failed to start: RuntimeError: no database"
    )
    assert proc.stderr.count("mcpkit: error:") == 1
    assert "Traceback" not in proc.stderr and "Application startup failed" not in proc.stderr


def test_use_store_gives_the_server_every_part_of_the_store() -> None:
    server = MCPServer(name="s", version="1")
    store = MemoryStore()
    server.use_store(store)
    assert server.store is store and server.input_rounds.store is store.input_rounds
    with pytest.raises(ConfigurationError, match="already has a store"):
        server.use_store(MemoryStore())
    own = MCPServer(
        name="s", version="1", input_rounds=InputRoundOptions(store=MemoryInputRoundStore())
    )
    with pytest.raises(ConfigurationError, match="already has an input-round store"):
        own.use_store(MemoryStore())


def _redis_keys(url: str, pattern: str) -> int:
    """How many keys match ``pattern`` (RESP over a plain socket: no client library)."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(f"KEYS {pattern}\r\n".encode())
        header = sock.recv(65536).split(b"\r\n", 1)[0]
    assert header.startswith(b"*"), header
    return int(header[1:])


async def test_redis_makes_streams_resumable_with_their_events_in_redis(redis_url: str) -> None:
    args = [PIDS, "-t", "http", "--port", "0", "--redis", redis_url, "--retry-ms", "250"]
    async with _running(*args, "--redis-prefix", "resumable-test:") as proc:
        url = await _banner_url(proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            init = await client.post(url, json=INIT, headers=HEADERS)
            sid = init.headers["mcp-session-id"]
            headers = {**HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await client.post(url, json=note, headers=headers)
            listed = await client.post(
                url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
            )
        events = [e for e in listed.text.split("\n\n") if e.strip()]
        priming = dict(line.split(":", 1) for line in events[0].splitlines())
        assert "id" in priming and priming.get("retry", "").strip() == "250"
        assert any('"tools"' in e and "id:" in e for e in events[1:])
        assert _redis_keys(redis_url, f"resumable-test:events:{sid}") == 1
        assert _redis_keys(redis_url, f"resumable-test:session:{sid}") == 1


# -- several workers ----------------------------------------------------------------------------


async def _banner_url(proc: asyncio.subprocess.Process, suffix: str = "/mcp") -> str:
    assert proc.stderr is not None
    line = (await asyncio.wait_for(proc.stderr.readline(), 3 * TIMEOUT)).decode()
    prefix = "mcpkit: serving 'pids' on http://127.0.0.1:"
    assert line.startswith(prefix), line
    port = int(line[len(prefix) :].split("/")[0])
    assert port != 0
    return f"http://127.0.0.1:{port}{suffix}"


async def _pid(url: str) -> int:
    """Which worker answers a fresh connection (initialize, then a call, kept alive)."""
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        init = await client.post(url, json=INIT, headers=HEADERS)
        assert init.status_code == 200, init.text
        headers = {
            **HEADERS,
            "Mcp-Session-Id": init.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await client.post(url, json=note, headers=headers)).status_code == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "pid"}}
        answer = await client.post(url, json=call, headers=headers)
        assert answer.status_code == 200, answer.text
        return int(answer.json()["result"]["content"][0]["text"])


async def _pids_until(url: str, done: object, seconds: float = 30.0) -> list[int]:
    """Answering pids, asked over new connections until ``done(pids)`` or the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    pids: list[int] = []
    while not done(pids):  # type: ignore[operator]
        assert loop.time() < deadline, f"gave up after {len(pids)} answers: {sorted(set(pids))}"
        try:
            pids.append(await _pid(url))
        except httpx.TransportError:  # a connection to a worker that was just killed
            await asyncio.sleep(0.05)
    return pids


def _alive(pid: int) -> bool:
    # A zombie is dead too; /proc/<pid>/stat says which (state after the command name).
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


async def _gone(pids: set[int], seconds: float = TIMEOUT) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while any(_alive(pid) for pid in pids):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def test_two_workers_share_the_port_and_a_killed_one_is_restarted(redis_url: str) -> None:
    args = [PIDS, "-t", "http", "--port", "0", "--workers", "2", "--json-response"]
    async with _running(*args, "--redis", redis_url, "--redis-prefix", "workers-test:") as proc:
        url = await _banner_url(proc)
        first = set(await _pids_until(url, lambda pids: len(set(pids)) >= 2))
        assert len(first) == 2 and proc.pid not in first
        # The sessions the workers made are in Redis, under the prefix given.
        assert _redis_keys(redis_url, "workers-test:session:*") >= 2

        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        # The survivor keeps answering, and a new worker (a pid not seen before) joins it.
        after = await _pids_until(url, lambda pids: bool(set(pids) - first))
        assert victim not in after
        assert set(after) - first, after
        workers = (first - {victim}) | set(after)

        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 3 * TIMEOUT) == 0
        assert await _gone(workers), "a worker outlived its parent"
        assert proc.stderr is not None
        rest = (await proc.stderr.read()).decode()
        assert f"(pid {victim}) died unexpectedly (killed by SIGKILL)" in rest
        assert "Traceback" not in rest


async def test_stateless_workers_need_no_redis() -> None:
    args = [PIDS, "-t", "http", "--port", "0", "--workers", "2", "--stateless", "--json-response"]
    async with _running(*args) as proc:
        url = await _banner_url(proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            answer = await client.post(url, json=INIT, headers=HEADERS)
        assert answer.status_code == 200
        assert answer.json()["result"]["serverInfo"]["name"] == "pids"
        workers = _workers_of(proc.pid)
        assert len(workers) == 2
        proc.send_signal(signal.SIGINT)  # Ctrl+C: the parent stops them all, status 0
        assert await asyncio.wait_for(proc.wait(), 3 * TIMEOUT) == 0
        assert await _gone(workers)


async def test_legacy_sse_with_two_workers_and_redis(redis_url: str) -> None:
    args = [PIDS, "-t", "sse", "--port", "0", "--workers", "2", "--redis", redis_url]
    async with _running(*args) as proc:
        url = await _banner_url(proc, "/sse")
        async with (
            httpx.AsyncClient(timeout=TIMEOUT) as client,
            client.stream("GET", url) as stream,
        ):
            assert stream.status_code == 200
            lines = stream.aiter_lines()
            assert await asyncio.wait_for(anext(lines), TIMEOUT) == "event: endpoint"
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 3 * TIMEOUT) == 0


def _workers_of(parent: int) -> set[int]:
    """The worker processes of ``parent`` (its spawned children, not the resource tracker)."""
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[1]) == parent and fields[0] != "Z" and b"spawn_main" in command:
            found.add(int(entry.name))
    return found


async def _call(client: httpx.AsyncClient, url: str, name: str, **arguments: Any) -> Any:
    """A stateless tools/call (no session needed); its JSON-RPC answer."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    answer = await client.post(url, json=call, headers=HEADERS)
    assert answer.status_code == 200, answer.text
    return answer.json()


async def _stateless_pid(url: str) -> int:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:  # a new connection
        answer = await _call(client, url, "pid")
    return int(answer["result"]["content"][0]["text"])


async def test_a_crash_storm_leaves_the_service_up_with_restarts_backing_off() -> None:
    # A tool that kills its worker, called again and again: every crash is one worker lost
    # and restarted after a growing delay, and every other call is still answered.
    args = [PIDS, "-t", "http", "--port", "0", "--workers", "2", "--stateless"]
    async with _running(*args, "--json-response") as proc:
        url = await _banner_url(proc)
        answered: list[int] = []
        for _ in range(6):
            async with httpx.AsyncClient(timeout=TIMEOUT) as client:
                with pytest.raises(httpx.TransportError):  # its worker died mid-request
                    await _call(client, url, "crash")
            # The next call is answered: by the other worker, or by a restarted one (it
            # waits in the listen backlog while none is up).
            answered.append(await asyncio.wait_for(_stateless_pid(url), 3 * TIMEOUT))
        assert proc.returncode is None, "the parent gave up"
        after = {await _stateless_pid(url) for _ in range(4)}
        assert all(_alive(pid) for pid in after)
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 3 * TIMEOUT) == 0
        assert proc.stderr is not None
        rest = (await proc.stderr.read()).decode()
    deaths = [line for line in rest.splitlines() if "died unexpectedly" in line]
    assert len(deaths) == 6, rest
    assert all("(killed by SIGKILL)" in line for line in deaths), rest
    # Loud (ERROR), with the back-off: 0.5 s for a slot's first death, doubling after.
    assert "restarting it in 0.5 s" in rest and "restarting it in 1.0 s" in rest, rest
    assert "Traceback" not in rest


async def test_with_every_worker_down_the_parent_keeps_restarting_them() -> None:
    args = [PIDS, "-t", "http", "--port", "0", "--workers", "2", "--stateless"]
    async with _running(*args, "--json-response") as proc:
        url = await _banner_url(proc)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        killed: set[int] = set()
        while len(killed) < 6:  # both at once, three times: no worker left each time
            assert loop.time() < deadline, f"killed {len(killed)} workers"
            workers = _workers_of(proc.pid) - killed
            if len(workers) < 2:
                await asyncio.sleep(0.05)
                continue
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
            killed |= workers
            assert proc.returncode is None
        pid = await asyncio.wait_for(_stateless_pid(url), 3 * TIMEOUT)
        assert pid not in killed and proc.returncode is None
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 3 * TIMEOUT) == 0
        assert await _gone(killed | _workers_of(proc.pid))
        assert proc.stderr is not None
        rest = (await proc.stderr.read()).decode()
    assert "no worker is serving: connections wait in the listen backlog" in rest, rest
    assert rest.count("died unexpectedly") == 6, rest


def test_the_restart_back_off_doubles_up_to_its_cap() -> None:
    from mcpkit.transports.workers import MAX_RESTART_DELAY, RESTART_DELAY, restart_delay

    delays = [restart_delay(deaths) for deaths in range(1, 12)]
    assert delays[:4] == [RESTART_DELAY, 2 * RESTART_DELAY, 4 * RESTART_DELAY, 8 * RESTART_DELAY]
    assert max(delays) == delays[-1] == MAX_RESTART_DELAY


async def _pids_over(client: httpx.AsyncClient, url: str, calls: int) -> list[int]:
    """``calls`` tools/call of ``pid`` on one client (keep-alive, as clients do)."""
    pids = []
    for _ in range(calls):
        answer = await _call(client, url, "pid")
        pids.append(int(answer["result"]["content"][0]["text"]))
    return pids


async def test_recycling_after_max_requests_replaces_workers_and_fails_no_call() -> None:
    args = [PIDS, "-t", "http", "--port", "0", "--workers", "2", "--stateless", "--json-response"]
    recycle = ["--max-requests", "8", "--max-requests-jitter", "2"]
    async with _running(*args, *recycle) as proc:
        url = await _banner_url(proc)
        first = _workers_of(proc.pid)
        assert len(first) == 2

        async def load() -> list[int]:
            async with httpx.AsyncClient(timeout=TIMEOUT) as client:
                return await _pids_over(client, url, 12)

        # 48 calls over 4 keep-alive clients: every one answered (a failed call raises).
        results = await asyncio.wait_for(asyncio.gather(*(load() for _ in range(4))), 60)
        seen = {pid for pids in results for pid in pids}
        assert sum(map(len, results)) == 48
        assert len(seen) > 2, seen  # workers were replaced...
        assert await _gone(first), "a recycled worker is still running"  # ...and left
        assert len(_workers_of(proc.pid)) >= 2
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 3 * TIMEOUT) == 0
        assert proc.stderr is not None
        rest = (await proc.stderr.read()).decode()
    assert "died unexpectedly" not in rest and "Traceback" not in rest, rest
    recycled = [line for line in rest.splitlines() if "recycling it" in line]
    assert recycled, rest
    for line in recycled:
        limit = int(line.split("(max_requests ")[1].split(")")[0])
        assert 8 <= limit <= 10, line


async def test_a_recycled_worker_ends_its_streams_at_once(redis_url: str) -> None:
    # A GET stream never ends by itself: the draining worker closes it (with a retry hint)
    # so that its client reconnects to another process, instead of waiting out the drain.
    args = [PIDS, "-t", "http", "--port", "0", "--workers", "1", "--max-requests", "4"]
    args.append("--json-response")
    prefix = ["--redis", redis_url, "--redis-prefix", "recycle-streams:"]
    async with _running(*args, *prefix, "--graceful-timeout", "5") as proc:
        url = await _banner_url(proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            init = await client.post(url, json=INIT, headers=HEADERS)  # request 1
            headers = {
                **HEADERS,
                "Mcp-Session-Id": init.headers["mcp-session-id"],
                "MCP-Protocol-Version": "2025-11-25",
            }
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await client.post(url, json=note, headers=headers)).status_code == 202
            loop = asyncio.get_running_loop()
            async with httpx.AsyncClient(timeout=TIMEOUT) as other:
                async with other.stream("GET", url, headers=headers) as stream:  # request 3
                    assert stream.status_code == 200
                    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
                    call["params"] = {"name": "pid"}
                    answer = await client.post(url, json=call, headers=headers)  # request 4
                    assert answer.headers["connection"] == "close"  # the worker drains
                    first = int(answer.json()["result"]["content"][0]["text"])
                    drained_at = loop.time()
                    rest = await asyncio.wait_for(stream.aread(), TIMEOUT)
                    assert loop.time() - drained_at < 2.5, "the stream held the drain"
                    assert b"retry:" in rest
            # The replacement serves the same session (it lives in Redis).
            answer = await client.post(url, json={**call, "id": 3}, headers=headers)
            assert int(answer.json()["result"]["content"][0]["text"]) != first


async def test_a_worker_past_max_memory_is_replaced_after_answering() -> None:
    args = [PIDS, "-t", "http", "--port", "0", "--workers", "2", "--stateless", "--json-response"]
    async with _running(*args, "--max-memory", "150") as proc:
        url = await _banner_url(proc)
        first = _workers_of(proc.pid)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            answer = await _call(client, url, "grow", megabytes=200)
        leaky = int(answer["result"]["content"][0]["text"])  # the call itself succeeded
        assert leaky in first
        # Within a few checks (one a second) it is replaced; calls go on being answered.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while _alive(leaky) or not (_workers_of(proc.pid) - first):
            assert loop.time() < deadline, "the leaking worker was not replaced"
            await _stateless_pid(url)
            await asyncio.sleep(0.1)
        assert await _stateless_pid(url) != leaky
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 3 * TIMEOUT) == 0
        assert proc.stderr is not None
        rest = (await proc.stderr.read()).decode()
    assert f"(pid {leaky}) uses " in rest and "(max_memory 150 MB): recycling it" in rest, rest
    assert "died unexpectedly" not in rest


async def test_workers_stop_when_their_parent_is_killed() -> None:
    args = [PIDS, "-t", "http", "--port", "0", "--workers", "2", "--stateless"]
    async with _running(*args) as proc:
        await _banner_url(proc)
        workers = _workers_of(proc.pid)
        assert len(workers) == 2
        proc.kill()  # no chance to stop them: each notices its parent is gone
        await proc.wait()
        assert await _gone(workers), "a worker outlived its killed parent"


def test_serve_workers_refuses_bad_recycling_options() -> None:
    from mcpkit.transports.workers import serve_workers

    make_app = functools.partial(MCPServer, name="s", version="1")
    for options, message in [
        ({"max_requests": 0}, "max_requests must be an integer >= 1 or None, got 0"),
        ({"max_requests": True}, "max_requests must be an integer >= 1 or None, got True"),
        ({"max_requests_jitter": 5}, "max_requests_jitter needs max_requests"),
        ({"max_requests": 5, "max_requests_jitter": -1}, "max_requests_jitter must be"),
        ({"max_memory": -3}, "max_memory must be a positive number of megabytes"),
    ]:
        with pytest.raises(ConfigurationError, match=re.escape(message)):
            serve_workers(make_app, 2, port=0, **options)


def test_serve_workers_refuses_an_app_factory_that_cannot_reach_a_worker() -> None:
    from mcpkit.transports.workers import serve_workers

    with pytest.raises(ConfigurationError, match="must be picklable"):
        serve_workers(lambda: MCPServer(name="s", version="1").http_app(), 2, port=0)
    with pytest.raises(ConfigurationError, match="positive integer"):
        serve_workers(functools.partial(MCPServer, name="s", version="1"), 0, port=0)


async def test_one_session_is_served_by_both_workers(redis_url: str) -> None:
    # The session lives in Redis: calls over new connections land on either worker.
    args = [PIDS, "-t", "http", "--port", "0", "--workers", "2", "--redis", redis_url]
    async with _running(*args, "--redis-prefix", "one-session:", "--json-response") as proc:
        url = await _banner_url(proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            init = await client.post(url, json=INIT, headers=HEADERS)
            headers = {
                **HEADERS,
                "Mcp-Session-Id": init.headers["mcp-session-id"],
                "MCP-Protocol-Version": "2025-11-25",
            }
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await client.post(url, json=note, headers=headers)).status_code == 202
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        pids: set[int] = set()
        calls = 0
        while len(pids) < 2:
            assert loop.time() < deadline, f"only {pids} answered {calls} calls"
            calls += 1
            call = {
                "jsonrpc": "2.0",
                "id": calls,
                "method": "tools/call",
                "params": {"name": "pid"},
            }
            async with httpx.AsyncClient(timeout=TIMEOUT) as client:  # a new connection
                answer = await client.post(url, json=call, headers=headers)
            assert answer.status_code == 200, answer.text
            pids.add(int(answer.json()["result"]["content"][0]["text"]))
        assert proc.pid not in pids
