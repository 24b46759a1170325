"""2026-07-28 input rounds whose retries land on other nodes (docs/design/scale-out.md § 8).

``pay`` takes three rounds (confirm, then the charge inside ``ctx.once``, then a receipt
question); through the round-robin proxy each retry reaches the next node, which
replays the handler from the journal in the signed ``requestState``. The charge must
happen exactly once (the Redis counter read from outside), driven by mcpkit's client
and by the official SDK client.

They need every node to verify the others' ``requestState`` (the key shared through
Redis, or ``request_state_keys``): a node signing with a random key of its own fails
the second round with "requestState is invalid or expired". Run them alone with::

    PYTHONPATH=$PWD/src python3 -m pytest -q -p no:cacheprovider tests/cluster/test_input_rounds_across_nodes.py
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp
import pytest
from mcp import types

from mcpkit.client import Client
from tests.cluster.conftest import Cluster

TIMEOUT = 15.0
MODERN = "2026-07-28"
EXPECTED = "paid 3 (charge #1), receipt to ada@example.com"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def answer(message: str) -> dict[str, Any]:
    if message.startswith("Pay"):
        return {"ok": True}
    assert message.startswith("Where"), message
    return {"email": "ada@example.com"}


async def pay_with_mcpkit(cluster: Cluster) -> str:
    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": answer(params["message"])}

    async with Client(
        url=cluster.url,
        protocol_version=MODERN,
        supported_versions=(MODERN,),
        elicitation_handler=elicit,
        timeout=TIMEOUT,
    ) as client:
        result = await client.call_tool("pay", {"amount": 3})
    assert not result.get("isError"), result
    return str(result["content"][0]["text"])


async def pay_with_sdk(cluster: Cluster) -> str:
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content=answer(params.message))

    async with mcp.Client(cluster.url, elicitation_callback=elicit) as client:
        assert client.protocol_version == MODERN
        result = await client.call_tool("pay", {"amount": 3})
    block = result.content[0]
    assert isinstance(block, types.TextContent) and not result.is_error, result
    return block.text


@pytest.mark.parametrize("pay", [pay_with_mcpkit, pay_with_sdk], ids=["mcpkit", "sdk"])
async def test_pay_over_rounds_on_different_nodes_charges_once(cluster: Cluster, pay: Any) -> None:
    async with asyncio.timeout(TIMEOUT):
        text = await pay(cluster)
    rounds = [r for r in cluster.proxy.log if r.rpc == "tools/call"]
    served = [(r.backend, r.status) for r in rounds]
    assert text == EXPECTED, served
    assert len(rounds) == 3 and all(r.status == 200 for r in rounds), served
    assert len({r.backend for r in rounds}) >= 2, served  # the retries crossed nodes
    assert await cluster.paid() == 1
