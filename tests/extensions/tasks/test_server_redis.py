"""The tasks extension on a real redis-server, two nodes in one process: tasks/get,
tasks/update and tasks/cancel served by the node that does not run the task reach the
one that does, and a listener on one node hears the moves made on the other."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from uuid import uuid4

import pytest
from redis.asyncio import Redis

from mcpkit import MCPServer
from mcpkit.errors import INVALID_PARAMS, RemoteError
from mcpkit.extensions.tasks.redis import RedisTaskStore
from mcpkit.stores.redis import RedisStore
from tests.extensions.tasks.test_notify import Stream
from tests.extensions.tasks.test_server import MODERN, Probe, asking, task_server, terminal, until

pytestmark = pytest.mark.no_schema_check


@pytest.fixture
async def nodes(redis_url: str) -> AsyncIterator[tuple[MCPServer, MCPServer, Probe]]:
    prefix = f"test-{uuid4().hex}:"
    clients = [Redis.from_url(redis_url), Redis.from_url(redis_url)]
    probe = Probe()  # only node one runs tasks in these tests
    one = task_server(probe, store=RedisTaskStore(clients[0], prefix=prefix), node_id="one")
    two = task_server(Probe(), store=RedisTaskStore(clients[1], prefix=prefix), node_id="two")
    try:
        yield one, two, probe
    finally:
        for client in clients:
            await client.aclose()


async def test_cancel_on_another_node_reaches_the_handler_and_its_listeners(
    nodes: tuple[MCPServer, MCPServer, Probe],
) -> None:
    one, two, probe = nodes
    async with asking(one, MODERN) as first, asking(two, MODERN) as second:
        task_id = (await first.call_tool("wait", {}))["taskId"]
        await asyncio.wait_for(probe.started.wait(), 5)
        assert (await second.request("tasks/get", {"taskId": task_id}))["status"] == "working"
        stream = Stream(two, [task_id])
        await stream.received(2)
        await second.request("tasks/cancel", {"taskId": task_id})
        await asyncio.wait_for(probe.cancelled.wait(), 5)
        await stream.received(3)
        assert stream.statuses() == ["working", "cancelled"]
        assert (await first.request("tasks/get", {"taskId": task_id}))["status"] == "cancelled"
        await stream.close()


async def test_an_answer_on_another_node_reaches_the_question(
    nodes: tuple[MCPServer, MCPServer, Probe],
) -> None:
    one, two, _ = nodes
    async with asking(one, MODERN) as first, asking(two, MODERN) as second:
        task_id = (await first.call_tool("asks", {}))["taskId"]
        task = await until(second, task_id, lambda t: t["status"] == "input_required")
        stream = Stream(two, [task_id])
        await stream.received(2)  # acknowledged, and the state it found: input_required
        (key,) = task["inputRequests"]
        answer = {key: {"action": "accept", "content": {"ok": True}}}
        ack = await second.request("tasks/update", {"taskId": task_id, "inputResponses": answer})
        assert ack["resultType"] == "complete"
        done = await until(second, task_id, terminal)
        assert done["result"]["content"][0]["text"] == "answered accept: True"
        await stream.received(4)
        assert stream.statuses() == ["input_required", "working", "completed"]
        await stream.close()


async def test_an_answer_sent_while_the_running_nodes_subscription_is_down_reaches_the_question(
    redis_url: str,
) -> None:
    prefix = f"test-{uuid4().hex}:"
    clients = [Redis.from_url(redis_url), Redis.from_url(redis_url)]
    # No periodic recheck within the test: the read-back on reconnection must deliver.
    one = task_server(Probe(), store=RedisTaskStore(clients[0], prefix=prefix, recheck_s=60))
    two = task_server(Probe(), store=RedisTaskStore(clients[1], prefix=prefix))
    try:
        async with asking(one, MODERN) as first, asking(two, MODERN) as second:
            task_id = (await first.call_tool("asks", {}))["taskId"]
            task = await until(second, task_id, lambda t: t["status"] == "input_required")
            (key,) = task["inputRequests"]
            # Every pub/sub connection of the server drops, node one's among them.
            await clients[1].client_kill_filter(_type="pubsub")
            answer = {key: {"action": "accept", "content": {"ok": True}}}
            await second.request("tasks/update", {"taskId": task_id, "inputResponses": answer})
            done = await until(second, task_id, terminal)
            assert done["result"]["content"][0]["text"] == "answered accept: True"
    finally:
        for redis in clients:
            await redis.aclose()


async def test_a_cancel_sent_while_the_running_nodes_subscription_is_down_stops_the_handler(
    redis_url: str,
) -> None:
    prefix = f"test-{uuid4().hex}:"
    clients = [Redis.from_url(redis_url), Redis.from_url(redis_url)]
    probe = Probe()
    one = task_server(probe, store=RedisTaskStore(clients[0], prefix=prefix, recheck_s=60))
    two = task_server(Probe(), store=RedisTaskStore(clients[1], prefix=prefix))
    try:
        async with asking(one, MODERN) as first, asking(two, MODERN) as second:
            task_id = (await first.call_tool("wait", {}))["taskId"]
            await asyncio.wait_for(probe.started.wait(), 5)
            await clients[1].client_kill_filter(_type="pubsub")
            await second.request("tasks/cancel", {"taskId": task_id})
            await asyncio.wait_for(probe.cancelled.wait(), 5)
    finally:
        for redis in clients:
            await redis.aclose()


async def test_without_a_store_the_extension_takes_the_one_beside_the_servers_redis(
    redis_url: str,
) -> None:
    probe = Probe()
    prefix = f"test-{uuid4().hex}:"
    server = task_server(probe)
    server.use_store(RedisStore(redis_url, prefix=prefix))
    async with asking(server, MODERN) as client:
        task_id = (await client.call_tool("count", {"n": 1}))["taskId"]
        await until(client, task_id, terminal)
        # The record is in Redis, where another node would read it.
        other = RedisTaskStore(Redis.from_url(redis_url), prefix=prefix)
        record = await other.get(task_id)
        assert record is not None and record.status.value == "completed"
        await other.client.aclose()
    assert server.store is not None
    await server.store.aclose()  # type: ignore[attr-defined]


async def test_a_task_past_its_ttl_is_gone_on_every_node_and_its_handler_stopped(
    redis_url: str,
) -> None:
    prefix = f"test-{uuid4().hex}:"
    clients = [Redis.from_url(redis_url), Redis.from_url(redis_url)]
    probe = Probe()
    one = task_server(probe, store=RedisTaskStore(clients[0], prefix=prefix), ttl_ms=300)
    two = task_server(Probe(), store=RedisTaskStore(clients[1], prefix=prefix), ttl_ms=300)
    try:
        async with asking(one, MODERN) as first, asking(two, MODERN) as second:
            task_id = (await first.call_tool("wait", {}))["taskId"]
            assert (await second.request("tasks/get", {"taskId": task_id}))["ttlMs"] == 300
            await asyncio.wait_for(probe.cancelled.wait(), 5)  # the TTL stopped the handler
            await asyncio.sleep(0.1)
            for client in (first, second):  # Redis expired the record: gone everywhere
                with pytest.raises(RemoteError) as info:
                    await client.request("tasks/get", {"taskId": task_id})
                assert info.value.code == INVALID_PARAMS
    finally:
        for redis in clients:
            await redis.aclose()
