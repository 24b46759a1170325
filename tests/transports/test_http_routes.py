"""Extra HTTP routes over real sockets: ``server.custom_route`` and ``/healthz``/``/readyz``."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import uvicorn

from mcpkit import MCPServer
from mcpkit.errors import ConfigurationError
from mcpkit.stores.redis import RedisStore
from mcpkit.transports.asgi import end_all_streams
from mcpkit.transports.http_routes import HealthOptions, HTTPRequest, HTTPResponse
from tests.auth.protected_support import bearer, initialize_message, protected
from tests.redis_server import RedisServer
from tests.transports.conftest import BOTH, TIMEOUT, _TestServer, demo_server, run_app

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        yield client


def routed_server() -> MCPServer:
    server = demo_server()

    @server.custom_route("/status")
    async def status(request: HTTPRequest) -> dict[str, Any]:
        return {"path": request.path, "q": request.query, "agent": request.headers["x-probe"]}

    @server.custom_route("/echo", methods=["POST", "PUT"])
    async def echo(request: HTTPRequest) -> HTTPResponse:
        data = await request.json()
        return HTTPResponse.json({"method": request.method, "got": data}, 201, [("X-Seen", "1")])

    @server.custom_route("/hello", public=True)
    async def hello(request: HTTPRequest) -> str:
        return "hello"

    @server.custom_route("/whoami")
    async def whoami(request: HTTPRequest) -> dict[str, Any]:
        info = request.scope.get("mcpkit.auth")  # the token's AuthInfo on a protected server
        return {"subject": info.subject if info is not None else None}

    @server.custom_route("/odd")
    async def odd(request: HTTPRequest) -> Any:
        return 42

    @server.custom_route("/broken")
    async def broken(request: HTTPRequest) -> HTTPResponse:
        raise RuntimeError("secret detail")

    return server


# -- custom routes -------------------------------------------------------------------------------


async def test_custom_routes_answer_beside_the_mcp_endpoint(http: httpx.AsyncClient) -> None:
    async with run_app(routed_server().http_app()) as base:
        got = await http.get(f"{base}/status?a=1&b=", headers={"X-Probe": "k"})
        assert got.status_code == 200
        assert got.headers["content-type"] == "application/json"
        assert got.json() == {"path": "/status", "q": {"a": "1", "b": ""}, "agent": "k"}

        posted = await http.post(f"{base}/echo", content=orjson.dumps({"n": 2}))
        assert (posted.status_code, posted.headers["x-seen"]) == (201, "1")
        assert posted.json() == {"method": "POST", "got": {"n": 2}}
        put = await http.put(f"{base}/echo", content=b"[1]")
        assert put.json() == {"method": "PUT", "got": [1]}

        text = await http.get(f"{base}/hello")
        assert (text.status_code, text.text) == (200, "hello")
        head = await http.head(f"{base}/hello")  # GET brings HEAD: headers, no body
        assert (head.status_code, head.headers["content-length"], head.content) == (200, "5", b"")

        # The MCP endpoint is unaffected.
        mcp = await http.post(f"{base}/mcp", json=INIT, headers={"accept": BOTH})
        assert mcp.status_code == 200 and "mcp-session-id" in mcp.headers


async def test_a_method_the_route_does_not_take_gets_405_and_other_paths_404(
    http: httpx.AsyncClient,
) -> None:
    async with run_app(routed_server().http_app()) as base:
        wrong = await http.delete(f"{base}/echo")
        assert wrong.status_code == 405
        assert wrong.headers["allow"] == "POST, PUT"
        assert (await http.post(f"{base}/status")).headers["allow"] == "GET, HEAD"
        missing = await http.get(f"{base}/nowhere")
        assert (missing.status_code, missing.text) == (404, "Not Found")
        assert (await http.get(f"{base}/status/")).status_code == 404  # exact paths only


async def test_a_failing_route_answers_500_without_its_details(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    async with run_app(routed_server().http_app()) as base:
        got = await http.get(f"{base}/broken")
        assert got.status_code == 500 and "secret" not in got.text
    assert "secret detail" in caplog.text
    async with run_app(routed_server().http_app()) as base:
        not_json = await http.post(f"{base}/echo", content=b"{nope")
        assert not_json.status_code == 400
        odd = await http.get(f"{base}/odd")  # returned neither a response nor JSON nor text
        assert odd.status_code == 500
    assert "must return an HTTPResponse" in caplog.text
    too_big = routed_server().http_app(max_body_size=8)
    async with run_app(too_big) as base:
        refused = await http.post(f"{base}/echo", content=b"x" * 100)
        assert refused.status_code == 413


async def test_the_legacy_sse_app_serves_the_same_routes(http: httpx.AsyncClient) -> None:
    async with run_app(routed_server().sse_app()) as base:
        assert (await http.get(f"{base}/hello")).text == "hello"
        assert (await http.get(f"{base}/healthz")).json() == {"status": "ok"}
        assert (await http.get(f"{base}/readyz")).json() == {"status": "ready"}
        assert (await http.get(f"{base}/nowhere")).status_code == 404


def test_a_route_may_not_shadow_the_mcp_endpoint_or_the_metadata() -> None:
    server = demo_server()

    @server.custom_route("/mcp")
    async def mcp(request: HTTPRequest) -> str:
        return "mine"

    with pytest.raises(ConfigurationError, match="shadow the MCP endpoint"):
        server.http_app()
    server.http_app("/api")  # elsewhere the route is fine
    with pytest.raises(ConfigurationError, match="shadow the MCP endpoint"):
        server.sse_app(message_path="/mcp")

    server = demo_server()

    @server.custom_route("/.well-known/oauth-protected-resource/mcp", public=True)
    async def metadata(request: HTTPRequest) -> str:
        return "fake"

    server.http_app()  # unprotected: no metadata to shadow
    with pytest.raises(ConfigurationError, match=r"metadata \(RFC 9728\)"):
        server.http_app(auth=protected())


def test_a_route_on_a_probe_path_is_refused_unless_the_probe_moves() -> None:
    server = demo_server()

    @server.custom_route("/healthz")
    async def mine(request: HTTPRequest) -> str:
        return "mine"

    with pytest.raises(ConfigurationError, match="shadows the built-in probe"):
        server.http_app()
    server.http_app(health=HealthOptions(healthz="/livez"))
    server.http_app(health=False)


def test_route_declarations_are_checked() -> None:
    server = MCPServer(name="s", version="1")
    with pytest.raises(ConfigurationError, match="must start with '/'"):
        server.custom_route("status")
    with pytest.raises(ConfigurationError, match="at least one method"):
        server.custom_route("/x", methods=[])
    server.custom_route("/x")(lambda request: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigurationError, match="already declared"):
        server.custom_route("/x")
    with pytest.raises(ConfigurationError, match="must differ"):
        HealthOptions(healthz="/h", readyz="/h")
    with pytest.raises(ConfigurationError, match="health must be"):
        server.http_app(health="yes")


# -- the probes ----------------------------------------------------------------------------------


async def test_probes_answer_and_can_be_renamed_or_turned_off(http: httpx.AsyncClient) -> None:
    async with run_app(demo_server().http_app()) as base:
        assert (await http.get(f"{base}/healthz")).json() == {"status": "ok"}
        ready = await http.get(f"{base}/readyz")
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        assert (await http.post(f"{base}/healthz")).status_code == 405
    renamed = HealthOptions(healthz="/live", readyz=None)
    async with run_app(demo_server().http_app(health=renamed)) as base:
        assert (await http.get(f"{base}/live")).status_code == 200
        assert (await http.get(f"{base}/healthz")).status_code == 404
        assert (await http.get(f"{base}/readyz")).status_code == 404
    async with run_app(demo_server().http_app(health=False)) as base:
        assert (await http.get(f"{base}/healthz")).status_code == 404


async def test_probes_and_public_routes_need_no_token_on_a_protected_server(
    http: httpx.AsyncClient,
) -> None:
    async with run_app(routed_server().http_app(auth=protected())) as base:
        assert (await http.get(f"{base}/healthz")).status_code == 200
        assert (await http.get(f"{base}/readyz")).json() == {"status": "ready"}
        assert (await http.get(f"{base}/hello")).text == "hello"  # public=True
        # Everything else still needs the token, custom routes included.
        assert (await http.get(f"{base}/status", headers={"X-Probe": "k"})).status_code == 401
        assert (await http.post(f"{base}/mcp", json=initialize_message())).status_code == 401
        assert (await http.get(f"{base}/nowhere")).status_code == 401
        authed = await http.get(f"{base}/status", headers={"X-Probe": "k", **bearer("alice-rw")})
        assert authed.status_code == 200
        assert (await http.get(f"{base}/whoami", headers=bearer("bob-rw"))).json() == {
            "subject": "bob"
        }
        # A public route's name does not open the metadata path or anything else.
        meta = await http.get(f"{base}/.well-known/oauth-protected-resource/mcp")
        assert meta.json()["resource"] == "https://mcp.example.com/mcp"


async def test_probes_skip_the_host_check_custom_routes_do_not(http: httpx.AsyncClient) -> None:
    # A kubelet probes by pod IP: its Host is not one of the public names.
    app = routed_server().http_app(allowed_hosts=["mcp.example.com"])
    async with run_app(app) as base:
        assert (await http.get(f"{base}/healthz")).status_code == 200
        assert (await http.get(f"{base}/readyz")).status_code == 200
        assert (await http.get(f"{base}/hello")).status_code == 421
        assert (
            await http.post(f"{base}/mcp", json=INIT, headers={"accept": BOTH})
        ).status_code == 421
        named = await http.get(f"{base}/hello", headers={"host": "mcp.example.com"})
        assert named.status_code == 200


@contextlib.asynccontextmanager
async def run_without_lifespan(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` on uvicorn with ``lifespan="off"``: a host that never starts it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = _TestServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(TIMEOUT):
            while not server.started:
                await asyncio.sleep(0.005)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        async with asyncio.timeout(TIMEOUT):
            await task
        sock.close()


async def test_readyz_is_503_until_the_lifespan_has_started(http: httpx.AsyncClient) -> None:
    async with run_without_lifespan(demo_server().http_app()) as base:
        assert (await http.get(f"{base}/healthz")).status_code == 200
        ready = await http.get(f"{base}/readyz")
        assert ready.status_code == 503
        assert ready.json() == {"status": "not ready", "checks": {"lifespan": "starting"}}


async def test_readyz_is_503_once_the_server_drains(http: httpx.AsyncClient) -> None:
    app = demo_server().http_app()
    async with run_app(app) as base:
        assert (await http.get(f"{base}/readyz")).status_code == 200
        end_all_streams()  # what serve() does on SIGTERM or a drain, before the lifespan ends
        draining = await http.get(f"{base}/readyz")
        assert draining.status_code == 503
        assert draining.json()["checks"] == {"lifespan": "stopping"}
        assert (await http.get(f"{base}/healthz")).status_code == 200  # still up


async def test_readyz_is_503_once_the_lifespan_shutdown_began() -> None:
    app = demo_server().http_app()
    sent: list[dict[str, Any]] = []
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for kind in ("lifespan.startup", "lifespan.shutdown"):
        inbox.put_nowait({"type": kind})

    async def send(message: Any) -> None:
        if message["type"] == "lifespan.shutdown.complete":
            sent.append(await probe())

    async def probe() -> dict[str, Any]:
        out: list[Any] = []

        async def collect(message: Any) -> None:
            out.append(message)

        scope = {"type": "http", "method": "GET", "path": "/readyz", "headers": []}
        await app(scope, inbox.get, collect)
        return {"status": out[0]["status"], "body": orjson.loads(out[1]["body"])}

    await app({"type": "lifespan"}, inbox.get, send)
    assert sent == [
        {"status": 503, "body": {"status": "not ready", "checks": {"lifespan": "stopping"}}}
    ]


# -- readiness and Redis -------------------------------------------------------------------------


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server of this test's own, which the test stops."""
    server = RedisServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_readyz_is_503_when_redis_is_down(
    http: httpx.AsyncClient, own_redis: RedisServer
) -> None:
    store = RedisStore(own_redis.url, prefix="readyz:", connect_timeout=0.5, timeout=0.5)
    server = demo_server(store=store)
    app = server.http_app(health=HealthOptions(store_timeout=0.5))
    try:
        async with run_app(app) as base:
            assert (await http.get(f"{base}/readyz")).json() == {"status": "ready"}
            own_redis.stop()
            started = asyncio.get_running_loop().time()
            down = await http.get(f"{base}/readyz")
            assert asyncio.get_running_loop().time() - started < 2.0
            assert down.status_code == 503
            assert down.json() == {"status": "not ready", "checks": {"store": "unreachable"}}
            assert str(own_redis.port) not in down.text  # the address stays in the log
            assert (await http.get(f"{base}/healthz")).status_code == 200
            own_redis.start()
            assert (await http.get(f"{base}/readyz")).status_code == 200
    finally:
        await store.aclose()
