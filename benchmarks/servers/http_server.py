"""Serve one implementation's Streamable HTTP endpoint on uvicorn, all on the same settings.

    python http_server.py {minimal,mcpkit,sdk} {stateless,stateful} PORT
    python http_server.py {mcpkit-memory,mcpkit-redis} stateful PORT   # bench_cluster.py
    python http_server.py {mcpkit-def,mcpkit-inline} {stateless,stateful} PORT   # bench_sync.py
    python http_server.py mcpkit-otel-sdk stateful PORT   # instructions.py http-auto-sdk
    python http_server.py mcpkit-otel-sdk-batch stateful PORT   # http-auto-sdk-batch

One worker, uvloop, httptools, no access log: the same for every
implementation, so only the ASGI app differs. The endpoint is ``/mcp``.

``mcpkit-counted`` is mcpkit whose ``initializes`` tool says how many ``initialize``
requests it answered, ``mcpkit-proxy`` a proxy (``MCPServer.proxy``) of the endpoint
in ``BENCH_UPSTREAM``, and ``mcpkit-floor`` mcpkit whose ``echo`` makes one bare HTTP
round trip to that endpoint (``floor_tool.py``), all three for bench_proxy.py --http;
``fastmcp`` and ``fastmcp-proxy`` the same tool served by FastMCP and FastMCP's proxy of
``BENCH_UPSTREAM`` (a session per request, its default for a URL), and
``fastmcp-proxy-shared`` that proxy on one connected client (bench_proxy.py --http --peer).

``mcpkit-def`` is mcpkit with the tool written as a plain ``def`` (run in a
worker thread), ``mcpkit-inline`` the same with ``run_in_thread=False``.
``mcpkit-memory`` and ``mcpkit-redis`` are mcpkit with a store, i.e. with
resumable SSE streams: ``MCPServer(store=MemoryStore())`` or
``store=RedisStore($BENCH_REDIS_URL)``; ``BENCH_RESPONSE=sse`` answers
``tools/call`` on an SSE stream (``json_response=False``), else JSON.
"""

import sys
from pathlib import Path
from typing import Any

import uvicorn


