"""Every HTTP read of the OAuth client is bounded: a size cap and a deadline for the whole exchange.

Real peers on real sockets (uvicorn); one endpoint at a time answers with a body
that never ends, declares 1 GiB, or trickles a byte every 50 ms. The client must
fail fast with :class:`OAuthResponseTooLarge` / :class:`OAuthResponseTimeout`
naming the endpoint, having read (and the server having sent) next to nothing
of the body.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from mcpkit.auth.client import (
    ClientCredentials,
    EnterpriseAuth,
    HeadlessAuthorizer,
    MemoryTokenStorage,
)
from mcpkit.auth.client.discovery import discover_resource
from mcpkit.auth.client.exchange import ExchangePolicy, is_loopback
from mcpkit.client import Client
from mcpkit.errors import (
    AuthorizationFailed,
    ConfigurationError,
    OAuthResponseTimeout,
    OAuthResponseTooLarge,
)
from mcpkit.server.server import MCPServer
from tests.auth.client import oauth_peers as peers
from tests.auth.client.hostile import Hostile, Recorder
from tests.auth.client.world import REDIRECT, world
from tests.client.http_servers import serve

GUARD = 15.0  # without the bounds these tests hang: fail them instead
# The deadline of a trickle case. Each exchange of the flow has it, the healthy ones too:
# 2 s leaves them room on a loaded machine while the trickle (a byte per 50 ms) never ends.
DEADLINE = 2.0
MIB = 1 << 20

# (peer, method, path) of every read of the authorization code flow.
FLOW_READS = {
    "resource metadata (RFC 9728)": ("rs", "GET", "/.well-known/oauth-protected-resource/mcp"),
    "AS metadata (RFC 8414)": ("as", "GET", "/.well-known/oauth-authorization-server"),
    "registration (RFC 7591)": ("as", "POST", "/register"),
    "authorization endpoint (headless)": ("as", "GET", "/authorize"),
    "token endpoint (code)": ("as", "POST", "/token"),
}


def expected(mode: str) -> type[AuthorizationFailed]:
    return OAuthResponseTimeout if mode == "trickle" else OAuthResponseTooLarge


async def run_flow(place: str, mode: str, **oauth: Any) -> tuple[Hostile, BaseException, float]:
    role, method, path = FLOW_READS[place]
    hostile: list[Hostile] = []

    def wrap(peer: str, app: Any) -> Any:
        if peer != role:
            return app
        hostile.append(Hostile(app, method, path, mode))
        return hostile[0]

    timeout = DEADLINE if mode == "trickle" else 30.0
    async with world(wrap=wrap) as w:
        auth = w.oauth(
            timeout=timeout,
            authorizer=HeadlessAuthorizer(REDIRECT, timeout=timeout),
            **oauth,
        )
        started = time.monotonic()
        with pytest.raises(AuthorizationFailed) as caught:
            async with asyncio.timeout(GUARD), w.client(auth) as client:
                await client.list_tools()
        return hostile[0], caught.value, time.monotonic() - started


@pytest.mark.parametrize("mode", ["endless", "trickle"])
@pytest.mark.parametrize("place", list(FLOW_READS))
async def test_every_read_of_the_code_flow_is_bounded(place: str, mode: str) -> None:
    hostile, error, elapsed = await run_flow(place, mode)
    assert isinstance(error, expected(mode)), error
    assert hostile.hits == 1
    assert error.url.endswith(hostile.path) and error.url in str(error)
    if mode == "trickle":
        assert error.error == "response_timeout"
        assert DEADLINE * 0.9 <= elapsed < DEADLINE + 6.0  # one deadline, not one per byte
        assert hostile.sent < 100  # about 20 bytes came, each well within a read timeout
    else:
        assert error.error == "response_too_large"
        assert elapsed < 5.0  # the OAuth timeout was 30 s: the cap stopped it
        assert hostile.sent < 32 * MIB  # the cap plus what sat in socket buffers


async def test_an_endless_token_answer_costs_about_the_cap_in_memory() -> None:
    tracemalloc.start()
    try:
        hostile, error, _ = await run_flow(
            "token endpoint (code)", "endless", max_response_size=256 * 1024
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(error, OAuthResponseTooLarge) and error.limit == 256 * 1024
    assert "max_response_size (256 KiB)" in str(error)
    assert peak < 24 * MIB, f"peak {peak / MIB:.1f} MiB"
    assert hostile.sent < 32 * MIB


async def test_a_declared_gigabyte_is_refused_before_its_body_is_read() -> None:
    hostile, error, elapsed = await run_flow("token endpoint (code)", "declared")
    assert isinstance(error, OAuthResponseTooLarge)
    assert elapsed < 5.0
    assert hostile.sent < 32 * MIB  # of the 1 GiB it announced


@pytest.mark.parametrize("mode", ["endless", "trickle"])
async def test_a_refresh_that_never_ends_fails_fast_and_the_flow_authorizes_again(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcpkit.auth.client")
    hostile: list[Hostile] = []

    def wrap(peer: str, app: Any) -> Any:
        if peer == "as":
            hostile.append(Hostile(app, "POST", "/token", mode, active=False))
            return hostile[0]
        return app

    storage = MemoryTokenStorage()
    async with world(wrap=wrap) as w:
        auth = w.oauth(storage=storage, timeout=DEADLINE)
        async with w.client(auth) as client:
            await client.list_tools()
        tokens = await storage.load_tokens(w.url)
        assert tokens is not None and tokens.refresh_token
        await storage.save_tokens(w.url, dataclasses.replace(tokens, expires_at=time.time()))
        hostile[0].active = True  # the refresh meets the hostile answer
        started = time.monotonic()
        async with asyncio.timeout(GUARD), w.client(auth) as client:
            await client.list_tools()
        elapsed = time.monotonic() - started
    code = "response_timeout" if mode == "trickle" else "response_too_large"
    assert f"failed ({code})" in caplog.text
    assert hostile[0].hits >= 1
    assert elapsed < 4.0 + (DEADLINE + 1.0) * hostile[0].hits  # each attempt: a deadline at most


# -- the machine-to-machine and enterprise reads -------------------------------------------


async def client_credentials_case(mode: str) -> tuple[Hostile, BaseException]:
    auth_server = peers.AuthServer(secrets={"svc": "pw"})
    hostile = Hostile(auth_server, "POST", "/token", mode)
    protected = peers.ProtectedMCP(peers_server(), auth_server)
    timeout = DEADLINE if mode == "trickle" else 30.0
    auth = ClientCredentials("svc", client_secret="pw", timeout=timeout)
    async with peers.running(hostile), peers.running(protected, path="/mcp") as url:
        return hostile, await failure(url, auth)


async def enterprise_case(mode: str, *, discover: bool) -> tuple[Hostile, BaseException]:
    idp = peers.IdentityProvider(as_client_id="mcp-app")
    path = "/.well-known/openid-configuration" if discover else "/token"
    hostile = Hostile(idp, "GET" if discover else "POST", path, mode)
    auth_server = peers.AuthServer(grant_types=[peers.JWT_BEARER], secrets={"mcp-app": "pw"})
    protected = peers.ProtectedMCP(peers_server(), auth_server)
    timeout = DEADLINE if mode == "trickle" else 30.0
    async with (
        peers.running(hostile),
        peers.running(auth_server),
        peers.running(protected, path="/mcp") as url,
    ):
        where = (
            {"idp_issuer": idp.issuer}
            if discover
            else {"idp_token_endpoint": f"{idp.issuer}/token"}
        )
        auth = EnterpriseAuth(
            client_id="mcp-app",
            client_secret="pw",
            id_token=idp.id_token(),
            idp_client_id=idp.client_id,
            timeout=timeout,
            **where,
        )
        return hostile, await failure(url, auth)


def peers_server() -> MCPServer:
    server = MCPServer(name="protected", version="1.0.0")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    return server


async def failure(url: str, auth: Any) -> BaseException:
    with pytest.raises(AuthorizationFailed) as caught:
        async with asyncio.timeout(GUARD), Client(url=url, auth=auth, timeout=GUARD) as client:
            await client.list_tools()
    return caught.value


MACHINE_READS: dict[str, Callable[[str], Any]] = {
    "client credentials token": client_credentials_case,
    "IdP token exchange": lambda mode: enterprise_case(mode, discover=False),
    "IdP discovery": lambda mode: enterprise_case(mode, discover=True),
}


@pytest.mark.parametrize("mode", ["endless", "trickle"])
@pytest.mark.parametrize("place", list(MACHINE_READS))
async def test_every_read_of_the_machine_flows_is_bounded(place: str, mode: str) -> None:
    started = time.monotonic()
    hostile, error = await MACHINE_READS[place](mode)
    elapsed = time.monotonic() - started
    assert isinstance(error, expected(mode)), error
    assert hostile.hits == 1 and error.url.endswith(hostile.path)
    assert elapsed < DEADLINE + 6.0
    assert hostile.sent < (100 if mode == "trickle" else 32 * MIB)


# -- the policy itself ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"max_response_size": 10},
        {"max_response_size": 1.5e6},
        {"timeout": 0},
        {"timeout": True},
        {"allow_insecure_http": "yes"},
    ],
)
def test_bad_bounds_are_configuration_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        ExchangePolicy(**options)
    with pytest.raises(ConfigurationError):
        ClientCredentials("svc", client_secret="pw", **options)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST.", True),
        ("localhost.example.com", False),
        ("10.0.0.1", False),
        ("192.0.2.2", False),
        ("::ffff:8.8.8.8", False),
        ("as.example.com", False),
        ("", False),
        (None, False),
    ],
)
def test_loopback_hosts(host: str | None, loopback: bool) -> None:
    assert is_loopback(host) is loopback


# -- https only (OAuth 2.1 § 1.5), loopback excepted -----------------------------------------
#
# The endpoints on "other hosts" are names no resolver knows: the OAuth client's own httpx
# client routes them to a Recorder on a loopback port through a forwarding proxy, so a
# request that leaves the client is seen there, with its headers and body.


@contextlib.asynccontextmanager
async def elsewhere() -> AsyncIterator[tuple[Recorder, httpx.AsyncClient]]:
    recorder = Recorder()
    async with serve(recorder, path="") as base:
        proxy = httpx.AsyncHTTPTransport(proxy=base)
        mounts = {
            f"http://{host}": proxy
            for host in ("as.example.test", "idp.example.test", "rs.example.test")
        }
        async with httpx.AsyncClient(mounts=mounts, timeout=GUARD) as http:
            yield recorder, http


async def test_the_recorder_sees_what_reaches_a_plain_http_host() -> None:
    async with elsewhere() as (recorder, http):
        await http.post("http://as.example.test/token", data={"code": "c"})
    assert [r["body"] for r in recorder.requests] == ["code=c"]


@pytest.mark.parametrize(
    "key",
    ["token_endpoint", "registration_endpoint", "authorization_endpoint", "revocation_endpoint"],
)
async def test_an_authorization_server_with_a_plain_http_endpoint_is_refused(key: str) -> None:
    insecure = "http://as.example.test/" + key.removesuffix("_endpoint")
    async with elsewhere() as (recorder, http), world() as w:
        metadata = w.auth_server.metadata
        w.auth_server.metadata = lambda: {**metadata(), key: insecure}  # type: ignore[method-assign]
        options: dict[str, Any] = {}
        if key != "registration_endpoint":  # pre-registered, with a secret for Basic
            w.auth_server.clients["app"] = ("S3cret", "client_secret_basic")
            options = {"client_id": "app", "client_secret": "S3cret"}
        auth = w.oauth(http_client=http, **options)
        with pytest.raises(AuthorizationFailed) as caught:
            async with asyncio.timeout(GUARD), w.client(auth) as client:
                await client.list_tools()
    assert caught.value.error == "insecure_endpoint"
    assert insecure in str(caught.value) and "https" in str(caught.value)
    assert recorder.requests == []  # no secret, code or verifier left the client
    assert w.auth_server.authorizations == w.auth_server.token_requests == []


async def test_resource_metadata_naming_a_plain_http_authorization_server_is_refused() -> None:
    async with elsewhere() as (recorder, http), world() as w:
        w.resource.issuers = lambda: ["http://as.example.test"]
        with pytest.raises(AuthorizationFailed) as caught:
            async with asyncio.timeout(GUARD), w.client(w.oauth(http_client=http)) as client:
                await client.list_tools()
    assert caught.value.error == "insecure_endpoint"
    assert "http://as.example.test" in str(caught.value)
    assert recorder.requests == []


async def test_resource_metadata_over_plain_http_is_refused() -> None:
    async with elsewhere() as (recorder, http):
        with pytest.raises(AuthorizationFailed) as caught:
            await discover_resource(http, "http://rs.example.test/mcp", None)
    assert caught.value.error == "insecure_endpoint"
    assert "http://rs.example.test/.well-known/oauth-protected-resource/mcp" in str(caught.value)
    assert recorder.requests == []


@dataclasses.dataclass
class PlainHTTPTokenEndpoint(peers.AuthServer):
    @property
    def token_endpoint(self) -> str:
        return "http://as.example.test/token"


async def machine_failure(auth_server: peers.AuthServer, make_auth: Callable[..., Any]) -> Any:
    protected = peers.ProtectedMCP(peers_server(), auth_server)
    async with (
        elsewhere() as (recorder, http),
        peers.running(auth_server),
        peers.running(protected, path="/mcp") as url,
    ):
        error = await failure(url, make_auth(http))
    return recorder, error


async def test_a_client_secret_is_never_sent_to_a_plain_http_token_endpoint() -> None:
    recorder, error = await machine_failure(
        PlainHTTPTokenEndpoint(secrets={"svc": "S3cret"}),
        lambda http: ClientCredentials("svc", client_secret="S3cret", http_client=http),
    )
    assert error.error == "insecure_endpoint" and "http://as.example.test/token" in str(error)
    assert recorder.requests == []


async def test_allow_insecure_http_is_the_explicit_way_to_a_plain_http_endpoint() -> None:
    recorder, error = await machine_failure(
        PlainHTTPTokenEndpoint(secrets={"svc": "S3cret"}),
        lambda http: ClientCredentials(
            "svc", client_secret="S3cret", http_client=http, allow_insecure_http=True
        ),
    )
    assert error.error == "invalid_request"  # the recorder's answer: the request went out
    [sent] = recorder.requests
    assert sent["headers"]["authorization"].startswith("Basic ")


async def test_an_id_token_is_never_sent_to_a_plain_http_idp() -> None:
    idp = peers.IdentityProvider(as_client_id="mcp-app")
    recorder, error = await machine_failure(
        peers.AuthServer(grant_types=[peers.JWT_BEARER], secrets={"mcp-app": "pw"}),
        lambda http: EnterpriseAuth(
            client_id="mcp-app",
            client_secret="pw",
            id_token="an-id-token",
            idp_client_id=idp.client_id,
            idp_token_endpoint="http://idp.example.test/token",
            http_client=http,
        ),
    )
    assert error.error == "insecure_endpoint" and "http://idp.example.test/token" in str(error)
    assert recorder.requests == []
