"""proxy() bridging protocol eras: server→client requests on one side, input rounds on the other.

A handshake-era upstream served to 2026-07-28 clients asks them in input-required rounds
(the pooled upstream connections, one request at a time, so each question reaches the
client whose call asked it); a 2026-07-28 upstream served to handshake-era clients has its
input rounds answered by server→client requests.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import Client, Context, MCPServer
from mcpkit.compose import proxy
from mcpkit.compose.proxy import ProxySource
from mcpkit.errors import ConfigurationError, RemoteError
from mcpkit.server.middleware import CallNext, MiddlewareContext
from mcpkit.testing import connect
from tests.client.http_servers import serve
from tests.compose.test_proxy_requests import asking_server

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


class Recorder:
    """Upstream middleware: the era of each request and the input responses it carried."""

    def __init__(self) -> None:
        self.eras: list[str] = []
        self.methods: list[str] = []
        self.responses: list[Any] = []

    async def __call__(self, ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        self.eras.append(ctx.session.revision.era)
        self.methods.append(ctx.method)
        if ctx.method == "tools/call":
            self.responses.append(ctx.params.get("inputResponses"))
        return await call_next(ctx)


def recorded(server: MCPServer) -> Recorder:
    recorder = Recorder()
    server.add_middleware(recorder)
    return recorder


def pool_of(server: MCPServer) -> Any:
    (source,) = [s for s in server.component_sources if isinstance(s, ProxySource)]
    return source.pool


def sample(params: dict[str, Any]) -> dict[str, Any]:
    text = params["messages"][0]["content"]["text"]
    return {
        "role": "assistant",
        "content": {"type": "text", "text": f"short({text})"},
        "model": "m",
    }


# -- a handshake upstream, 2026-07-28 clients ---------------------------------------------------


async def test_a_handshake_upstreams_elicitation_is_an_input_round_outside() -> None:
    upstream = asking_server()
    seen = recorded(upstream)
    server = proxy(upstream)
    async with (
        connect(server),  # the proxy's lifespan
        connect(server, protocol_version=MODERN, initialize=False) as client,
    ):
        meta: dict[str, Any] = {
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        }
        first = await client.request("tools/call", {"name": "ask_name", "_meta": meta})
        assert first["resultType"] == "input_required"
        [(key, question)] = first["inputRequests"].items()
        assert question["method"] == "elicitation/create"
        assert question["params"]["message"] == "Your name?"
        done = await client.request(
            "tools/call",
            {
                "name": "ask_name",
                "_meta": meta,
                "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}},
                "requestState": first["requestState"],
            },
        )
    assert done["resultType"] == "complete"
    assert done["content"][0]["text"] == "accept: {'name': 'Ada'}"
    assert set(seen.eras) == {"handshake"}  # inside, a server→client request was answered


async def test_sampling_and_roots_of_a_handshake_upstream_reach_a_2026_client() -> None:
    server = proxy(asking_server())
    async with (
        connect(server),
        Client(
            server=server,
            protocol_version=MODERN,
            sampling_handler=sample,
            roots=["file:///work/a"],
        ) as client,
    ):
        assert client.protocol_version == MODERN
        summary = await client.call_tool("summarize", {"text": "long"})
        assert summary["content"][0]["text"] == "short(Summarize: long)"
        roots = await client.call_tool("where", {})
        assert roots["content"][0]["text"] == "file:///work/a"


async def test_concurrent_2026_calls_each_answer_their_own_upstream_questions() -> None:
    server = proxy(asking_server())
    both_asked = asyncio.Barrier(2)  # each answers only once both calls are waiting on theirs

    def answering(name: str) -> Any:
        async def elicit(params: dict[str, Any]) -> dict[str, Any]:
            await both_asked.wait()
            return {"action": "accept", "content": {"name": name}}

        return elicit

    async def call_as(name: str) -> str:
        async with Client(
            server=server, protocol_version=MODERN, elicitation_handler=answering(name)
        ) as client:
            result = await client.call_tool("ask_name", {})
            return str(result["content"][0]["text"])

    async with connect(server):
        texts = await asyncio.wait_for(asyncio.gather(call_as("Ada"), call_as("Bob")), 10)
        assert list(texts) == ["accept: {'name': 'Ada'}", "accept: {'name': 'Bob'}"]
        assert len(pool_of(server).members) == 2  # one connection per call in flight
        # Reused afterwards: no handshake per call.
        assert await call_as_free(server) == "accept: {'name': 'Cy'}"
        assert len(pool_of(server).members) == 2


async def call_as_free(server: MCPServer) -> str:
    async with Client(
        server=server,
        protocol_version=MODERN,
        elicitation_handler=lambda p: {"action": "accept", "content": {"name": "Cy"}},
    ) as client:
        return str((await client.call_tool("ask_name", {}))["content"][0]["text"])


async def test_a_2026_client_without_elicitation_gets_the_upstreams_refusal() -> None:
    server = proxy(asking_server())
    async with connect(server), Client(server=server, protocol_version=MODERN) as client:
        refused = await client.call_tool("ask_name", {})
    assert refused["isError"] is True
    assert "elicitation" in refused["content"][0]["text"]


async def test_the_pool_bounds_the_upstream_connections_and_queues_beyond() -> None:
    upstream = MCPServer(name="slow", version="1")
    running = 0
    most = 0

    @upstream.tool
    async def nap() -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.05)
        running -= 1
        return "rested"

    server = proxy(upstream, pool_size=2)
    async with connect(server):

        async def call() -> str:
            async with connect(server, protocol_version=MODERN, initialize=False) as c:
                return str((await c.call_tool("nap", {}))["content"][0]["text"])

        texts = await asyncio.wait_for(asyncio.gather(*(call() for _ in range(5))), 10)
        assert texts == ["rested"] * 5
        assert len(pool_of(server).members) == 2
        assert most == 2


async def test_a_full_pool_is_a_clear_error_after_the_request_timeout() -> None:
    upstream = asking_server()
    started, release = asyncio.Event(), asyncio.Event()

    @upstream.tool
    async def hold() -> str:
        """Answer once released."""
        started.set()
        await release.wait()
        return "released"

    server = proxy(upstream, pool_size=1)
    server.request_timeout = 0.3
    async with (
        connect(server),
        connect(server, protocol_version=MODERN, initialize=False) as client,
    ):
        # Held by its call, the only connection serves nothing else until it ends (a call
        # parked on a question holds it too, until the question times out: the same
        # request_timeout, so a race the test would lose on a loaded machine)...
        first = asyncio.create_task(client.request("tools/call", {"name": "hold"}))
        await asyncio.wait_for(started.wait(), 10)
        # ...so the next request waits for it, and gives up saying why.
        with pytest.raises(RemoteError, match=r"is busy: all 1 pooled connections") as exc:
            await client.list_tools()
        assert exc.value.code == -32603
        release.set()
        assert (await first)["content"][0]["text"] == "released"


async def test_a_2026_listener_hears_a_handshake_upstreams_list_changed() -> None:
    upstream = asking_server()
    server = proxy(upstream)
    changed: list[str] = []
    async with (
        connect(server),
        Client(server=server, protocol_version=MODERN, on_list_changed=changed.append) as client,
    ):
        assert "ask_name" in {t["name"] for t in await client.list_tools()}
        await upstream.tools.notify_list_changed()  # heard by the pooled connection
        for _ in range(200):
            if changed:
                break
            await asyncio.sleep(0.01)
    assert changed == ["tools"]


async def test_each_2026_request_gets_the_upstream_logs_at_the_level_it_asked_for() -> None:
    upstream = asking_server()

    @upstream.tool
    async def chatty(ctx: Context) -> str:
        await ctx.debug("fine detail")
        await ctx.warning("careful")
        return "ok"

    server = proxy(upstream)

    async def logs_at(level: str | None) -> list[Any]:
        logs: list[dict[str, Any]] = []
        async with Client(
            server=server, protocol_version=MODERN, log_handler=logs.append
        ) as client:
            if level is not None:
                await client.set_logging_level(level)  # 2026-07-28: sent with each request
            await client.call_tool("chatty", {})
        return [entry["data"] for entry in logs]

    async with connect(server):
        assert await logs_at("debug") == ["fine detail", "careful"]
        assert await logs_at("warning") == ["careful"]
        assert await logs_at("debug") == ["fine detail", "careful"]
        assert len(pool_of(server).members) == 1  # one connection, its level followed


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_a_pool_size_that_is_not_a_positive_integer_is_refused(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="pool_size must be a positive integer"):
        proxy(asking_server(), pool_size=bad)


def test_an_unknown_upstream_version_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="upstream_version must be one of"):
        proxy(asking_server(), upstream_version="2099-01-01")


# -- a 2026-07-28 upstream, handshake clients ---------------------------------------------------


async def test_a_2026_upstreams_input_rounds_are_server_requests_to_a_handshake_client() -> None:
    upstream = asking_server()
    seen = recorded(upstream)
    asked: list[str] = []

    def elicit(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"name": "Ada"}}

    server = MCPServer.proxy(upstream, upstream_version=MODERN)
    async with Client(
        server=server,
        protocol_version=HANDSHAKE,
        elicitation_handler=elicit,
        sampling_handler=sample,
        roots=["file:///work/b"],
    ) as client:
        named = await client.call_tool("ask_name", {})
        summary = await client.call_tool("summarize", {"text": "long"})
        roots = await client.call_tool("where", {})
    assert named["content"][0]["text"] == "accept: {'name': 'Ada'}"
    assert summary["content"][0]["text"] == "short(Summarize: long)"
    assert roots["content"][0]["text"] == "file:///work/b"
    assert asked == ["Your name?"]  # a server→client request to the handshake client
    assert set(seen.eras) == {"stateless"}
    # Each tool was called again with the answers of its round (input rounds inside).
    answered = [r for r in seen.responses if r]
    assert [sorted(r) for r in answered] == [["elicitation"], ["sampling"], ["roots"]]


async def test_a_stateless_http_subscribe_is_not_passed_up_to_a_pooled_connection() -> None:
    upstream = asking_server()
    seen = recorded(upstream)

    @upstream.resource("notes://today", mime_type="text/plain")
    def today() -> str:
        return "sunny"

    server = proxy(upstream)
    async with serve(server.http_app(stateless=True)) as url:
        async with Client(url=url, protocol_version=HANDSHAKE) as client:
            await client.subscribe_resource("notes://today")
            read = await client.read_resource("notes://today")
    assert read["contents"][0]["text"] == "sunny"
    assert "resources/read" in seen.methods
    assert "resources/subscribe" not in seen.methods
