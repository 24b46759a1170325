"""What an idle cluster node costs Redis: commands per second, by ``node_ttl``.

    python benchmarks/redis_idle_cost.py [--seconds S] [--ttls 15,3]

For each ``node_ttl`` (``default`` for the store's own), one node process
(``tests/cluster/node.py`` serving ``tests/cluster/app.py:server`` on a
``RedisStore``) is started against a ``redis-server`` of this script's own
(no persistence, ``tests/redis_server.py``); one session is opened so that the
node has joined the bus, then ``CONFIG RESETSTAT``, ``S`` seconds without
traffic (default 30), and ``INFO commandstats``: the calls of every command
but ``INFO`` and ``CONFIG``, per second, and per command. What it counts is the
node's liveness: the heartbeat ``SET`` and the idle pub/sub connection's
``PING``, both every ``node_ttl / 3`` (at most 5 s).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.redis_server import RedisServer  # noqa: E402 (after the path is set)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "idle", "version": "1"},
    },
}


def measure(ttl: str, seconds: float) -> tuple[float, dict[str, int]]:
    """Commands per second of one idle node, and the count of each command."""
    with tempfile.TemporaryDirectory() as directory:
        server = RedisServer(Path(directory))
        server.start()
        node = None
        try:
            command = [sys.executable, str(ROOT / "tests/cluster/node.py"), "--redis", server.url]
            command += ["--redis-prefix", "idle:", "--port", "0"]
            if ttl != "default":
                command += ["--node-ttl", ttl]
            node = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE)
            assert node.stderr is not None
            deadline = time.monotonic() + 30
            found = None
            while found is None and time.monotonic() < deadline:
                found = re.search(rb"serving .* on (http://\S+)", node.stderr.readline())
            if found is None:
                raise RuntimeError("the node did not start")
            url = found.group(1).decode()
            accept = {"Accept": "application/json, text/event-stream"}
            httpx.post(url, json=INITIALIZE, headers=accept, timeout=10).raise_for_status()
            time.sleep(2)  # the bus has started and beaten once
            client = redis.Redis.from_url(server.url)
            client.config_resetstat()
            time.sleep(seconds)
            counts = {
                name.removeprefix("cmdstat_"): int(stats["calls"])
                for name, stats in client.info("commandstats").items()
                if not name.startswith(("cmdstat_info", "cmdstat_config"))
            }
            client.close()
            return sum(counts.values()) / seconds, counts
        finally:
            if node is not None:
                node.terminate()
                node.wait(10)
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--ttls", default="default,3", help="node_ttl values ('default': 15 s)")
    opts = parser.parse_args()
    for ttl in opts.ttls.split(","):
        rate, counts = measure(ttl.strip(), opts.seconds)
        print(f"node_ttl={ttl}: {rate:.2f} commands/s per idle node {counts}")


if __name__ == "__main__":
    main()
