"""Scopes per tool, resource and prompt: refused calls, filtered listings, required_scopes().

Every request goes through the in-memory client with an ``AuthInfo`` injected, as
an HTTP auth layer would hand it over, on both eras (a handshake session and
2026-07-28 requests carrying their envelope), and at the end over real HTTP
(Streamable HTTP stateful, stateless and 2026-07-28, legacy SSE) with the auth
info put in the ASGI scope by middleware. Side-effect counters prove that a
refused call ran nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from mcpkit import CacheHint, CacheOptions, MCPServer, ServerLimits
from mcpkit.auth import AuthInfo
from mcpkit.auth.info import AUTH_SCOPE_KEY
from mcpkit.client import Client
from mcpkit.errors import FORBIDDEN, MCPError, RegistrationError, RemoteError
from mcpkit.server.middleware import CallNext, MiddlewareContext
from mcpkit.server.tools import ToolDefinition, create_tool
from mcpkit.testing import InMemoryClient, connect
from tests.transports.conftest import TIMEOUT, run_app

ERAS = ["2025-11-25", "2026-07-28"]
era = pytest.mark.parametrize("version", ERAS)


def at(version: str, server: MCPServer, **options: Any) -> InMemoryClient:
    """An in-memory client on ``version``: a handshake, or 2026-07-28 envelopes."""
    return connect(server, protocol_version=version, initialize=version != "2026-07-28", **options)


def token(*scopes: str) -> AuthInfo:
    return AuthInfo(token="t0ken", subject="alice", scopes=frozenset(scopes))


@dataclass
class Runs:
    """How often each item's function actually ran."""

    counts: dict[str, int]

    def __getitem__(self, key: str) -> int:
        return self.counts.get(key, 0)

    def hit(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1


def scoped_server(**options: Any) -> tuple[MCPServer, Runs]:
    server = MCPServer(name="scoped", version="1", **options)
    runs = Runs({})

    @server.tool(scopes=["mcp:write", "deploy"])
    def deploy(target: str) -> str:
        runs.hit("deploy")
        return f"deployed {target}"

    @server.tool
    def search(q: str) -> str:
        runs.hit("search")
        return f"found {q}"

    server.add_tool(
        create_tool(
            id="wipe",
            description="Wipe everything.",
            input_schema={"type": "object", "properties": {}},
            execute=lambda: runs.hit("wipe") or "wiped",
            scopes=["admin"],
        )
    )

    @server.resource("data://secret", scopes=["secrets:read"])
    def secret() -> str:
        runs.hit("secret")
        return "the secret"

    @server.resource("data://public")
    def public() -> str:
        return "for everyone"

    @server.resource("files://{name}", scopes=["files:read"])
    def file(name: str) -> str:
        runs.hit("file")
        return f"file {name}"

    @server.resource("files://open")  # static wins over the template it also matches
    def open_file() -> str:
        return "open file"

    @server.prompt(scopes=["prompts:admin"])
    def incident(service: str) -> str:
        runs.hit("incident")
        return f"Write the incident report for {service}."

    @server.prompt
    def hello() -> str:
        return "Say hello."

    @server.completion(prompt="incident", argument="service")
    def services(value: str) -> list[str]:
        runs.hit("complete")
        return [s for s in ("billing", "auth") if s.startswith(value)]

    return server, runs


async def refused(call: Any) -> RemoteError:
    with pytest.raises(RemoteError) as info:
        await call
    return info.value


@era
async def test_a_tool_runs_with_its_scopes_and_is_refused_without_them(version: str) -> None:
    server, runs = scoped_server()
    async with at(version, server, auth_info=token("mcp:write")) as client:
        err = await refused(client.call_tool("deploy", {"target": "prod"}))
        assert err.code == FORBIDDEN
        # Every scope the tool needs, not only the missing one (step-up keeps the others).
        assert err.data == {"requiredScopes": ["deploy", "mcp:write"]}
        assert "deploy" in err.message
        err = await refused(client.call_tool("wipe", {}))
        assert err.data == {"requiredScopes": ["admin"]}
        assert runs["deploy"] == 0 and runs["wipe"] == 0  # nothing executed
        assert (await client.call_tool("search", {"q": "x"}))["content"][0]["text"] == "found x"

        client.auth_info = token("mcp:write", "deploy", "admin")  # a stepped-up token
        result = await client.call_tool("deploy", {"target": "prod"})
        assert result["content"][0]["text"] == "deployed prod"
        assert (await client.call_tool("wipe", {}))["content"][0]["text"] == "wiped"
    assert runs["deploy"] == 1 and runs["wipe"] == 1


@era
async def test_resource_reads_need_the_scopes_of_the_resource_or_template(version: str) -> None:
    server, runs = scoped_server()
    async with at(version, server, auth_info=token()) as client:
        err = await refused(client.read_resource("data://secret"))
        assert (err.code, err.data) == (FORBIDDEN, {"requiredScopes": ["secrets:read"]})
        err = await refused(client.read_resource("files://report"))
        assert (err.code, err.data) == (FORBIDDEN, {"requiredScopes": ["files:read"]})
        assert runs["secret"] == 0 and runs["file"] == 0
        # An unscoped static resource that the scoped template also matches is served.
        opened = await client.read_resource("files://open")
        assert opened["contents"][0]["text"] == "open file"
        assert (await client.read_resource("data://public"))["contents"][0]["text"] == (
            "for everyone"
        )
        client.auth_info = token("secrets:read", "files:read")
        assert (await client.read_resource("data://secret"))["contents"][0]["text"] == "the secret"
        got = await client.read_resource("files://report")
        assert got["contents"][0]["text"] == "file report"
    assert runs["secret"] == 1 and runs["file"] == 1


@era
async def test_a_prompt_and_its_completions_need_the_prompts_scopes(version: str) -> None:
    server, runs = scoped_server()
    async with at(version, server, auth_info=token("x")) as client:
        err = await refused(client.get_prompt("incident", {"service": "billing"}))
        assert (err.code, err.data) == (FORBIDDEN, {"requiredScopes": ["prompts:admin"]})
        ref = {"type": "ref/prompt", "name": "incident"}
        err = await refused(client.complete(ref, "service", "b"))
        assert err.data == {"requiredScopes": ["prompts:admin"]}
        assert runs["incident"] == 0 and runs["complete"] == 0
        assert (await client.get_prompt("hello"))["messages"][0]["content"]["text"] == "Say hello."

        client.auth_info = token("prompts:admin")
        got = await client.get_prompt("incident", {"service": "billing"})
        assert "billing" in got["messages"][0]["content"]["text"]
        assert (await client.complete(ref, "service", "b"))["values"] == ["billing"]
    assert runs["incident"] == 1 and runs["complete"] == 1


@era
async def test_listings_leave_out_what_the_caller_cannot_use_on_every_page(version: str) -> None:
    server, _ = scoped_server(
        limits=ServerLimits(page_size=1)
    )  # one item per page: the cursor walks the filtered list
    async with at(version, server, auth_info=token("admin")) as client:
        assert [t["name"] for t in await client.list_tools()] == ["search", "wipe"]
        assert [r["uri"] for r in await client.list_resources()] == [
            "data://public",
            "files://open",
        ]
        assert await client.list_resource_templates() == []
        assert [p["name"] for p in await client.list_prompts()] == ["hello"]

        client.auth_info = token("mcp:write", "deploy", "files:read", "prompts:admin")
        assert [t["name"] for t in await client.list_tools()] == ["deploy", "search"]
        templates = await client.list_resource_templates()
        assert [t["uriTemplate"] for t in templates] == ["files://{name}"]
        assert [p["name"] for p in await client.list_prompts()] == ["incident", "hello"]


@era
async def test_without_auth_info_scopes_are_not_enforced(version: str) -> None:
    # stdio, in memory and unprotected HTTP carry no token: nothing to check against.
    server, runs = scoped_server()
    async with at(version, server) as client:
        assert [t["name"] for t in await client.list_tools()] == ["deploy", "search", "wipe"]
        assert len(await client.list_resources()) == 3
        assert len(await client.list_resource_templates()) == 1
        assert len(await client.list_prompts()) == 2
        await client.call_tool("deploy", {"target": "dev"})
        await client.read_resource("data://secret")
        await client.read_resource("files://x")
        await client.get_prompt("incident", {"service": "auth"})
    assert (runs["deploy"], runs["secret"], runs["file"], runs["incident"]) == (1, 1, 1, 1)


async def test_a_filtered_listing_never_reaches_the_shared_listing_cache() -> None:
    server, _ = scoped_server()
    async with connect(server, auth_info=token()) as weak, connect(server) as anonymous:
        assert [t["name"] for t in await weak.list_tools()] == ["search"]
        assert len(await anonymous.list_tools()) == 3  # the cache holds the full listing
        weak.auth_info = token("admin", "mcp:write", "deploy")
        assert len(await weak.list_tools()) == 3


async def test_a_principal_from_other_middleware_is_read_by_its_scopes_attribute() -> None:
    @dataclass
    class Principal:  # what some ASGI middleware may put in the scope
        subject: str
        scopes: Any = None

    server, runs = scoped_server()
    async with connect(server, auth_info=Principal("bob")) as client:  # type: ignore[arg-type]
        err = await refused(client.call_tool("wipe", {}))  # no scopes described: none granted
        assert err.code == FORBIDDEN
        client.auth_info = Principal("bob", "admin other")  # type: ignore[assignment]
        await client.call_tool("wipe", {})  # a space-separated OAuth scope string
        client.auth_info = Principal("bob", ["mcp:write", "deploy"])  # type: ignore[assignment]
        await client.call_tool("deploy", {"target": "x"})
    assert runs["wipe"] == 1 and runs["deploy"] == 1


async def test_middleware_sees_the_refusal_and_the_tool_does_not_run() -> None:
    seen: list[tuple[str, int | None, Any]] = []

    async def audit(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        try:
            return await call_next(ctx)
        except MCPError as exc:
            seen.append((ctx.method, exc.code, exc.data))
            raise

    server, runs = scoped_server(middleware=[audit])
    async with connect(server, auth_info=token()) as client:
        await refused(client.call_tool("wipe", {}))
    assert seen == [("tools/call", FORBIDDEN, {"requiredScopes": ["admin"]})]
    assert runs["wipe"] == 0


async def test_scoped_listings_and_reads_are_never_marked_public_on_2026() -> None:
    server, _ = scoped_server(cache=CacheOptions(scope="public", ttl_ms=60_000))
    unscoped = MCPServer(name="plain", version="1", cache=CacheOptions(scope="public"))
    unscoped.tool(lambda: "x", name="plain")
    v = "2026-07-28"
    async with (
        at(v, server, auth_info=token("files:read")) as client,
        at(v, unscoped, auth_info=token()) as plain,
    ):
        for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
            result = await client.request(method)
            assert (result["cacheScope"], result["ttlMs"]) == ("private", 60_000), method
        read = await client.read_resource("files://a")
        assert read["cacheScope"] == "private"
        assert (await client.read_resource("data://public"))["cacheScope"] == "public"
        # A server without scoped items keeps its own hint.
        assert (await plain.request("tools/list"))["cacheScope"] == "public"


def test_required_scopes_answers_per_method_and_item() -> None:
    server, _ = scoped_server()
    ask = server.required_scopes
    assert ask("tools/call", {"name": "deploy"}) == {"mcp:write", "deploy"}
    assert ask("tools/call", {"name": "search"}) == frozenset()
    assert ask("tools/call", {"name": "nope"}) == frozenset()  # the handler says "unknown"
    assert ask("tools/call", {"name": 3}) == frozenset()
    assert ask("resources/read", {"uri": "data://secret"}) == {"secrets:read"}
    assert ask("resources/read", {"uri": "files://a"}) == {"files:read"}
    assert ask("resources/read", {"uri": "files://open"}) == frozenset()  # static wins
    assert ask("resources/read", {"uri": "other://a"}) == frozenset()
    assert ask("prompts/get", {"name": "incident"}) == {"prompts:admin"}
    assert ask("prompts/get", {"name": "hello"}) == frozenset()
    ref = {"ref": {"type": "ref/prompt", "name": "incident"}, "argument": {"name": "service"}}
    assert ask("completion/complete", ref) == {"prompts:admin"}
    for method in ("tools/list", "resources/list", "prompts/list", "ping", "initialize"):
        assert ask(method, {}) == frozenset()
    assert ask("tools/call", None) == frozenset()
    assert ask("tools/call", "junk") == frozenset()  # type: ignore[arg-type]


def test_required_scopes_of_a_versioned_prompt() -> None:
    server = MCPServer(name="v", version="1")
    server.prompt(name="p", version="1")(lambda: "old")
    server.prompt(name="p", version="2", scopes=["new"])(lambda: "new")
    assert server.required_scopes("prompts/get", {"name": "p", "version": "1"}) == frozenset()
    assert server.required_scopes("prompts/get", {"name": "p", "version": "2"}) == {"new"}
    by_meta = {"name": "p", "_meta": {"version": "2"}}
    assert server.required_scopes("prompts/get", by_meta) == {"new"}
    assert server.required_scopes("prompts/get", {"name": "p"}) == {"new"}  # latest


def test_an_unscoped_server_answers_no_scopes_and_keeps_no_index() -> None:
    server = MCPServer(name="plain", version="1")
    server.tool(lambda: "x", name="t")
    server.resource("data://{x}")(lambda x: x)
    server.prompt(name="p")(lambda: "p")
    assert server.tools.scoped == {}
    assert not server.resources.any_scoped and not server.prompts.any_scoped
    assert server.required_scopes("tools/call", {"name": "t"}) == frozenset()
    assert server.required_scopes("resources/read", {"uri": "data://1"}) == frozenset()


async def test_tools_changed_at_run_time_keep_the_scope_index_true() -> None:
    server, runs = scoped_server()
    server.tools.remove("wipe")
    assert server.required_scopes("tools/call", {"name": "wipe"}) == frozenset()
    server.tool(name="deploy")(lambda target: f"open {target}")  # re-registered, unscoped
    assert server.required_scopes("tools/call", {"name": "deploy"}) == frozenset()
    hand_built = server.tools.get("search")
    assert hand_built is not None
    hand_built.scopes = ["search:use"]  # type: ignore[assignment]
    server.tools.add(hand_built)  # checked and indexed again
    assert server.required_scopes("tools/call", {"name": "search"}) == {"search:use"}
    async with connect(server, auth_info=token()) as client:
        assert [t["name"] for t in await client.list_tools()] == ["deploy"]
        await refused(client.call_tool("search", {"q": "x"}))
    assert runs["search"] == 0


def test_bad_scopes_are_refused_at_registration_naming_each_item() -> None:
    server = MCPServer(name="bad", version="1")
    with pytest.raises(RegistrationError) as info:
        server.tool(name="t", scopes="mcp:write")(lambda: "x")  # type: ignore[arg-type]
    assert info.value.problems == [
        "tool 't': scopes must be a list of scope strings, as scopes=['mcp:write'], not str"
    ]
    with pytest.raises(RegistrationError) as info:
        server.tool(name="t", scopes=["ok", "two words", "", 3, 'quo"te'])(lambda: "x")  # type: ignore[list-item]
    assert len(info.value.problems) == 4
    assert all(p.startswith("tool 't': scope ") for p in info.value.problems)
    assert "RFC 6749" in info.value.problems[0]
    with pytest.raises(RegistrationError) as info:
        create_tool(id="c", description="d", execute=lambda: 1, scopes=[" "])
    assert info.value.problems[0].startswith("tool 'c': scope ' '")
    with pytest.raises(RegistrationError) as info:
        server.resource("data://r", scopes=["a b"])(lambda: "r")
    assert info.value.problems[0].startswith("resource 'data://r': scope 'a b'")
    with pytest.raises(RegistrationError) as info:
        server.resource("data://{x}", scopes=["é"])(lambda x: x)
    assert info.value.problems[0].startswith("resource 'data://{x}': scope 'é'")
    with pytest.raises(RegistrationError) as info:
        server.prompt(name="p", scopes=[""])(lambda: "p")
    assert info.value.problems[0].startswith("prompt 'p': scope ''")
    with pytest.raises(RegistrationError) as info:
        server.resource("data://pub", scopes=["a"], cache=CacheHint(scope="public"))(lambda: "r")
    assert "shared cache" in info.value.problems[0]
    assert "t" not in server.tools and not server.resources.static and not server.prompts.registered


def test_bad_scopes_in_the_tools_option_are_collected_with_the_other_problems() -> None:
    bad = ToolDefinition(
        name="hand", description="d", input_schema={"type": "object"}, execute=lambda: 1
    )
    bad.scopes = ["no spaces allowed"]  # type: ignore[assignment]
    with pytest.raises(RegistrationError) as info:
        MCPServer(
            name="x",
            version="1",
            tools=[
                bad,
                create_tool(id="fine", description="d", execute=lambda: 1, scopes=["ok"]),
                42,  # type: ignore[list-item]
            ],
        )
    problems = info.value.problems
    assert len(problems) == 2
    assert problems[0].startswith("tool 'hand': scope 'no spaces allowed'")
    assert "is not a ToolDefinition" in problems[1]


# -- over real HTTP: auth info put in the ASGI scope by middleware in front of the app -----------


def with_auth(app: Any, auth_info: Any) -> Any:
    """An ASGI middleware that says every request carries ``auth_info`` (``mcpkit.auth``)."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope = {**scope, AUTH_SCOPE_KEY: auth_info}
        await app(scope, receive, send)

    return wrapped


TRANSPORTS = [
    pytest.param("http", "/mcp", "2025-11-25", id="streamable-http"),
    pytest.param("stateless", "/mcp", "2025-11-25", id="stateless-http"),
    pytest.param("http", "/mcp", "2026-07-28", id="http-2026"),
    pytest.param("sse", "/sse", None, id="legacy-sse"),
]


@pytest.mark.parametrize(("kind", "path", "version"), TRANSPORTS)
async def test_every_http_transport_enforces_scopes_behind_the_auth_layer(
    kind: str, path: str, version: str | None
) -> None:
    server, runs = scoped_server()
    app = {
        "http": lambda: server.http_app(),
        "stateless": lambda: server.http_app(stateless=True),
        "sse": lambda: server.sse_app(),
    }[kind]()
    # A dict, as some middleware supplies it: read by its "scope" claim.
    principal = {"sub": "alice", "scope": "files:read"}
    options: dict[str, Any] = {"protocol_version": version} if version else {}
    async with (
        run_app(with_auth(app, principal)) as base,
        Client(url=f"{base}{path}", timeout=TIMEOUT, **options) as client,
    ):
        assert [t["name"] for t in await client.list_tools()] == ["search"]
        with pytest.raises(RemoteError) as info:
            await client.call_tool("deploy", {"target": "prod"})
        assert info.value.code == FORBIDDEN
        assert info.value.data == {"requiredScopes": ["deploy", "mcp:write"]}
        read = await client.read_resource("files://notes")
        assert read["contents"][0]["text"] == "file notes"
        with pytest.raises(RemoteError):
            await client.read_resource("data://secret")
    assert runs["deploy"] == 0 and runs["secret"] == 0 and runs["file"] == 1


async def test_an_agent_tool_takes_scopes_by_being_added_again() -> None:
    class Support:
        name = "support"
        description = "Answers support questions."

        def generate(self, message: str) -> str:
            return f"answer to {message}"

    server = MCPServer(name="a", version="1", agents={"support": Support()})
    tool = server.tools.get("ask_support")
    assert tool is not None
    tool.scopes = frozenset({"support"})
    server.tools.add(tool)
    assert server.required_scopes("tools/call", {"name": "ask_support"}) == {"support"}
    async with connect(server, auth_info=token()) as client:
        assert await client.list_tools() == []
        err = await refused(client.call_tool("ask_support", {"message": "hi"}))
        assert err.data == {"requiredScopes": ["support"]}
        client.auth_info = token("support")
        result = await client.call_tool("ask_support", {"message": "hi"})
        assert "answer to hi" in str(result["structuredContent"])
