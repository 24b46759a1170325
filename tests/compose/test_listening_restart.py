"""A 2026-07-28 listen on a proxy survives its upstream's restart.

The upstream is an mcpkit server on a real port, stopped and started again on that
port mid-listen (the new process knows none of the old sessions): on uvicorn in this
process, and as a process of its own (``mcpkit run``). The proxy speaks either era
upstream; the client listening on it must hear the upstream's updates and list changes
again, and be told (``resources/updated``, ``list_changed``) that it may have missed some.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcpkit import Client, MCPServer
from mcpkit.compose import proxy
from mcpkit.errors import ConfigurationError
from tests.cli.test_run import _running, _until_listening
from tests.client.http_servers import free_socket, serve, unused_port
from tests.compose.test_listening import (
    HANDSHAKE,
    MODERN,
    NOTES,
    URI,
    following,
    settle,
    upstream_server,
)

CHECK = 0.1  # proxy(listen_check=...): how soon a lost upstream is noticed


@contextlib.asynccontextmanager
async def serving(server: MCPServer, port: int) -> AsyncIterator[str]:
    async with serve(server.http_app(), free_socket(port)) as url:
        yield url


async def heard_again(changed: list[str], upstream: MCPServer) -> None:
    """The upstream's list changes reach the client again (each change announced until
    one arrives: the connections hearing them reconnect in the background)."""
    changed.clear()
    async with asyncio.timeout(10):
        while "tools" not in changed:
            await upstream.tools.notify_list_changed()
            await asyncio.sleep(0.1)


@pytest.mark.parametrize("mounted", [False, True], ids=["proxy", "mounted"])
@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
async def test_a_listen_on_a_proxy_survives_the_upstream_restarting(
    era: str, mounted: bool
) -> None:
    port = unused_port()
    first, second = upstream_server(), upstream_server()
    updated: list[str] = []
    changed: list[str] = []
    server = proxy(f"http://127.0.0.1:{port}/mcp", upstream_version=era, listen_check=CHECK)
    if mounted:  # listened to on a server mounting the proxy
        parent = MCPServer(name="parent", version="1.0.0")
        parent.mount(server, namespace="x")
        server = parent
    # The client reaches the server in memory: stopping an app on uvicorn in this process
    # ends every mcpkit app's streams here (tests/client/http_servers.py), the proxy's too.
    client = Client(
        server=server,
        protocol_version=MODERN,
        on_resource_updated=updated.append,
        on_list_changed=changed.append,
    )
    try:
        async with serving(first, port):
            await client.connect()
            (uri,) = [r["uri"] for r in await client.list_resources() if r["name"] == "today"]
            assert (uri != URI) is mounted
            await client.subscribe_resource(uri)
            await settle(lambda: following(first) == [{URI}])
            await first.resources.notify_updated(URI)
            await settle(lambda: updated == [uri])
        updated.clear()
        changed.clear()
        async with serving(second, port):
            # The new upstream knows nothing of the old: the proxy subscribes again...
            await settle(lambda: following(second) == [{URI}])
            # ... and tells the client what it may have missed meanwhile: the resource
            # (read it again) and the lists it asked for (the upstream's may differ now).
            await settle(lambda: updated == [uri] and {"tools", "resources"} <= set(changed))
            updated.clear()
            await second.resources.notify_updated(URI)
            await settle(lambda: updated == [uri])
            await heard_again(changed, second)
            await client.aclose()
            # The listen ended: so did the upstream subscription and its connection.
            await settle(lambda: following(second) == [])
    finally:
        await client.aclose()


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
async def test_a_listen_for_list_changes_alone_hears_a_restarted_upstream(era: str) -> None:
    port = unused_port()
    first, second = upstream_server(), upstream_server()
    changed: list[str] = []
    server = proxy(f"http://127.0.0.1:{port}/mcp", upstream_version=era, listen_check=CHECK)
    client = Client(server=server, protocol_version=MODERN, on_list_changed=changed.append)
    try:
        async with serving(first, port):
            await client.connect()
            await heard_again(changed, first)
        changed.clear()
        async with serving(second, port):
            # No resource followed, no connection of its own: the pool hears the upstream
            # again, and the stream is told every list may have changed.
            await settle(lambda: {"tools", "resources"} <= set(changed))
            await heard_again(changed, second)
            await client.aclose()
    finally:
        await client.aclose()


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
async def test_a_listen_on_a_proxy_survives_an_upstream_process_restart(
    era: str, tmp_path: Path
) -> None:
    script = tmp_path / "notes.py"
    script.write_text(NOTES)
    port = unused_port()
    args = (str(script), "-t", "http", "--port", str(port))
    updated: list[str] = []
    server = proxy(f"http://127.0.0.1:{port}/mcp", upstream_version=era, listen_check=CHECK)
    async with serve(server.http_app()) as url:
        async with Client(
            url=url, protocol_version=MODERN, on_resource_updated=updated.append, cache=False
        ) as client:
            async with _running(*args) as proc:
                await _until_listening(port, proc)
                await client.subscribe_resource(URI)
                await client.call_tool("touch", {})  # run by the process, heard by the listen
                await settle(lambda: updated == [URI])
            updated.clear()
            async with _running(*args) as proc:
                await _until_listening(port, proc)
                await settle(lambda: updated == [URI])  # told it may have missed a change
                updated.clear()
                # Followed again on the new process: its update reaches the listener.
                await client.call_tool("touch", {})
                await settle(lambda: updated == [URI])


async def test_listen_check_must_be_a_positive_number() -> None:
    for bad in (0, -1.0, "5", True):
        with pytest.raises(ConfigurationError, match="listen_check"):
            proxy("http://127.0.0.1:9/mcp", listen_check=bad)  # type: ignore[arg-type]


# A stdio upstream: each connection is a process of its own, which records its pid and,
# once a resource is subscribed, says it was updated every tenth of a second.
TICKING = """
import asyncio
import os
import sys
from pathlib import Path

