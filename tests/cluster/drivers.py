"""One face for the two clients the multi-node flow tests drive through the proxy.

``async with DRIVERS[name](cluster) as client`` opens a handshake-era (2025-11-25)
session through the round-robin proxy, with mcpkit's :class:`~mcpkit.client.Client`
(``"mcpkit"``) or the official SDK's ``ClientSession`` over its Streamable HTTP
transport (``"sdk"``). Both answer the server's requests the same way
(:data:`NAME`, :data:`SUMMARY`, :data:`ROOTS`) and record, in ``client.events``
and in arrival order, every notification they get outside a call's result:

* ``("progress", message)`` for ``notifications/progress`` of a call made with
  ``progress=True``;
* ``("log", data)`` for ``notifications/message``;
* ``("list_changed", "tools")`` and ``("updated", uri)``.

``client.arrived(kind)`` waits (bounded) for the first event of a kind.
``proxy_log(cluster)`` describes every request the proxy saw (for failure messages);
``standalone_stream(cluster)`` waits for the client's GET stream to be open.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from mcpkit.client import Client
from tests.cluster.conftest import Cluster
from tests.cluster.rr_proxy import Record
from tests.cluster.test_sessions_across_nodes import describe

HANDSHAKE = "2025-11-25"
TIMEOUT = 15.0
NAME = "Ada"
SUMMARY = "short"
ROOTS = ["file:///work/a", "file:///work/b"]
# How long a test keeps listening after a notification, to see that no copy follows.
SETTLE = 0.6


def proxy_log(cluster: Cluster) -> str:
    return "\n  ".join(
        describe(cluster, r) + (f" Last-Event-ID {r.last_event_id}" if r.last_event_id else "")
        for r in cluster.proxy.log
    )


async def standalone_stream(cluster: Cluster, start: int = 0) -> Record:
    """The GET stream the client opened (waiting for its 200) after the ``start``-th
    request, once it is the only one (a resumed standalone stream counts, a resumed
    request stream, whose Last-Event-ID names a stream other than ``/0``, does not)."""
    async with asyncio.timeout(5):
        while True:
            streams = [
                r
                for r in cluster.proxy.log[start:]
                if r.method == "GET"
                and r.status == 200
                and (r.last_event_id is None or "/0#" in r.last_event_id)
            ]
            if streams:
                assert len(streams) == 1, proxy_log(cluster)
                return streams[0]
            await asyncio.sleep(0.02)


class Driver(Protocol):
    events: list[tuple[str, Any]]

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        progress: bool = False,
        timeout: float | None = None,
    ) -> str: ...

    async def tool_names(self) -> set[str]: ...

    async def subscribe(self, uri: str) -> None: ...

    async def unsubscribe(self, uri: str) -> None: ...

    async def set_level(self, level: str) -> None: ...

    async def arrived(self, kind: str, timeout: float = 5.0) -> None: ...

    def count(self, kind: str) -> int: ...


class _Events:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self._changed = asyncio.Event()

    def add(self, kind: str, value: Any) -> None:
        self.events.append((kind, value))
        self._changed.set()

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.events if k == kind)

    async def arrived(self, kind: str, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while not self.count(kind):
                self._changed.clear()
                await self._changed.wait()


class MCPKitDriver(_Events):
    client: Client

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        progress: bool = False,
        timeout: float | None = None,
    ) -> str:
        def on_progress(done: float, total: float | None, message: str | None) -> None:
            self.add("progress", message)

        result = await self.client.call_tool(
            name, arguments, progress=on_progress if progress else None, timeout=timeout
        )
        assert not result.get("isError"), result
        return str(result["content"][0]["text"]) if result["content"] else ""

    async def tool_names(self) -> set[str]:
        return {t["name"] for t in await self.client.list_tools()}

    async def subscribe(self, uri: str) -> None:
        await self.client.subscribe_resource(uri)

    async def unsubscribe(self, uri: str) -> None:
        await self.client.unsubscribe_resource(uri)

    async def set_level(self, level: str) -> None:
        await self.client.set_logging_level(level)


class SDKDriver(_Events):
    session: ClientSession

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        progress: bool = False,
        timeout: float | None = None,
    ) -> str:
        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            self.add("progress", message)

        result = await self.session.call_tool(
            name,
            arguments,
            progress_callback=on_progress if progress else None,
            read_timeout_seconds=timeout,
        )
        assert isinstance(result, types.CallToolResult) and not result.is_error, result
        if not result.content:
            return ""
        block = result.content[0]
        assert isinstance(block, types.TextContent), result
        return block.text

    async def tool_names(self) -> set[str]:
        return {t.name for t in (await self.session.list_tools()).tools}

    async def subscribe(self, uri: str) -> None:
        await self.session.subscribe_resource(uri)

    async def unsubscribe(self, uri: str) -> None:
        await self.session.unsubscribe_resource(uri)

    async def set_level(self, level: str) -> None:
        await self.session.set_logging_level(level)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def mcpkit_driver(cluster: Cluster) -> AsyncIterator[MCPKitDriver]:
    driver = MCPKitDriver()

    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": NAME}}

    def sample(params: dict[str, Any]) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": {"type": "text", "text": SUMMARY},
            "model": "test-model",
        }

    async with Client(
        url=cluster.url,
        protocol_version=HANDSHAKE,
        supported_versions=(HANDSHAKE,),
        timeout=TIMEOUT,
        elicitation_handler=elicit,
        sampling_handler=sample,
        roots=ROOTS,
        log_handler=lambda params: driver.add("log", params.get("data")),
        on_list_changed=lambda kind: driver.add("list_changed", kind),
        on_resource_updated=lambda uri: driver.add("updated", uri),
    ) as client:
        driver.client = client
        yield driver


@contextlib.asynccontextmanager
async def sdk_driver(cluster: Cluster) -> AsyncIterator[SDKDriver]:
    driver = SDKDriver()

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": NAME})

    async def sample(
        context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SUMMARY),
            model="test-model",
        )

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in ROOTS])  # type: ignore[arg-type]

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        driver.add("log", params.data)

    async def on_message(message: Any) -> None:
        method = getattr(message, "method", None)
        if method == "notifications/tools/list_changed":
            driver.add("list_changed", "tools")
        elif method == "notifications/resources/updated":
            driver.add("updated", str(message.params.uri))

    async with (
        streamable_http_client(cluster.url) as (read, write),
        ClientSession(
            read,
            write,
            read_timeout_seconds=TIMEOUT,
            sampling_callback=sample,
            elicitation_callback=elicit,
            list_roots_callback=roots,
            logging_callback=on_log,
            message_handler=on_message,
        ) as session,
    ):
        init = await session.initialize()
        assert init.server_info.name == "cluster-node"
        driver.session = session
        yield driver


DRIVERS: dict[str, Callable[[Cluster], contextlib.AbstractAsyncContextManager[Any]]] = {
    "mcpkit": mcpkit_driver,
    "sdk": sdk_driver,
}
