"""Wrong-typed params are the caller's error (-32602), never an internal error (-32603).

Every built-in method is sent its valid params with one member at a time replaced by
a value of each JSON type, in both protocol eras: the answer may be a result or any
error the caller can act on, but never ``Internal error`` (which is what a handler
tripping over an unhashable or mistyped value used to produce). The named cases pin
the message; the deep cases pin that nesting close to the decoder's limit (1,024
levels) is refused, not a ``RecursionError``.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import pytest

from mcpkit import MCPServer, create_tool
from mcpkit.errors import INTERNAL_ERROR, INVALID_PARAMS
from mcpkit.protocol import jsonrpc
from mcpkit.protocol.versions import REVISIONS
from mcpkit.testing import InMemoryClient, connect

V = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/logLevel": "info",
}
WRONG: list[Any] = [[], {}, 1, -1, 1.5, "s", None, True, [[1]], {"a": []}, 2**63]


def make_server() -> MCPServer:
    server = MCPServer(name="params", version="1")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.prompt(version="1")
    def review(code: str) -> str:
        return code

    @server.completion(prompt="review", argument="code")
    def complete_code(value: str, arguments: dict[str, str]) -> list[str]:
        return [value]

    @server.resource("demo://items/{item_id}")
    def item(item_id: str) -> str:
        return item_id

    @server.resource("demo://static")
    def static() -> str:
        return "static"

    return server


GOOD: dict[str, dict[str, Any]] = {
    "initialize": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "a", "version": "1"},
    },
    "ping": {},
    "logging/setLevel": {"level": "info"},
    "tools/list": {"cursor": "c"},
    "tools/call": {"name": "add", "arguments": {"a": 1, "b": 2}},
    "resources/list": {"cursor": "c"},
    "resources/templates/list": {"cursor": "c"},
    "resources/read": {"uri": "demo://items/1"},
    "resources/subscribe": {"uri": "demo://static"},
    "resources/unsubscribe": {"uri": "demo://static"},
    "prompts/list": {"cursor": "c"},
    "prompts/get": {"name": "review", "arguments": {"code": "x"}, "version": "1"},
    "completion/complete": {
        "ref": {"type": "ref/prompt", "name": "review"},
        "argument": {"name": "code", "value": "x"},
        "context": {"arguments": {"code": "y"}},
    },
    "server/discover": {},
}
HANDSHAKE_ONLY = {"initialize", "ping", "logging/setLevel"} | {
    "resources/subscribe",
    "resources/unsubscribe",
}


def paths(value: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every member path of a params object (objects only: arrays are leaves)."""
    if isinstance(value, dict):
        if prefix:
            yield prefix
        for key, inner in value.items():
            yield from paths(inner, (*prefix, key))
    elif prefix:
        yield prefix