async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def sync_echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def build(impl: str, mode: str) -> Any:
    stateless = mode == "stateless"
    if impl == "minimal":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from minimal_asgi import app

        return app
    if impl in ("mcpkit-otel-sdk", "mcpkit-otel-sdk-batch"):
        # The automatic telemetry: the SDK's tracer provider installed globally, spans
        # dropped by the exporter (instructions.py http-auto-sdk, http-auto-sdk-batch).
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SimpleSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        class Drop(SpanExporter):
            def export(self, spans: Any) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        batch = impl == "mcpkit-otel-sdk-batch"
        provider.add_span_processor((BatchSpanProcessor if batch else SimpleSpanProcessor)(Drop()))
        trace.set_tracer_provider(provider)
        impl = "mcpkit"
    if impl == "mcpkit":
        from mcpkit import MCPServer

        server = MCPServer(name="bench", version="1.0.0")
        server.tool(echo)
        return server.http_app("/mcp", stateless=stateless, json_response=True)
    if impl == "mcpkit-counted":
        from mcpkit import MCPServer

        counted = {"initialize": 0}

        async def count(ctx: Any, call_next: Any) -> Any:
            if ctx.method == "initialize":
                counted["initialize"] += 1
            return await call_next(ctx)

        server = MCPServer(name="bench", version="1.0.0", middleware=[count])
        server.tool(echo)

        @server.tool
        def initializes() -> int:
            """How many initialize requests this server answered."""
            return counted["initialize"]

        return server.http_app("/mcp", stateless=stateless, json_response=True)
    if impl == "mcpkit-proxy":
        import os

        from mcpkit import MCPServer

        front = MCPServer.proxy(os.environ["BENCH_UPSTREAM"], name="bench-proxy")
        return front.http_app("/mcp", stateless=stateless, json_response=True)
    if impl == "mcpkit-floor":
        import os

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from floor_tool import bare_round_trip

        from mcpkit import MCPServer

        server = MCPServer(name="bench-floor", version="1.0.0")
        server.tool(bare_round_trip(os.environ["BENCH_UPSTREAM"]), name="echo")
        return server.http_app("/mcp", stateless=stateless, json_response=True)
    if impl in ("mcpkit-def", "mcpkit-inline"):
        from mcpkit import MCPServer

        server = MCPServer(name="bench", version="1.0.0")
        server.tool(sync_echo, name="echo", run_in_thread=impl == "mcpkit-def")
        return server.http_app("/mcp", stateless=stateless, json_response=True)
    if impl in ("mcpkit-memory", "mcpkit-redis"):
        import os

        from mcpkit import MCPServer
        from mcpkit.stores import MemoryStore

        if impl == "mcpkit-redis":
            from mcpkit.stores.redis import RedisStore

            store: Any = RedisStore(os.environ["BENCH_REDIS_URL"], prefix="bench:")
        else:
            store = MemoryStore()
        server = MCPServer(name="bench", version="1.0.0", store=store)
        server.tool(echo)
        sse = os.environ.get("BENCH_RESPONSE", "json") == "sse"
        return server.http_app("/mcp", stateless=stateless, json_response=not sse)
    if impl == "mcpkit-auth":
        # A protected server (bench_auth.py): JWTs checked against the JWKS in
        # BENCH_JWKS_FILE; the verifier caches a verified token, as deployed.
        import json
        import os

        from mcpkit import MCPServer
        from mcpkit.auth import JWTVerifier, ProtectedResource

        server = MCPServer(name="bench", version="1.0.0")
        server.tool(echo)
        with open(os.environ["BENCH_JWKS_FILE"]) as f:
            jwks = json.load(f)
        resource = os.environ["BENCH_RESOURCE"]
        auth = ProtectedResource(
            resource=resource,
            authorization_servers=[os.environ["BENCH_ISSUER"]],
            verifier=JWTVerifier(issuer=os.environ["BENCH_ISSUER"], audience=resource, keys=jwks),
        )
        return server.http_app("/mcp", stateless=stateless, json_response=True, auth=auth)
    if impl == "sdk":
        try:
            from mcp.server.mcpserver import MCPServer as Server
        except ImportError:  # mcp 1.x
            from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]

        sdk = Server("bench")
        sdk.tool()(echo)
        return sdk.streamable_http_app(json_response=True, stateless_http=stateless)
    if impl == "fastmcp-proxy-shared":
        return _fastmcp_shared(stateless)
    if impl in ("fastmcp", "fastmcp-proxy"):
        # The best peer's figures for bench_proxy.py --http --peer: FastMCP serving the
        # tool itself, and FastMCP's proxy (create_proxy) of the endpoint in BENCH_UPSTREAM.
        import os

        from fastmcp import FastMCP
        from fastmcp.server import create_proxy

        if impl == "fastmcp":
            fast: Any = FastMCP("bench")
            fast.tool(echo)
        else:
            fast = create_proxy(os.environ["BENCH_UPSTREAM"], name="bench-proxy")
        return fast.http_app("/mcp", json_response=True, stateless_http=stateless)
    raise SystemExit(f"unknown implementation {impl!r}")


def _fastmcp_shared(stateless: bool) -> Any:
    """FastMCP's proxy on one connected client shared by every request, its fastest
    set-up (FastMCP makes a session per request unless handed a connected client). The
    client connects in the app's lifespan, so the proxy is made there too."""
    import os

    from fastmcp import Client
    from fastmcp.server import create_proxy

    made: dict[str, Any] = {}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            async with Client(os.environ["BENCH_UPSTREAM"]) as client:
                proxy = create_proxy(client, name="bench-proxy")
                made["app"] = proxy.http_app("/mcp", json_response=True, stateless_http=stateless)
                await made["app"](scope, receive, send)
            return
        await made["app"](scope, receive, send)

    return app


def main() -> None:
    impl, mode, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    uvicorn.run(
        build(impl, mode),
        host="127.0.0.1",
        port=port,
        workers=1,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
        lifespan="auto",
    )


if __name__ == "__main__":
    main()
