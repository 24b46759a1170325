"""The tasks extension's stop ends its handlers even where a cancellation is lost (Python
3.11's ``asyncio.wait_for``, CPython gh-86296): bounded, and the task is still failed."""

from __future__ import annotations

import asyncio

import pytest

from mcpkit import MCPServer
from mcpkit.errors import INTERNAL_ERROR
from mcpkit.extensions.tasks.server import tasks_extension
from mcpkit.extensions.tasks.store import MemoryTaskStore
from mcpkit.testing import connect
from tests.extensions.tasks.test_server import DECLARED, MODERN

pytestmark = pytest.mark.no_schema_check


async def test_a_stopping_server_ends_a_handler_that_lost_its_cancellation() -> None:
    started = asyncio.Event()
    lost: list[int] = []
    server = MCPServer(name="tasks", version="1")

    @server.tool
    async def stubborn() -> str:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            lost.append(1)  # dropped, as 3.11's wait_for can: the handler runs on
        await asyncio.sleep(3600)
        return "never"

    store = MemoryTaskStore()
    server.add_extension(tasks_extension(tools={"stubborn": "required"}, store=store))
    client = connect(server, protocol_version=MODERN, initialize=False, capabilities=DECLARED)
    await client.__aenter__()
    task_id = (await client.call_tool("stubborn", {}))["taskId"]
    await asyncio.wait_for(started.wait(), 2)
    closing = asyncio.ensure_future(client.__aexit__(None, None, None))
    done, _ = await asyncio.wait({closing}, timeout=5.0)
    if not done:
        closing.cancel()
        raise AssertionError("the server's stop waits forever on a lost cancellation")
    closing.result()
    assert lost == [1]
    record = await store.get(task_id)
    assert record is not None and record.status == "failed"
    assert record.error is not None and record.error["code"] == INTERNAL_ERROR
