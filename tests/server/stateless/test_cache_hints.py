"""ttlMs / cacheScope per server, per list method and per resource (SEP-2549, 2026-07-28).

Every 2026-07-28 response here is validated against that revision's schema; the
handshake-era conversation is validated by the autouse fixture (whose schema has
no caching fields: a hint leaking there would fail it).
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import CacheHint, CacheOptions, MCPServer
from mcpkit.errors import ConfigurationError, RegistrationError
from mcpkit.testing import InMemoryClient
from tests import schema

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"


def req(method: str, params: dict[str, Any] | None = None, rid: int = 1) -> dict[str, Any]:
    p = dict(params or {})
    p["_meta"] = {PV: V, CAPS: {}}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}


async def _noop(message: dict[str, Any]) -> None:
    return None


async def stateless(server: MCPServer, method: str, **params: Any) -> dict[str, Any]:
    """One 2026-07-28 request through a per-request session, as stdio and HTTP serve it."""
    session = server.create_session(stateless=True, revision=V)
    resp = await session.handle(req(method, params), _noop)
    assert resp is not None
    schema.validate_message(resp, V, request_method=method)
    assert "result" in resp, resp
    result: dict[str, Any] = resp["result"]
    return result


def hinted_server(**options: Any) -> MCPServer:
    server = MCPServer(name="cached", version="1", **options)

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    @server.prompt
    def hello() -> str:
        return "Say hello."

    @server.resource("docs://readme", cache=CacheHint(ttl_ms=3_600_000, scope="public"))
    def readme() -> str:
        return "read me"

    @server.resource("users://me", cache=CacheHint(scope="private"))
    def me() -> str:
        return "you"

    @server.resource("plain://text")
    def plain() -> str:
        return "plain"

    @server.resource("files://{name}", cache=CacheHint(ttl_ms=5_000))
    def file(name: str) -> str:
        return f"file {name}"

    return server


def hints(result: dict[str, Any]) -> tuple[Any, Any]:
    return result.get("ttlMs"), result.get("cacheScope")


async def test_each_list_method_takes_its_own_hint_over_the_servers() -> None:
    server = hinted_server(
        cache=CacheOptions(
            ttl_ms=1_000,
            scope="private",
            methods={
                "tools/list": CacheHint(ttl_ms=300_000, scope="public"),
                "prompts/list": CacheHint(ttl_ms=600_000),  # scope from the server
                "resources/templates/list": CacheHint(scope="public"),  # ttl from the server
            },
        )
    )
    assert hints(await stateless(server, "tools/list")) == (300_000, "public")
    assert hints(await stateless(server, "prompts/list")) == (600_000, "private")
    assert hints(await stateless(server, "resources/templates/list")) == (1_000, "public")
    # No per-method hint: the server-wide one.
    assert hints(await stateless(server, "resources/list")) == (1_000, "private")
    assert hints(await stateless(server, "server/discover")) == (1_000, "private")


async def test_a_resource_hint_overrides_the_method_and_server_hints_on_its_reads() -> None:
    server = hinted_server(
        cache=CacheOptions(
            ttl_ms=1_000, scope="public", methods={"resources/read": CacheHint(ttl_ms=2_000)}
        )
    )
    assert hints(await stateless(server, "resources/read", uri="docs://readme")) == (
        3_600_000,
        "public",
    )
    # Only the scope is the resource's; the ttl falls through to the method hint.
    assert hints(await stateless(server, "resources/read", uri="users://me")) == (2_000, "private")
    # Without a hint of its own: the method hint, then the server's scope.
    assert hints(await stateless(server, "resources/read", uri="plain://text")) == (2_000, "public")
    # A template's hint applies to every URI it matches.
    assert hints(await stateless(server, "resources/read", uri="files://a.txt")) == (
        5_000,
        "public",
    )


async def test_a_resource_hint_does_not_change_the_list_results() -> None:
    server = hinted_server()
    assert hints(await stateless(server, "resources/list")) == (0, "private")
    assert hints(await stateless(server, "resources/templates/list")) == (0, "private")


async def test_input_required_and_call_results_carry_no_hints() -> None:
    server = hinted_server(
        cache=CacheOptions(methods={"tools/list": CacheHint(ttl_ms=10, scope="public")})
    )
    result = await stateless(server, "tools/call", name="add", arguments={"a": 1, "b": 2})
    assert "ttlMs" not in result and "cacheScope" not in result


async def test_the_handshake_era_never_sees_the_hints() -> None:
    server = hinted_server(
        cache=CacheOptions(
            ttl_ms=1_000, methods={"tools/list": CacheHint(ttl_ms=300_000, scope="public")}
        )
    )
    async with InMemoryClient(server, protocol_version="2025-11-25") as client:
        for method, params in (
            ("tools/list", {}),
            ("prompts/list", {}),
            ("resources/list", {}),
            ("resources/templates/list", {}),
            ("resources/read", {"uri": "docs://readme"}),
            ("resources/read", {"uri": "files://x"}),
        ):
            result = await client.request(method, params)
            assert "ttlMs" not in result and "cacheScope" not in result, method


def test_the_resource_decorator_keeps_the_hint_on_the_definition() -> None:
    server = hinted_server()
    assert server.resources.static["docs://readme"].cache == CacheHint(3_600_000, "public")
    tmpl = server.resources.template_for("files://{name}")
    assert tmpl is not None and tmpl.cache == CacheHint(ttl_ms=5_000)


@pytest.mark.parametrize(
    ("build", "names"),
    [
        (lambda: CacheHint(ttl_ms=-1), "CacheHint.ttl_ms"),
        (lambda: CacheHint(ttl_ms=1.5), "CacheHint.ttl_ms"),  # milliseconds are integers
        (lambda: CacheHint(ttl_ms=True), "CacheHint.ttl_ms"),
        (lambda: CacheHint(scope="shared"), "CacheHint.scope"),
        (lambda: CacheOptions(ttl_ms=-5), "CacheOptions.ttl_ms"),
        (lambda: CacheOptions(ttl_ms=2.0), "CacheOptions.ttl_ms"),
        (lambda: CacheOptions(scope="everyone"), "CacheOptions.scope"),
        (lambda: CacheOptions(methods=["tools/list"]), "CacheOptions.methods must be a mapping"),
        (
            lambda: CacheOptions(methods={"tools/call": CacheHint(ttl_ms=1)}),
            "CacheOptions.methods['tools/call']",
        ),
        (
            lambda: CacheOptions(methods={"tools/list": {"ttl_ms": 1}}),
            "CacheOptions.methods['tools/list']",
        ),
        (
            lambda: MCPServer(name="s", version="1", cache={"tools/list": CacheHint()}),
            "cache must be a mcpkit.CacheOptions",
        ),
    ],
)
def test_bad_values_are_refused_naming_the_option(build: Any, names: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        build()
    assert not isinstance(info.value, RegistrationError)
    assert str(info.value).startswith(names), str(info.value)


def test_the_resource_decorator_refuses_a_cache_that_is_not_a_hint() -> None:
    server = MCPServer(name="s", version="1")
    with pytest.raises(ConfigurationError, match="resource 'x://y': cache must be a CacheHint"):
        server.resource("x://y", cache={"ttl_ms": 5})(lambda: "y")  # type: ignore[arg-type]


async def test_declarative_resources_take_a_cache_hint() -> None:
    from mcpkit import mcp_resource

    class Docs:
        @mcp_resource("docs://guide", cache=CacheHint(ttl_ms=60_000, scope="public"))
        def guide(self) -> str:
            return "the guide"

        @mcp_resource("docs://pages/{page}", cache=CacheHint(ttl_ms=5_000))
        def page(self, page: str) -> str:
            return f"page {page}"

        @mcp_resource("docs://plain")
        def plain(self) -> str:
            return "plain"

    server = MCPServer(name="docs", version="1", components=[Docs()])
    assert hints(await stateless(server, "resources/read", uri="docs://guide")) == (
        60_000,
        "public",
    )
    assert hints(await stateless(server, "resources/read", uri="docs://pages/2")) == (
        5_000,
        "private",
    )
    assert hints(await stateless(server, "resources/read", uri="docs://plain")) == (0, "private")


def test_a_declarative_cache_hint_must_be_a_cache_hint() -> None:
    from mcpkit import mcp_resource

    with pytest.raises(ConfigurationError, match="cache must be a CacheHint"):
        mcp_resource("docs://x", cache={"ttl_ms": 5})  # type: ignore[arg-type]


def test_the_cache_options_keep_their_own_read_only_copy_of_the_method_hints() -> None:
    methods = {"tools/list": CacheHint(ttl_ms=10)}
    options = CacheOptions(methods=methods)
    methods["prompts/list"] = CacheHint(ttl_ms=20)
    assert dict(options.methods) == {"tools/list": CacheHint(ttl_ms=10)}
    with pytest.raises(TypeError):
        options.methods["resources/list"] = CacheHint()  # type: ignore[index]
    server = MCPServer(name="s", version="1", cache=options)
    assert (server.cache_ttl_ms, server.cache_scope) == (0, "private")
    assert server.cache_hints == {"tools/list": CacheHint(ttl_ms=10)}
