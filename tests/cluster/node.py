"""Launch one cluster node: an app on Streamable HTTP (mcpkit's embedded uvicorn) on Redis.

``python tests/cluster/node.py [FILE:OBJECT] --port P --redis URL --redis-prefix P``
loads the server (default ``tests/cluster/app.py:server``), gives it
``RedisStore(url, prefix=...)`` before its app is built (what ``mcpkit run --redis``
does, docs/design/scale-out.md § 13) and serves it on 127.0.0.1 with
``MCPServer.run_http``, which prints ``mcpkit: serving ... on http://127.0.0.1:<port>/mcp``
to stderr once it listens (the fixture waits for that line).

``--node-ttl`` goes to ``RedisStore(node_ttl=...)`` when the store takes it (the
cross-node work adds it); until then it is reported and ignored. The node exits when
its parent dies (a test run killed mid-way leaves no orphan behind).
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import threading
import time
from typing import Any

DEFAULT_TARGET = "tests/cluster/app.py:server"


def _exit_with_parent() -> None:
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="node.py", description=__doc__.splitlines()[0])
    parser.add_argument("target", nargs="?", default=DEFAULT_TARGET, metavar="FILE[:OBJECT]")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--redis", default=os.environ.get("MCPKIT_REDIS_URL"))
    parser.add_argument("--redis-prefix", default=os.environ.get("MCPKIT_REDIS_PREFIX", "mcpkit:"))
    parser.add_argument("--node-ttl", type=float, help="RedisStore(node_ttl=...), if it takes it")
    parser.add_argument("--retry-ms", type=int, default=100, help="the SSE retry hint")
    parser.add_argument("--session-idle-timeout", type=float)
    parser.add_argument("--json-response", action="store_true")
    args = parser.parse_args(argv)
    if not args.redis:
        parser.error("give --redis URL (or MCPKIT_REDIS_URL)")
    _exit_with_parent()

    from mcpkit.cli.loader import load_server
    from mcpkit.stores.redis import RedisStore

    server = load_server(args.target)
    store_options: dict[str, Any] = {}
    if args.node_ttl is not None:
        if "node_ttl" in inspect.signature(RedisStore).parameters:
            store_options["node_ttl"] = args.node_ttl
        else:
            print("node.py: RedisStore takes no node_ttl yet; --node-ttl ignored", file=sys.stderr)
    store = RedisStore(args.redis, prefix=args.redis_prefix, **store_options)
    if hasattr(server, "use_store"):  # what mcpkit run --redis calls, where it exists
        server.use_store(store)
    else:
        server.store = store
        # MCPServer(store=...) also makes it the input-round store; assigning late must too.
        server.input_rounds.store = store.input_rounds
    options: dict[str, Any] = {"retry_interval_ms": args.retry_ms}
    if args.session_idle_timeout is not None:
        options["session_idle_timeout"] = args.session_idle_timeout
    if args.json_response:
        options["json_response"] = True
    server.run_http("127.0.0.1", args.port, "/mcp", **options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
