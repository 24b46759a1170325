"""The session: lifecycle, version negotiation, batches, error codes, robustness."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import MCPServer, ResourceNotFound
from mcpkit.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RESOURCE_NOT_FOUND,
    ConnectionClosed,
    RemoteError,
)
from mcpkit.protocol.lifecycle import State
from mcpkit.testing import connect
from tests.schema import unchecked_client_traffic

HANDSHAKE = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def make_server(**options: Any) -> MCPServer:
    server = MCPServer(name="session-test", version="1.0.0", **options)

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.resource("test://static", mime_type="text/plain")
    def static() -> str:
        return "static text"

    @server.resource("test://broken")
    def broken() -> str:
        raise RuntimeError("database password is hunter2")

    return server


def init_msg(rid: Any = 1, version: str = "2025-11-25", **params: Any) -> dict[str, Any]:
    body = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
        **params,
    }
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": body}


def req(rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


# -- lifecycle ---------------------------------------------------------------------------------


async def test_requests_before_initialize_are_rejected_with_32600() -> None:
    async with connect(make_server(), initialize=False) as client:
        for i, method in enumerate(["tools/list", "tools/call", "resources/list", "x/unknown"]):
            out = await client.send_raw(req(i + 10, method, {}))
            assert out["id"] == i + 10
            assert out["error"]["code"] == INVALID_REQUEST
            assert "before initialization" in out["error"]["message"]
        assert client.session.state is State.NEW


async def test_ping_is_allowed_before_initialize() -> None:
    async with connect(make_server(), initialize=False) as client:
        assert await client.send_raw(req(1, "ping")) == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_initialize_then_initialized_reaches_ready() -> None:
    async with connect(make_server(), initialize=False) as client:
        session = client.session
        out = await client.send_raw(init_msg())
        assert out["result"]["protocolVersion"] == "2025-11-25"
        assert session.state is State.INITIALIZING
        # Requests pipelined before `initialized` are served.
        listed = await client.send_raw(req(2, "tools/list"))
        assert listed["result"]["tools"][0]["name"] == "add"
        await client.send_raw(INITIALIZED)
        assert session.state is State.READY


async def test_second_initialize_is_rejected_and_keeps_the_first_revision() -> None:
    async with connect(make_server(), protocol_version="2025-06-18") as client:
        out = await client.send_raw(init_msg(99, "2024-11-05"))
        assert out["id"] == 99
        assert out["error"]["code"] == INVALID_REQUEST
        assert "already initialized" in out["error"]["message"]
        assert client.session.revision.name == "2025-06-18"


async def test_second_initialize_is_rejected_before_initialized_arrives() -> None:
    async with connect(make_server(), initialize=False) as client:
        assert "result" in await client.send_raw(init_msg(1))
        out = await client.send_raw(init_msg(2))
        assert out["error"]["code"] == INVALID_REQUEST


async def test_concurrent_initialize_requests_only_one_wins() -> None:
    async with connect(make_server(), initialize=False) as client:
        outs = await asyncio.gather(*(client.send_raw(init_msg(i)) for i in range(5)))
        assert sum("result" in o for o in outs) == 1
        assert all(o["error"]["code"] == INVALID_REQUEST for o in outs if "error" in o)


@pytest.mark.parametrize("version", HANDSHAKE)
async def test_supported_version_is_echoed(version: str) -> None:
    async with connect(make_server(), protocol_version=version) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["protocolVersion"] == version
        assert client.session.revision.name == version


@pytest.mark.parametrize("version", ["1999-01-01", "2026-07-28", "draft"])
async def test_unsupported_version_is_answered_with_the_latest(version: str) -> None:
    async with connect(make_server(), protocol_version=version) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["protocolVersion"] == "2025-11-25"
        assert client.session.revision.name == "2025-11-25"


async def test_initialize_result_shape() -> None:
    server = make_server(instructions="Use add for sums.")
    async with connect(server, client_info={"name": "cli", "version": "9"}) as client:
        result = client.initialize_result
        assert result is not None
        assert result["serverInfo"] == {"name": "session-test", "version": "1.0.0"}
        assert result["instructions"] == "Use add for sums."
        assert result["capabilities"]["tools"] == {"listChanged": True}
        assert result["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
        assert client.session.client_info == {"name": "cli", "version": "9"}


async def test_bad_initialize_params_are_32602_and_the_handshake_can_be_retried() -> None:
    async with connect(make_server(), initialize=False) as client:
        out = await client.send_raw(init_msg(1, capabilities="all"))
        assert out["error"]["code"] == INVALID_PARAMS
        assert client.session.state is State.NEW
        assert "result" in await client.send_raw(init_msg(2))


async def test_client_capabilities_are_recorded() -> None:
    caps = {"sampling": {}, "roots": {"listChanged": True}}
    async with connect(make_server(), capabilities=caps) as client:
        assert client.session.client_capabilities == caps


async def test_closed_session_refuses_requests() -> None:
    async with connect(make_server()) as client:
        client.session.close()
        assert client.session.state is State.CLOSED
        out = await client.send_raw(req(50, "ping"))
        assert out["error"]["code"] == INVALID_REQUEST
        assert "closed" in out["error"]["message"]


async def test_close_fails_pending_server_requests_with_connection_closed() -> None:
    server = make_server()
    started = asyncio.Event()

    async def never_answer(params: dict[str, Any]) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(30)
        return {}

    async with connect(server, handlers={"roots/list": never_answer}) as client:
        session = client.session
        waiter = asyncio.ensure_future(session.send_request("roots/list", None))
        await asyncio.sleep(0)
        session.close()
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(waiter, 5)
        with pytest.raises(ConnectionClosed):
            await session.send_request("ping", None)


# -- batches ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
async def test_batches_are_rejected_outside_2025_03_26(version: str) -> None:
    async with connect(make_server(), protocol_version=version) as client:
        out = await client.send_raw([req(5, "ping"), req(6, "tools/list")])
        # One error object for the whole array, not an array of errors.
        assert isinstance(out, dict)
        assert out["id"] is None
        assert out["error"]["code"] == INVALID_REQUEST
        assert "batch" in out["error"]["message"]
        assert await client.request("ping") == {}


async def test_batches_work_in_2025_03_26() -> None:
    async with connect(make_server(), protocol_version="2025-03-26") as client:
        out = await client.send_raw(
            [
                req(5, "ping"),
                {"jsonrpc": "2.0", "method": "notifications/whatever"},
                req(6, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
                req(7, "nope/nope"),
                {"jsonrpc": "2.0", "id": 8},
            ]
        )
        assert isinstance(out, list)
        by_id = {o["id"]: o for o in out}
        assert set(by_id) == {5, 6, 7, 8}  # the notification got no answer
        assert by_id[5]["result"] == {}
        assert by_id[6]["result"]["content"][0]["text"] == "5"
        assert by_id[7]["error"]["code"] == METHOD_NOT_FOUND
        assert by_id[8]["error"]["code"] == INVALID_REQUEST


async def test_batch_of_only_notifications_has_no_answer_in_2025_03_26() -> None:
    async with connect(make_server(), protocol_version="2025-03-26") as client:
        note = {"jsonrpc": "2.0", "method": "notifications/x"}
        assert await client.send_raw([note, note]) == []


async def test_batch_members_run_concurrently_in_2025_03_26() -> None:
    server = make_server()
    gate = asyncio.Event()

    @server.tool
    async def wait_gate() -> str:
        await asyncio.wait_for(gate.wait(), 5)
        return "opened"

    @server.tool
    async def open_gate() -> str:
        gate.set()
        return "done"

    async with connect(server, protocol_version="2025-03-26") as client:
        out = await asyncio.wait_for(
            client.send_raw(
                [
                    req(1, "tools/call", {"name": "wait_gate"}),
                    req(2, "tools/call", {"name": "open_gate"}),
                ]
            ),
            5,
        )
        assert [o["result"]["content"][0]["text"] for o in out] == ["opened", "done"]


async def test_empty_batch_is_one_invalid_request() -> None:
    async with connect(make_server(), protocol_version="2025-03-26") as client:
        out = await client.send_raw([])
        assert out["error"]["code"] == INVALID_REQUEST
        assert out["id"] is None


async def test_batch_before_initialize_is_rejected_even_with_initialize_inside() -> None:
    async with connect(make_server(), initialize=False) as client:
        out = await client.send_raw([init_msg(1, "2025-03-26"), req(2, "ping")])
        assert out["error"]["code"] == INVALID_REQUEST
        assert client.session.state is State.NEW


async def test_initialize_inside_a_2025_03_26_batch_is_refused() -> None:
    async with connect(make_server(), protocol_version="2025-03-26") as client:
        out = await client.send_raw([init_msg(9, "2025-03-26"), req(10, "ping")])
        by_id = {o["id"]: o for o in out}
        assert by_id[9]["error"]["code"] == INVALID_REQUEST
        assert by_id[10]["result"] == {}


# -- error codes and robustness ---------------------------------------------------------------


async def test_unknown_method_is_32601() -> None:
    async with connect(make_server()) as client:
        out = await client.send_raw(req(3, "tools/explode"))
        assert out == {
            "jsonrpc": "2.0",
            "id": 3,
            "error": {"code": METHOD_NOT_FOUND, "message": "Method not found: tools/explode"},
        }


async def test_unknown_resource_is_32002_with_the_uri() -> None:
    async with connect(make_server()) as client:
        with pytest.raises(RemoteError) as info:
            await client.read_resource("test://missing")
        assert info.value.code == RESOURCE_NOT_FOUND
        assert info.value.data == {"uri": "test://missing"}


async def test_handler_crash_is_32603_without_internals() -> None:
    async with connect(make_server()) as client:
        with pytest.raises(RemoteError) as info:
            await client.read_resource("test://broken")
        assert info.value.code == INTERNAL_ERROR
        assert "hunter2" not in info.value.message
        assert "RuntimeError" not in info.value.message


async def test_handler_crash_shows_the_exception_in_debug_mode() -> None:
    async with connect(make_server(debug=True)) as client:
        with pytest.raises(RemoteError) as info:
            await client.read_resource("test://broken")
        assert info.value.code == INTERNAL_ERROR
        assert "RuntimeError" in info.value.message


def test_resource_not_found_exception_carries_code_and_data() -> None:
    exc = ResourceNotFound("a://b")
    assert exc.to_error() == {
        "code": -32002,
        "message": "Resource not found: a://b",
        "data": {"uri": "a://b"},
    }


MALFORMED: list[Any] = [
    None,
    42,
    "hello",
    {},
    {"jsonrpc": "2.0"},
    {"jsonrpc": "1.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1, "method": 7},
    {"jsonrpc": "2.0", "id": None, "method": "ping"},
    {"jsonrpc": "2.0", "id": [1], "method": "ping"},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1, 2]},
    {"jsonrpc": "2.0", "id": {}, "result": {}},
    {"jsonrpc": "2.0", "id": 1, "error": "bad"},
    {"jsonrpc": "2.0", "id": 1},
]


@pytest.mark.parametrize("bad", MALFORMED)
async def test_malformed_messages_get_32600_and_the_session_survives(bad: Any) -> None:
    async with connect(make_server()) as client:
        out = await client.send_raw(bad)
        assert out["error"]["code"] == INVALID_REQUEST
        assert await client.request("ping") == {}


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/call", {"name": 5}),
        ("tools/call", {"name": "add", "arguments": [1, 2]}),
        ("tools/call", {"name": "add", "arguments": "a=1"}),
        ("tools/call", {}),
        ("resources/read", {"uri": 12}),
        ("resources/read", {}),
        ("resources/subscribe", {"uri": None}),
        ("resources/unsubscribe", {}),
        ("prompts/get", {"name": ["x"]}),
        ("prompts/get", {"name": "p", "arguments": "x"}),
        ("logging/setLevel", {"level": "verbose"}),
        ("logging/setLevel", {"level": 3}),
        ("completion/complete", {"ref": "x"}),
        ("completion/complete", {"ref": {"type": "ref/unknown"}, "argument": {"name": "a"}}),
        ("tools/list", {"cursor": 17}),
        ("tools/list", {"cursor": "not-a-cursor"}),
    ],
)
async def test_params_of_the_wrong_type_are_32602_and_the_session_survives(
    method: str, params: dict[str, Any]
) -> None:
    async with connect(make_server()) as client:
        out = await client.send_raw(req(77, method, params))
        assert out["id"] == 77
        assert out["error"]["code"] == INVALID_PARAMS, out
        assert await client.request("ping") == {}


async def test_notifications_get_no_answer_even_when_unknown_or_odd() -> None:
    async with connect(make_server()) as client:
        for note in [
            {"jsonrpc": "2.0", "method": "notifications/unknown"},
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": {"x": 1}},
            },
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}},
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1}},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        ]:
            assert await client.send_raw(note) is None
        assert await client.request("ping") == {}


async def test_responses_to_unknown_requests_are_ignored() -> None:
    async with connect(make_server()) as client:
        assert await client.send_raw({"jsonrpc": "2.0", "id": "nobody", "result": {}}) is None
        err = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}
        assert await client.send_raw(err) is None
        assert await client.request("ping") == {}


async def test_a_non_object_result_fails_the_server_request() -> None:
    async with connect(make_server(), handlers={"roots/list": lambda p: []}) as client:  # type: ignore[arg-type,return-value]
        unchecked_client_traffic(client)  # the bad answer is the point
        with pytest.raises(RemoteError, match="not an object"):
            await client.session.send_request("roots/list", None, timeout=5)


async def test_requests_are_served_concurrently() -> None:
    server = make_server()
    release = asyncio.Event()

    @server.tool
    async def blocker() -> str:
        await asyncio.wait_for(release.wait(), 5)
        return "released"

    async with connect(server) as client:
        slow = asyncio.ensure_future(client.call_tool("blocker"))
        await asyncio.sleep(0.01)
        assert await asyncio.wait_for(client.request("ping"), 5) == {}
        release.set()
        result = await asyncio.wait_for(slow, 5)
        assert result["content"][0]["text"] == "released"


async def test_is_running_is_true_while_the_clients_request_is_served() -> None:
    server = make_server()
    started, release = asyncio.Event(), asyncio.Event()

    @server.tool
    async def hold() -> str:
        started.set()
        await release.wait()
        return "done"

    async with connect(server) as client:
        call = asyncio.ensure_future(client.call_tool("hold"))
        await asyncio.wait_for(started.wait(), 5)
        request_id = client.sent[-1]["id"]
        assert client.session.is_running(request_id)
        assert not client.session.is_running("never-sent")
        release.set()
        await asyncio.wait_for(call, 5)
        assert not client.session.is_running(request_id)


async def test_set_request_id_prefix_names_the_sessions_requests_to_the_client() -> None:
    session = make_server().create_session(session_id="s")
    assert session.outgoing.open("ping", None, None)[1]["id"].startswith("mcpkit-")
    session.set_request_id_prefix("mcpkit-node7.")
    _, message = session.outgoing.open("ping", None, None)
    assert message["id"] == "mcpkit-node7.1"


async def test_dispatch_serves_a_request_with_the_method_table_without_era_framing() -> None:
    session = make_server().create_session(stateless=True, revision="2026-07-28")
    sent: list[Any] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    out = await session.dispatch(
        req(3, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}), send
    )
    assert out is not None and out["id"] == 3
    assert out["result"]["content"][0]["text"] == "3"
    assert "resultType" not in out["result"]  # the 2026-07-28 completion is serve_stateless's
