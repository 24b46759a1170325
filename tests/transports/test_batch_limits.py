"""JSON-RPC batches (2025-03-26 only) over Streamable HTTP on a real socket: their bound.

A batch may hold at most ``ServerLimits(max_batch_size=...)`` messages (default 1000);
a bigger one is refused as a whole with one ``-32600`` error naming the limit, before
any member runs. Its bytes are bounded by the body limit (``max_body_size``). How a batch
within the limit is served without a task per member: tests/server/test_session_batches.py.
"""

from __future__ import annotations

from typing import Any

from mcpkit import ServerLimits
from mcpkit.server.session import DEFAULT_MAX_BATCH_SIZE
from mcpkit.transports.streamable_http import StreamableHTTPApp
from tests.transports.conftest import HTTPClient, demo_server


def _pings(count: int) -> list[dict[str, Any]]:
    return [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(count)]


async def test_a_batch_over_the_limit_is_refused_with_one_error_naming_it(
    serve_app: Any, make_client: Any
) -> None:
    assert DEFAULT_MAX_BATCH_SIZE == 1000
    url = await serve_app(StreamableHTTPApp(demo_server())) + "/mcp"
    client: HTTPClient = make_client(url, protocol_version="2025-03-26")
    await client.initialize()
    refused = await client.post(_pings(1001), accept="application/json")
    assert refused.status == 400
    (error,) = refused.messages
    assert error["id"] is None
    assert error["error"]["code"] == -32600
    assert "a batch of 1001 messages is over the limit of 1000" in error["error"]["message"]
    assert error["error"]["data"] == {"maxBatchSize": 1000}
    # At the limit: served, every member answered; the session is fine.
    served = await client.post(_pings(1000), accept="application/json")
    assert served.status == 200
    (answers,) = served.messages
    assert sorted(a["id"] for a in answers) == list(range(1000))
    assert (await client.request("ping")).result == {}


async def test_the_batch_limit_is_configurable(serve_app: Any, make_client: Any) -> None:
    url = (
        await serve_app(StreamableHTTPApp(demo_server(limits=ServerLimits(max_batch_size=3))))
        + "/mcp"
    )
    client: HTTPClient = make_client(url, protocol_version="2025-03-26")
    await client.initialize()
    refused = await client.post(_pings(4))  # an SSE-accepting client gets the same 400
    assert refused.status == 400
    assert refused.messages[0]["error"]["data"] == {"maxBatchSize": 3}
    served = await client.post(_pings(3))
    assert [sorted(a["id"] for a in m) for m in served.messages] == [[0, 1, 2]]
