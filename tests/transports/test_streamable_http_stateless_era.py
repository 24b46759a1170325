"""The 2026-07-28 (stateless) era on the one Streamable HTTP endpoint, over a real socket.

Every message the server sends is validated against the 2026-07-28 schema.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Annotated, Any

import httpx
import orjson
import pytest
from pydantic import Field

from mcpkit import CacheOptions, Context, McpHeader, MCPServer
from mcpkit.errors import MISSING_CAPABILITY, MCPError
from tests import schema
from tests.transports.conftest import BOTH, TIMEOUT, HTTPClient, demo_server, sse_events

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LEVEL = "io.modelcontextprotocol/logLevel"
SUB = "io.modelcontextprotocol/subscriptionId"
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def envelope(**extra: Any) -> dict[str, Any]:
    return {PV: V, CAPS: {}, INFO: {"name": "t", "version": "1"}, **extra}


def request(method: str, params: dict[str, Any] | None = None, rid: int = 1, **meta: Any) -> Any:
    p = dict(params or {})
    p.setdefault("_meta", envelope(**meta))
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}


def headers_for(msg: dict[str, Any], **extra: str) -> dict[str, str]:
    h = {
        "accept": BOTH,
        "content-type": "application/json",
        "mcp-protocol-version": V,
        "mcp-method": msg["method"],
    }
    field = NAMED.get(msg["method"])
    if field is not None:
        h["mcp-name"] = msg["params"][field]
    h.update(extra)
    return {k: v for k, v in h.items() if v != ""}


class Answer:
    def __init__(self, status: int, headers: httpx.Headers, messages: list[Any]) -> None:
        self.status = status
        self.headers = headers
        self.messages = messages

    @property
    def response(self) -> dict[str, Any]:
        answers = [m for m in self.messages if "method" not in m]
        assert len(answers) == 1, self.messages
        return answers[0]

    @property
    def result(self) -> dict[str, Any]:
        assert "result" in self.response, self.response
        out: dict[str, Any] = self.response["result"]
        return out

    @property
    def error(self) -> dict[str, Any]:
        assert "error" in self.response, self.response
        out: dict[str, Any] = self.response["error"]
        return out


async def post(
    http: httpx.AsyncClient, url: str, msg: Any, headers: dict[str, str] | None = None
) -> Answer:
    hdrs = headers if headers is not None else headers_for(msg)
    resp = await http.post(url, content=orjson.dumps(msg), headers=hdrs)
    messages: list[Any] = []
    if resp.headers.get("content-type", "").startswith("text/event-stream"):
        for block in resp.text.split("\n\n"):
            for line in block.splitlines():
                if line.startswith("data: "):
                    messages.append(orjson.loads(line[6:]))
    elif resp.content:
        messages.append(resp.json())
    method = msg.get("method") if isinstance(msg, dict) else None
    for m in messages:
        schema.validate_message(m, V, request_method=None if "method" in m else method)
    return Answer(resp.status_code, resp.headers, messages)


@pytest.fixture
async def url(serve_app: Any) -> str:
    server = demo_server()

    @server.tool
    async def region_echo(
        region: Annotated[str, McpHeader("Region")],
        count: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Count"})] = 1,
    ) -> str:
        """Echo an argument mirrored into Mcp-Param-Region."""
        return f"{region} x{count}"

    @server.tool
    async def needs_sampling(ctx: Context) -> str:
        """Refuse without the sampling capability."""
        if "sampling" not in ctx.client_capabilities:
            raise MCPError(
                "needs sampling",
                code=MISSING_CAPABILITY,
                data={"requiredCapabilities": {"sampling": {}}},
            )
        return "ok"

    @server.tool
    async def change_tools() -> str:
        """Announce a tool list change."""
        await server.tools.notify_list_changed()
        await server.resources.notify_updated("demo://greeting")
        return "changed"

    base = await serve_app(server.http_app())
    return base + "/mcp"


async def test_discover_names_versions_capabilities_and_server(
    http: httpx.AsyncClient, url: str
) -> None:
    ans = await post(http, url, request("server/discover"))
    assert ans.status == 200
    assert "mcp-session-id" not in ans.headers
    result = ans.result
    assert result["supportedVersions"][0] == V and "2025-11-25" in result["supportedVersions"]
    assert "tools" in result["capabilities"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "http-demo"
    assert result["resultType"] == "complete"
    assert result["ttlMs"] == 0 and result["cacheScope"] == "private"


@pytest.mark.parametrize(
    "params",
    [{}, {"_meta": {CAPS: {}}}, {"_meta": {PV: V}}, {"_meta": {PV: V, CAPS: []}}],
    ids=["no-meta", "no-version", "no-capabilities", "bad-capabilities"],
)
async def test_an_incomplete_envelope_is_400_invalid_params_with_the_id(
    http: httpx.AsyncClient, url: str, params: dict[str, Any]
) -> None:
    msg = {"jsonrpc": "2.0", "id": 101, "method": "server/discover", "params": params}
    ans = await post(http, url, msg)
    assert ans.status == 400
    assert ans.response["id"] == 101 and ans.error["code"] == -32602


async def test_client_info_is_optional(http: httpx.AsyncClient, url: str) -> None:
    msg = request("tools/list", {"_meta": {PV: V, CAPS: {}}})
    assert (await post(http, url, msg)).status == 200


async def test_unsupported_and_mismatched_versions(http: httpx.AsyncClient, url: str) -> None:
    msg = request("server/discover", rid=301)
    ans = await post(http, url, msg, headers_for(msg, **{"mcp-protocol-version": "v999.0.0"}))
    assert ans.status == 400 and ans.response["id"] == 301
    assert ans.error["code"] == -32022
    assert ans.error["data"]["requested"] == "v999.0.0" and V in ans.error["data"]["supported"]
    msg = request("server/discover", rid=302)
    msg["params"]["_meta"][PV] = "v999.0.0"
    ans = await post(http, url, msg)
    assert ans.status == 400 and ans.error["code"] == -32020
    # A body version without a header: unsupported in the stateless era.
    ans = await post(http, url, msg, {"accept": BOTH, "content-type": "application/json"})
    assert ans.status == 400 and ans.error["code"] == -32022


@pytest.mark.parametrize(
    "method",
    ["initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/method"],
)
async def test_removed_and_unknown_methods_are_404_method_not_found(
    http: httpx.AsyncClient, url: str, method: str
) -> None:
    ans = await post(http, url, request(method, rid=500))
    assert ans.status == 404 and ans.error["code"] == -32601 and ans.response["id"] == 500


async def test_get_and_delete_are_405_for_the_stateless_era(
    http: httpx.AsyncClient, url: str
) -> None:
    for verb in ("GET", "DELETE"):
        resp = await http.request(verb, url, headers={"mcp-protocol-version": V, "accept": BOTH})
        assert resp.status_code == 405 and resp.headers["allow"] == "POST"


@pytest.mark.parametrize(
    ("change", "accepted"),
    [
        ({"mcp-method": "prompts/list"}, False),
        ({"mcp-method": ""}, False),
        ({"mcp-method": "TOOLS/LIST"}, False),
        ({"mcp-method": "tools/list"}, True),
    ],
)
async def test_mcp_method_must_match_the_body(
    http: httpx.AsyncClient, url: str, change: dict[str, str], accepted: bool
) -> None:
    msg = request("tools/list")
    ans = await post(http, url, msg, headers_for(msg, **change))
    if accepted:
        assert ans.status == 200 and "result" in ans.response
    else:
        assert ans.status == 400 and ans.error["code"] == -32020


async def test_mcp_name_must_match_the_body_and_may_be_base64(
    http: httpx.AsyncClient, url: str
) -> None:
    msg = request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    for name, ok in (
        ("wrong", False),
        ("", False),
        ("=?base64?" + base64.b64encode(b"add").decode() + "?=", True),
    ):
        ans = await post(http, url, msg, headers_for(msg, **{"mcp-name": name}))
        assert (ans.status == 200) is ok, (name, ans.messages)
        if not ok:
            assert ans.error["code"] == -32020
    msg = request("resources/read", {"uri": "demo://greeting"})
    ans = await post(http, url, msg, headers_for(msg, **{"mcp-name": "demo://other"}))
    assert ans.status == 400 and ans.error["code"] == -32020


@pytest.mark.parametrize(
    ("body", "header", "ok"),
    [
        ("Hello", "=?base64?SGVsbG8=?=", True),
        ("Hello", "=?base64?SGVsbG8?=", False),  # bad padding
        ("Hello", "=?base64?SGVs!!!bG8=?=", False),
        ("SGVsbG8=", "SGVsbG8=", True),  # a literal that only looks encoded
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8=", True),  # no closing marker: literal
        ("test-value", None, False),  # the argument is set: the header is required
        ("us-west1", "us-west1", True),
        ("us-west1", "us-east1", False),
    ],
)
async def test_mcp_param_headers_mirror_x_mcp_header_arguments(
    http: httpx.AsyncClient, url: str, body: str, header: str | None, ok: bool
) -> None:
    msg = request("tools/call", {"name": "region_echo", "arguments": {"region": body}})
    extra = {"mcp-param-region": header} if header is not None else {}
    ans = await post(http, url, msg, headers_for(msg, **extra))
    assert (ans.status == 200) is ok, ans.messages
    if ok:
        assert ans.result["content"][0]["text"] == f"{body} x1"
    else:
        assert ans.error["code"] == -32020


async def test_numeric_param_headers_compare_numerically(http: httpx.AsyncClient, url: str) -> None:
    msg = request("tools/call", {"name": "region_echo", "arguments": {"region": "r", "count": 42}})
    extra = {"mcp-param-region": "r", "mcp-param-count": "42.0"}
    assert (await post(http, url, msg, headers_for(msg, **extra))).status == 200
    extra["mcp-param-count"] = "41"
    assert (await post(http, url, msg, headers_for(msg, **extra))).status == 400


async def test_missing_client_capability_is_400_with_required_capabilities(
    http: httpx.AsyncClient, url: str
) -> None:
    msg = request("tools/call", {"name": "needs_sampling", "arguments": {}}, rid=401)
    ans = await post(http, url, msg)
    assert ans.status == 400 and ans.error["code"] == -32021
    assert ans.error["data"]["requiredCapabilities"] == {"sampling": {}}
    msg["params"]["_meta"][CAPS] = {"sampling": {}}
    assert (await post(http, url, msg)).result["content"][0]["text"] == "ok"


async def test_results_carry_result_type_server_info_and_cache_hints(
    http: httpx.AsyncClient, url: str
) -> None:
    for method, params in (
        ("tools/list", {}),
        ("prompts/list", {}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "demo://greeting"}),
    ):
        result = (await post(http, url, request(method, params))).result
        assert result["resultType"] == "complete"
        assert result["ttlMs"] == 0 and result["cacheScope"] == "private", method
    call = (
        await post(http, url, request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}))
    ).result
    assert call["resultType"] == "complete" and "ttlMs" not in call
    assert call["_meta"]["io.modelcontextprotocol/serverInfo"]["version"] == "1.0.0"


async def test_cache_hints_are_configured_per_server(
    serve_app: Any, http: httpx.AsyncClient
) -> None:
    server = MCPServer(
        name="cached", version="1", cache=CacheOptions(ttl_ms=60_000, scope="public")
    )
    u = await serve_app(server.http_app()) + "/mcp"
    result = (await post(http, u, request("tools/list"))).result
    assert result["ttlMs"] == 60_000 and result["cacheScope"] == "public"


async def test_resource_not_found_is_invalid_params_with_the_uri(
    http: httpx.AsyncClient, url: str
) -> None:
    ans = await post(http, url, request("resources/read", {"uri": "demo://missing"}))
    assert ans.error["code"] == -32602 and ans.error["data"] == {"uri": "demo://missing"}


async def test_progress_rides_the_request_stream_and_logs_only_when_asked(
    http: httpx.AsyncClient, url: str
) -> None:
    params = {"name": "work", "arguments": {"steps": 2}, "_meta": envelope(progressToken="p")}
    ans = await post(http, url, request("tools/call", params))
    assert ans.headers["content-type"].startswith("text/event-stream")
    assert [m["method"] for m in ans.messages if "method" in m] == ["notifications/progress"] * 2
    assert ans.result["content"][0]["text"] == "worked 2"
    params["_meta"] = envelope(**{LEVEL: "info"})
    ans = await post(http, url, request("tools/call", params))
    assert [m["method"] for m in ans.messages if "method" in m] == ["notifications/message"] * 2
    # Nothing related and no level asked: a plain JSON answer.
    params["_meta"] = envelope()
    ans = await post(http, url, request("tools/call", params))
    assert ans.headers["content-type"] == "application/json" and len(ans.messages) == 1


async def test_an_elicitation_is_never_sent_as_a_request(http: httpx.AsyncClient, url: str) -> None:
    msg = request("tools/call", {"name": "ask", "arguments": {}, "_meta": envelope()})
    msg["params"]["_meta"][CAPS] = {"elicitation": {}}
    ans = await post(http, url, msg)
    assert all("method" not in m or "id" not in m for m in ans.messages)
    assert ans.result["resultType"] == "input_required"


async def test_subscriptions_listen_acknowledges_filters_and_tags(
    http: httpx.AsyncClient, url: str
) -> None:
    listen = request(
        "subscriptions/listen",
        {"notifications": {"toolsListChanged": True, "resourceSubscriptions": ["demo://greeting"]}},
        rid=77,
    )
    prompts_only = request(
        "subscriptions/listen", {"notifications": {"promptsListChanged": True}}, rid=78
    )
    async with (
        http.stream("POST", url, content=orjson.dumps(listen), headers=headers_for(listen)) as r1,
        http.stream(
            "POST", url, content=orjson.dumps(prompts_only), headers=headers_for(prompts_only)
        ) as r2,
    ):
        assert r1.status_code == 200 and r2.status_code == 200
        e1, e2 = sse_events(r1), sse_events(r2)
        async with asyncio.timeout(TIMEOUT):
            ack = (await anext(e1)).json
            ack2 = (await anext(e2)).json
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["notifications"] == {
            "toolsListChanged": True,
            "resourceSubscriptions": ["demo://greeting"],
        }
        assert ack["params"]["_meta"][SUB] == 77 and ack2["params"]["_meta"][SUB] == 78
        change = request("tools/call", {"name": "change_tools", "arguments": {}}, rid=2)
        assert (await post(http, url, change)).status == 200
        async with asyncio.timeout(TIMEOUT):
            got = [(await anext(e1)).json, (await anext(e1)).json]
        assert [m["method"] for m in got] == [
            "notifications/tools/list_changed",
            "notifications/resources/updated",
        ]
        for m in (ack, ack2, *got):
            assert m["params"]["_meta"][SUB] in (77, 78)
            schema.validate_message(m, V)
        # The prompts-only listener got nothing for the tool change.
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await anext(e2)


async def test_a_legacy_client_and_a_2026_client_share_the_endpoint(
    http: httpx.AsyncClient, url: str
) -> None:
    legacy = HTTPClient(http, url)
    await legacy.initialize()
    ex = await legacy.post(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
        }
    )
    assert ex.result["content"][0]["text"] == "2" and "resultType" not in ex.result
    modern = await post(
        http, url, request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})
    )
    assert modern.result["content"][0]["text"] == "4"
    # The legacy session still works after the stateless request.
    ping = await legacy.post({"jsonrpc": "2.0", "id": 10, "method": "ping"})
    assert ping.status == 200


async def test_an_elicitation_round_trips_as_an_input_required_result(
    http: httpx.AsyncClient, url: str
) -> None:
    msg = request("tools/call", {"name": "ask", "arguments": {}})
    msg["params"]["_meta"][CAPS] = {"elicitation": {}}
    first = (await post(http, url, msg)).result
    assert first["resultType"] == "input_required"
    assert first["inputRequests"]["elicitation"]["method"] == "elicitation/create"
    msg["id"] = 2
    msg["params"]["requestState"] = first["requestState"]
    msg["params"]["inputResponses"] = {
        "elicitation": {"action": "accept", "content": {"name": "Ada"}}
    }
    done = await post(http, url, msg)
    assert done.response["id"] == 2 and done.result["content"][0]["text"] == "hello Ada"
    again = await post(http, url, msg)  # the state was used up
    assert again.error["code"] == -32602
