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
