"""The 2026-07-28 era on stdio: server/discover as the probe, then stateless requests."""

from __future__ import annotations

from tests.transports.stdio_peer import LAUNCHERS, StdioPeer

V = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def test_discover_probe_then_stateless_calls_over_a_real_pipe() -> None:
    peer = await StdioPeer.spawn(LAUNCHERS["run_stdio"])
    try:
        peer.revision = V  # every message the server writes is checked against this schema
        found = await peer.request("server/discover", {"_meta": META})
        assert V in found["result"]["supportedVersions"]
        assert found["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == (
            "stdio-fixture"
        )
        listed = await peer.request("tools/list", {"_meta": META})
        assert listed["result"]["resultType"] == "complete" and "ttlMs" in listed["result"]
        added = await peer.request(
            "tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}, "_meta": META}
        )
        assert added["result"]["structuredContent"]["total"] == 42
        removed = await peer.request("ping", {"_meta": META})
        assert removed["error"]["code"] == -32601
    finally:
        await peer.kill()


async def test_notifications_cancelled_stops_a_stateless_request() -> None:
    peer = await StdioPeer.spawn(LAUNCHERS["run_stdio"])
    try:
        peer.revision = V
        meta = {**META, "progressToken": "p"}
        await peer.send(
            {
                "jsonrpc": "2.0",
                "id": "slow-1",
                "method": "tools/call",
                "params": {"name": "slow", "arguments": {"seconds": 30}, "_meta": meta},
            }
        )
        started = await peer.recv()  # the tool's first progress: it is running
        assert started["method"] == "notifications/progress"
        await peer.notify("notifications/cancelled", {"requestId": "slow-1", "reason": "test"})
        after = await peer.request(
            "tools/call", {"name": "echo", "arguments": {"text": "after"}, "_meta": META}
        )
        assert after["result"]["content"][0]["text"] == "after"
        await peer.close_stdin()
        rest = await peer.read_rest()
        assert all(m.get("id") != "slow-1" for m in rest), rest
        assert await peer.wait() == 0
    finally:
        await peer.kill()
