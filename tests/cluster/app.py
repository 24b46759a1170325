"""The server every node of the multi-node tests runs (docs/design/scale-out.md § 15.1).

Loadable as ``mcpkit run tests/cluster/app.py:server`` (or by :mod:`tests.cluster.node`).
It has no store of its own: the launcher (``--redis`` / ``MCPKIT_REDIS_URL``) gives it
a ``RedisStore``. Each tool exercises one cross-node path:

* ``whoami`` tells which node (process) served a request;
* ``slow_count`` streams progress and log notifications (resumption, kill a node);
* ``ask_name``, ``summarize``, ``list_roots`` send a request to the client (the answer
  may come back through another node);
* ``add_tool``, ``touch_resource`` raise ``tools/list_changed`` and
  ``resources/updated`` (fan-out to streams held by other nodes);
* ``pay`` asks for a confirmation, charges once inside ``ctx.once`` (a Redis counter
  under ``<prefix>paid``, read from outside by the tests), then asks for a receipt
  address: three rounds in 2026-07-28, the charge exactly once whichever node serves each;
* ``pause_and_finish`` closes its own SSE stream mid-call (SEP-1699): the client resumes
  with ``Last-Event-ID``, on another node through the proxy; ``pause_then_ask`` asks
  its question on the resumed stream;
* ``guarded_wait`` records in Redis (``<prefix>run:<tag>``) that it started, then that
  it completed or was cancelled, so a test sees a cancellation stop it.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from mcpkit import Context, MCPServer

#: Keys of the ``pay`` counter, under the node's Redis prefix.
PAID_COUNT_KEY = "paid"
PAID_TOTAL_KEY = "paid:total"
#: ``guarded_wait``'s state, ``<prefix>run:<tag>``: started, completed or cancelled.
RUN_KEY = "run:"

NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
RECEIPT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"email": {"type": "string"}},
    "required": ["email"],
}

server = MCPServer(
    name="cluster-node",
    version="1.0.0",
    instructions="The multi-node test server: each tool exercises one cross-node path.",
)


@server.tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool
async def whoami() -> int:
    """The process id of the node serving this request."""
    return os.getpid()


@server.tool
async def slow_count(n: int, delay: float, ctx: Context) -> int:
    """Count to n, reporting progress and logging each step, delay seconds apart."""
    for i in range(1, n + 1):
        await ctx.progress(i, n, f"step {i}")
        await ctx.info(f"counted {i}")
        if i < n:
            await asyncio.sleep(delay)
    return n


@server.tool
async def ask_name(ctx: Context) -> str:
    """Ask the user's name (elicitation) and return it."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="name")
    if answer.action != "accept" or answer.content is None:
        return f"no name ({answer.action})"
    return str(answer.content["name"])


@server.tool
async def summarize(text: str, ctx: Context) -> str:
    """Ask the client's LLM to summarize the text (sampling) and return its answer."""
    result = await ctx.sample(f"Summarize: {text}", max_tokens=100, key="summary")
    content = result.get("content")
    return str(content.get("text", "")) if isinstance(content, dict) else ""


@server.tool
async def list_roots(ctx: Context) -> str:
    """The URIs of the client's roots, one per line."""
    return "\n".join(root.uri for root in await ctx.list_roots(key="roots"))


@server.tool
async def add_tool(name: str) -> str:
    """Register a tool named name (it echoes), then announce tools/list_changed."""

    async def added(text: str = "") -> str:
        return f"{name}: {text}"

    server.add_tool(added, name=name, description=f"Added at run time as {name}.")
    await server.tools.notify_list_changed()
    return f"added {name}"


@server.tool
async def touch_resource(uri: str) -> str:
    """Announce resources/updated for uri to the sessions subscribed to it."""
    await server.resources.notify_updated(uri)
    return f"touched {uri}"


@server.tool
async def pause_and_finish(pause: float, ctx: Context) -> str:
    """Report step 1, close this request's SSE stream, then report steps 2 and 3 and finish."""
    await ctx.progress(1, 3, "before the close")
    await ctx.info("before the close")
    await ctx.close_sse_stream()
    for step in (2, 3):
        await asyncio.sleep(pause)
        await ctx.progress(step, 3, f"after the close {step}")
        await ctx.info(f"after the close {step}")
    return "finished"


@server.tool
async def pause_then_ask(ctx: Context) -> str:
    """Close this request's SSE stream, then ask the user's name on the resumed stream."""
    await ctx.info("before the close")
    await ctx.close_sse_stream()
    await asyncio.sleep(0.1)
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="name")
    await ctx.info("after the answer")
    return f"resumed and asked {(answer.content or {}).get('name')}"


@server.tool
async def guarded_wait(tag: str, seconds: float) -> str:
    """Wait, recording under ``<prefix>run:<tag>`` started, then completed or cancelled."""
    client, prefix = _counter()
    key = prefix + RUN_KEY + tag
    await client.set(key, "started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        await asyncio.shield(client.set(key, "cancelled"))
        raise
    await client.set(key, "completed")
    return "completed"


@server.resource("note://1", mime_type="text/plain", description="A note to subscribe to.")
def note() -> str:
    return "note one"


# -- pay: exactly once across nodes --------------------------------------------------------------

_redis: Any = None


def _counter() -> tuple[Any, str]:
    """The node's Redis client (made on first use, in the serving loop) and key prefix."""
    global _redis
    url = os.environ.get("MCPKIT_REDIS_URL")
    if not url:
        raise RuntimeError("pay needs MCPKIT_REDIS_URL (the cluster fixture sets it)")
    if _redis is None:
        from redis.asyncio import Redis

        _redis = Redis.from_url(url)
    return _redis, os.environ.get("MCPKIT_REDIS_PREFIX", "mcpkit:")


async def _charge(amount: int) -> int:
    """The side effect: count the charge in Redis; returns how many charges there were."""
    client, prefix = _counter()
    async with client.pipeline(transaction=True) as pipe:
        pipe.incr(prefix + PAID_COUNT_KEY)
        pipe.incrby(prefix + PAID_TOTAL_KEY, amount)
        count, _ = await pipe.execute()
    return int(count)


@server.tool
async def pay(amount: int, ctx: Context) -> str:
    """Confirm, charge amount exactly once (ctx.once), then ask where to send the receipt."""
    confirm = await ctx.elicit(f"Pay {amount}?", CONFIRM_SCHEMA, key="confirm")
    if confirm.action != "accept" or not (confirm.content or {}).get("ok"):
        return "not paid"
    charges = await ctx.once("charge", _charge, amount)
    receipt = await ctx.elicit("Where should the receipt go?", RECEIPT_SCHEMA, key="receipt")
    email = (receipt.content or {}).get("email", "nowhere")
    return f"paid {amount} (charge #{charges}), receipt to {email}"
