"""The server's live sessions and broadcasts: the hooks a transport or a cluster node uses."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcpkit import InputRoundOptions, MCPServer
from mcpkit.testing import connect


def make_server(**options: Any) -> MCPServer:
    server = MCPServer(name="live", version="1.0.0", **options)

    @server.resource("test://a")
    def a() -> str:
        return "a"

    return server


class Fanout:
    """Stands in for a cluster node's bus: records what would go to the other nodes."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


def test_add_session_and_discard_session_make_a_session_live_and_not() -> None:
    server = make_server()
    session = server.create_session(session_id="s1")
    assert server.sessions() == []
    server.add_session(session)
    assert server.sessions() == [session]
    server.discard_session(session)
    assert server.sessions() == []
    server.discard_session(session)  # twice: nothing to do


async def test_broadcast_reaches_the_sessions_delivered_here_and_the_fanout() -> None:
    server = make_server()
    fanout = Fanout()
    async with connect(server) as here, connect(server) as elsewhere:
        elsewhere.session.broadcast_here = False  # another node holds its GET stream
        await server.broadcast("notifications/tools/list_changed")
        assert [n["method"] for n in here.notifications] == ["notifications/tools/list_changed"]
        assert elsewhere.notifications == []
        assert fanout.sent == []  # no cluster: nothing leaves the process

        server.connect_fanout(fanout)
        await server.broadcast("notifications/prompts/list_changed", {"x": 1})
        assert fanout.sent == [{"k": "b", "m": "notifications/prompts/list_changed", "p": {"x": 1}}]
        assert len(here.notifications) == 2 and elsewhere.notifications == []


async def test_deliver_broadcast_stays_in_the_process() -> None:
    server = make_server()
    fanout = Fanout()
    server.connect_fanout(fanout)
    async with connect(server) as client:
        await server.deliver_broadcast("notifications/tools/list_changed", None)
        assert [n["method"] for n in client.notifications] == ["notifications/tools/list_changed"]
    assert fanout.sent == []  # another node's broadcast is not sent on again


async def test_broadcast_listeners_hear_broadcasts_raised_here_after_the_sessions() -> None:
    server = make_server()
    other = make_server()
    heard: list[tuple[str, Any, int]] = []
    async with connect(server) as client:

        async def listener(method: str, params: dict[str, Any] | None) -> None:
            heard.append((method, params, len(client.notifications)))

        server.add_broadcast_listener(listener)
        await server.tools.notify_list_changed()
        await server.broadcast("notifications/prompts/list_changed", {"x": 1})
        await server.deliver_broadcast("notifications/resources/list_changed", None)
        await other.broadcast("notifications/tools/list_changed")
    assert heard == [
        ("notifications/tools/list_changed", None, 1),  # after it reached the session
        ("notifications/prompts/list_changed", {"x": 1}, 2),
    ]  # not another node's broadcast delivered here, nor another server's


async def test_disconnect_fanout_leaves_a_fanout_connected_since_in_place() -> None:
    server = make_server()
    first, second = Fanout(), Fanout()
    server.connect_fanout(first)
    server.connect_fanout(second)
    server.disconnect_fanout(first)  # an old node closing after a new one joined
    await server.fan_out({"k": "x"})
    assert first.sent == [] and second.sent == [{"k": "x"}]
    server.disconnect_fanout(second)
    await server.fan_out({"k": "y"})
    assert second.sent == [{"k": "x"}]


async def test_resource_updates_go_to_subscribers_here_and_to_the_fanout() -> None:
    server = make_server()
    fanout = Fanout()
    server.connect_fanout(fanout)
    async with connect(server) as subscriber, connect(server) as other:
        await subscriber.request("resources/subscribe", {"uri": "test://a"})
        await server.resources.notify_updated("test://a")
        updates = [n for n in subscriber.notifications if n["method"].endswith("updated")]
        assert [u["params"] for u in updates] == [{"uri": "test://a"}]
        assert other.notifications == []
        assert fanout.sent == [{"k": "u", "uri": "test://a"}]

        await server.resources.deliver_updated("test://a")  # another node's update
        updates = [n for n in subscriber.notifications if n["method"].endswith("updated")]
        assert len(updates) == 2
        assert fanout.sent == [{"k": "u", "uri": "test://a"}]


def test_uses_default_request_state_keys_says_whether_keys_were_given() -> None:
    assert make_server().uses_default_request_state_keys is True
    given = make_server(input_rounds=InputRoundOptions(request_state_keys=[b"k" * 32]))
    assert given.uses_default_request_state_keys is False


def test_roots_changed_callbacks_are_the_registered_ones_in_order() -> None:
    server = make_server()

    def one(session: Any) -> None: ...
    def two(session: Any) -> None: ...

    server.on_roots_changed(one)
    server.on_roots_changed(two)
    assert server.roots_changed_callbacks == (one, two)


async def test_enter_and_exit_lifespan_run_it_shared_with_lifespan_context() -> None:
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[dict[str, int]]:
        events.append("start")
        yield {"pool": 1}
        events.append("stop")

    server = make_server(lifespan=lifespan)
    await server.enter_lifespan()
    assert server.lifespan_state == {"pool": 1}
    async with server.lifespan_context() as state:  # shared: not entered again
        assert state == {"pool": 1}
    assert events == ["start"]
    await server.exit_lifespan()
    assert events == ["start", "stop"]


def test_initialize_result_names_the_revision_and_the_server() -> None:
    server = make_server(instructions="use a")
    revision = server.create_session().revision
    result = server.initialize_result(revision)
    assert result["protocolVersion"] == revision.name
    assert result["serverInfo"]["name"] == "live"
    assert result["instructions"] == "use a"
    assert result["capabilities"] == server.capabilities(revision)