from mcpkit import MCPServer

Path(sys.argv[1], str(os.getpid())).touch()
server = MCPServer(name="ticking", version="1.0.0")
ticking = set()


@server.resource("notes://today", mime_type="text/plain")
def today() -> str:
    return "sunny"


async def tick(uri):
    while True:
        await server.resources.notify_updated(uri)
        await asyncio.sleep(0.1)


async def subscribed(ctx, call_next):
    # (a subscriptions/listen request lasts as long as its stream: ticking starts first)
    if ctx.method in ("resources/subscribe", "subscriptions/listen"):
        ticking.add(asyncio.get_running_loop().create_task(tick("notes://today")))
    return await call_next(ctx)


server.add_middleware(subscribed)

if __name__ == "__main__":
    server.run_stdio()
"""


@pytest.mark.parametrize("era", [MODERN, HANDSHAKE])
async def test_a_listen_on_a_proxy_survives_its_stdio_upstream_exiting(
    era: str, tmp_path: Path
) -> None:
    script = tmp_path / "ticking.py"
    script.write_text(TICKING)
    pids = tmp_path / "pids"
    pids.mkdir()
    target = {"command": sys.executable, "args": [str(script), str(pids)]}
    updated: list[str] = []
    server = proxy(target, upstream_version=era, listen_check=CHECK)
    async with Client(
        server=server, protocol_version=MODERN, on_resource_updated=updated.append, cache=False
    ) as client:
        await client.subscribe_resource(URI)
        await settle(lambda: len(updated) >= 2)
        # Every upstream process exits (killed): the listen's connection is gone.
        before = {int(p.name) for p in pids.iterdir()}
        for pid in before:
            os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.3)
        updated.clear()
        # A new process follows the resource again: its updates reach the listener.
        await settle(lambda: len(updated) >= 2)
        assert {int(p.name) for p in pids.iterdir()} - before
