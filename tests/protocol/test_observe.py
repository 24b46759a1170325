"""The observe hook: what each side tells an observer of the exchanges it sends and answers."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import Client, Context, MCPServer
from mcpkit.errors import RemoteError
from mcpkit.protocol.observe import Kind


class Recorder:
    """An extension (client) and a server hook that write down what they are told."""

    def __init__(self) -> None:
        self.identifier = "com.example/recorder"
        self.request_meta = None
        self.events: list[tuple[Any, ...]] = []

    def observe(self, session: Any, kind: Kind, method: str) -> Recording | None:
        if kind == "closed":
            self.events.append(("closed",))
            return None
        return Recording(self, kind, method)


class Recording:
    def __init__(self, recorder: Recorder, kind: str, method: str) -> None:
        self.recorder, self.kind, self.method = recorder, kind, method

    def opened(self, message: dict[str, Any]) -> None:
        self.recorder.events.append(("opened", self.kind, self.method, "id" in message))
        if self.kind != "served":  # what the observer adds to _meta reaches the peer
            params = dict(message.get("params") or {})
            params["_meta"] = {**params.get("_meta", {}), "traceparent": "marked"}
            message["params"] = params

    def finished(self, result: dict[str, Any] | None, error: BaseException | None) -> None:
        outcome = type(error).__name__ if error is not None else result is not None
        self.recorder.events.append(("finished", self.kind, self.method, outcome))


async def test_the_client_tells_its_observer_of_each_request_notification_and_answer() -> None:
    server = MCPServer(name="observed", version="1")
    metas: list[Any] = []

    async def keep(ctx: Any, call_next: Any) -> dict[str, Any]:
        metas.append(ctx.params.get("_meta"))
        result: dict[str, Any] = await call_next(ctx)
        return result

    server.add_middleware(keep)

    @server.tool
    async def roots(ctx: Context) -> int:
        """A request to the client."""
        return len(await ctx.list_roots())

    on_client, on_server = Recorder(), Recorder()
    server.observe = on_server.observe
    async with Client(
        server=server, protocol_version="2025-11-25", extensions=[on_client], roots=["file:///a"]
    ) as client:
        await client.call_tool("roots", {})
        with pytest.raises(RemoteError):
            await client.call_tool("missing", {})
    assert on_client.events == [
        ("opened", "request", "initialize", True),
        ("finished", "request", "initialize", True),
        ("opened", "notification", "notifications/initialized", False),
        ("finished", "notification", "notifications/initialized", False),
        ("opened", "request", "tools/call", True),
        ("opened", "served", "roots/list", True),
        ("finished", "served", "roots/list", True),
        ("finished", "request", "tools/call", True),
        ("opened", "request", "tools/call", True),
        ("finished", "request", "tools/call", "RemoteError"),
        ("closed",),
    ]
    # The server: the client's notification it received, its request to the client, and
    # (in memory, the session ends as the client goes) its end.
    assert on_server.events[:4] == [
        ("opened", "served", "notifications/initialized", False),
        ("finished", "served", "notifications/initialized", False),
        ("opened", "request", "roots/list", True),
        ("finished", "request", "roots/list", True),
    ]
    assert on_server.events[-1] == ("closed",)
    # The observer's _meta went out with each request (initialize, then the two calls).
    assert [m["traceparent"] for m in metas] == ["marked"] * 3


async def test_the_server_tells_its_observer_of_the_notifications_it_sends() -> None:
    server = MCPServer(name="observed", version="1")

    @server.tool
    async def chatty(ctx: Context) -> str:
        """Logs and reports progress."""
        await ctx.info("working")
        await ctx.progress(1, 2)
        return "done"

    on_server = Recorder()
    server.observe = on_server.observe
    async with Client(server=server, protocol_version="2025-11-25") as client:
        result = await client.call_tool("chatty", {}, progress=lambda *args: None)
    assert result["content"][0]["text"] == "done"
    sent = [e for e in on_server.events if e[1:2] == ("notification",)]
    assert sent == [
        ("opened", "notification", "notifications/message", False),
        ("finished", "notification", "notifications/message", False),
        ("opened", "notification", "notifications/progress", False),
        ("finished", "notification", "notifications/progress", False),
    ]


async def test_without_an_observer_the_session_has_no_hook() -> None:
    server = MCPServer(name="plain", version="1")
    async with Client(server=server, protocol_version="2025-11-25") as client:
        assert client.session.observe is None  # type: ignore[attr-defined]
    assert server.observe is None
