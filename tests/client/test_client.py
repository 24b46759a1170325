"""Client: the options it was made with, read back to make another like it."""

from __future__ import annotations

import httpx

from mcpkit import Client, MCPServer


def test_connection_options_make_an_equivalent_unconnected_client() -> None:
    def elicit(params: dict[str, object]) -> dict[str, object]:
        return {"action": "decline"}

    async def noop(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404)

    http = httpx.AsyncClient(transport=httpx.MockTransport(noop))
    client = Client(
        url="https://tools.example.com/mcp",
        headers={"X-Team": "blue"},
        http_client=http,
        timeout=7.0,
        client_info={"name": "me", "version": "2"},
        elicitation_handler=elicit,
        protocol_version="2025-06-18",
    )
    options = client.connection_options()
    assert options["url"] == "https://tools.example.com/mcp"
    assert options["headers"] == {"X-Team": "blue"}
    assert options["http_client"] is http
    assert options["elicitation_handler"] is elicit
    assert (options["timeout"], options["protocol_version"]) == (7.0, "2025-06-18")
    copy = Client(**options)
    assert copy.connection_options() == options
    assert not copy.connected
    # A legacy SSE URL reads as what it is.
    assert Client(url="http://h/sse").connection_options()["http_transport"] == "sse"


def test_connection_options_of_stdio_and_in_memory_clients() -> None:
    stdio = Client(command="node", args=["s.js"], env={"K": "v"}, cwd="/tmp")
    options = stdio.connection_options()
    assert (options["command"], list(options["args"]), options["env"], options["cwd"]) == (
        "node",
        ["s.js"],
        {"K": "v"},
        "/tmp",
    )
    assert options["url"] is None and options["server"] is None
    server = MCPServer(name="s", version="1")
    assert Client(server=server).connection_options()["server"] is server