def replaced(params: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(params)
    node = out
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return out


def stateless_client(server: MCPServer) -> InMemoryClient:
    """A session that speaks 2026-07-28 only, as stateless HTTP makes one per request; its
    traffic is checked against the 2026-07-28 schema."""
    client = connect(server, initialize=False, stateless=True)
    client.session.revision = REVISIONS[V]
    return client


async def sweep(stateless: bool) -> list[str]:
    """Internal errors met while replacing each member of each method's params."""
    found: list[str] = []
    server = make_server()
    async with stateless_client(server) if stateless else connect(server) as client:
        for method, good in GOOD.items():
            if stateless and method in HANDSHAKE_ONLY:
                continue
            if not stateless and method == "server/discover":
                continue
            base = dict(good)
            if stateless:
                base["_meta"] = dict(ENVELOPE)
            targets = [*paths(base), ("_meta", "progressToken")]
            if not stateless:
                targets.append(("_meta",))
            for path in targets:
                for value in WRONG:
                    params = replaced(base, path, value)
                    answer = await client.send_raw(jsonrpc.request(1, method, params))
                    error = (answer or {}).get("error") or {}
                    if error.get("code") == INTERNAL_ERROR:
                        found.append(f"{method} {'.'.join(path)}={value!r}")
    return found


@pytest.mark.parametrize("stateless", [False, True], ids=["handshake", "2026-07-28"])
async def test_no_wrong_typed_member_of_any_method_is_an_internal_error(stateless: bool) -> None:
    assert await sweep(stateless) == []


async def invalid_params(method: str, params: dict[str, Any], *, stateless: bool = False) -> str:
    server = make_server()
    async with stateless_client(server) if stateless else connect(server) as client:
        if stateless:
            params = {**params, "_meta": ENVELOPE}
        answer = await client.send_raw(jsonrpc.request(7, method, params))
    assert answer is not None and answer["id"] == 7, answer
    assert answer["error"]["code"] == INVALID_PARAMS, answer
    message: str = answer["error"]["message"]
    return message


async def test_set_level_names_the_levels_and_not_the_value() -> None:
    message = await invalid_params("logging/setLevel", {"level": ["debug"]})
    assert "an array" in message and "debug, info" in message


async def test_prompt_version_must_be_a_string() -> None:
    params = {"name": "review", "arguments": {"code": "x"}, "version": [1]}
    assert "'version' must be a string" in await invalid_params("prompts/get", params)


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"arguments": [1]}, "context.arguments"),
        ({"arguments": "ab"}, "context.arguments"),
        ([], "'context'"),
    ],
)
async def test_completion_context_must_hold_an_object(context: Any, named: str) -> None:
    params = {
        "ref": {"type": "ref/prompt", "name": "review"},
        "argument": {"name": "code", "value": "x"},
        "context": context,
    }
    assert named in await invalid_params("completion/complete", params)


@pytest.mark.parametrize(
    "notifications",
    [
        [],
        "all",
        {"toolsListChanged": "yes"},
        {"resourceSubscriptions": "demo://static"},
        {"resourceSubscriptions": [1]},
    ],
)
async def test_listen_with_a_wrong_typed_filter_is_refused_before_the_stream_opens(
    notifications: Any,
) -> None:
    async def refused() -> str:
        return await invalid_params(
            "subscriptions/listen", {"notifications": notifications}, stateless=True
        )

    # A listen that was accepted would stay open: the bound turns that into a failure.
    message = await asyncio.wait_for(refused(), 10)
    assert "notifications" in message


def deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


async def test_arguments_nested_1000_levels_are_an_invalid_arguments_result() -> None:
    server = make_server()
    server.add_tool(
        create_tool(
            id="schema_tool",
            description="A tool with a raw JSON Schema (validated by jsonschema).",
            execute=lambda text: text,
            input_schema={
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        )
    )
    async with connect(server) as client:
        # Sent as decoded values: the in-memory client's own encoder stops at 254 levels.
        for name, arguments in [
            ("schema_tool", {"text": deep(1000)}),
            ("add", {"a": deep(1000), "b": 1}),
        ]:
            answer = await client.session.handle(
                jsonrpc.request(3, "tools/call", {"name": name, "arguments": arguments}),
                client._deliver,
            )
            assert answer is not None
            result = answer["result"]
            assert result["isError"] is True, answer
            text = result["content"][0]["text"]
            assert text.startswith(f"Invalid arguments for tool '{name}'"), text
            assert len(text) < 500, text  # the offending value is not echoed back whole


async def test_a_schema_error_message_does_not_echo_a_huge_argument() -> None:
    server = MCPServer(name="s", version="1")
    server.add_tool(
        create_tool(
            id="schema_tool",
            description="d",
            execute=lambda text: text,
            input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        )
    )
    async with connect(server) as client:
        result = await client.call_tool("schema_tool", {"text": ["y" * 100_000]})
    text = result["content"][0]["text"]
    assert result["isError"] is True and "text:" in text and len(text) < 500
