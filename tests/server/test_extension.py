"""The extension contract in memory: capabilities, added methods, middleware, lifespans."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

from mcpkit import (
    CallNext,
    Context,
    Extension,
    InvalidParams,
    LifespanError,
    MCPServer,
    MiddlewareContext,
    RegistrationError,
)
from mcpkit.errors import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RemoteError
from mcpkit.protocol.method_names import SPEC_METHODS
from mcpkit.testing import connect
from tests import schema

MODERN = "2026-07-28"
HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


async def echo(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return {"echo": params.get("text"), "era": ctx.session.revision.era}


def echo_extension(**options: Any) -> Extension:
    return Extension(
        identifier="com.example/echo",
        settings={"version": 2, "modes": ["loud"]},
        methods={"example/echo": echo},
        **options,
    )


def modern(server: MCPServer) -> Any:
    return connect(server, protocol_version=MODERN, initialize=False)


# Additive methods are in no revision's schema: the tests that send them validate the rest
# of the conversation (every message of a specification method) themselves.
additive = pytest.mark.no_schema_check


def assert_spec_traffic_valid(client: Any) -> None:
    ids = {
        m["id"]
        for direction, m, _ in client.traffic
        if direction == "sent" and isinstance(m, dict) and m.get("method") not in SPEC_METHODS
    }
    kept = [
        (d, m, checked)
        for d, m, checked in client.traffic
        if not (isinstance(m, dict) and "id" in m and m["id"] in ids)
    ]
    assert len(kept) < len(client.traffic)  # the additive exchange was there, and left out
    shim = SimpleNamespace(
        traffic=kept, initialize_result=client.initialize_result, session=client.session
    )
    schema.assert_valid_traffic(shim)


# -- identifiers and the frozen contract --------------------------------------------------------


@pytest.mark.parametrize(
    "identifier",
    ["io.modelcontextprotocol/tasks", "com.example/my-extension", "a/b", "com.x-y.z9/v1.2_beta"],
)
def test_identifiers_of_the_meta_key_form_are_accepted(identifier: str) -> None:
    assert Extension(identifier=identifier).identifier == identifier


@pytest.mark.parametrize(
    "identifier",
    [
        "echo",  # no prefix: mandatory for extensions
        "/echo",
        "com.example/",  # no name
        "9com.example/echo",  # a label starts with a letter
        "com.example-/echo",  # ... and ends with a letter or digit
        "com..example/echo",
        "com.example/-echo",  # a name begins and ends with an alphanumeric
        "com.example/echo/more",
        "mcpkit/input-rounds",  # mcpkit's own
    ],
)
def test_malformed_or_taken_identifiers_are_refused(identifier: str) -> None:
    with pytest.raises(RegistrationError, match="extension identifier"):
        Extension(identifier=identifier)


def test_every_problem_of_an_extension_is_raised_at_once() -> None:
    def not_async(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return {}

    with pytest.raises(RegistrationError) as caught:
        Extension(
            identifier="nope",
            methods={"tools/call": echo, "example/sync": not_async},  # type: ignore[dict-item]
            settings={"when": object()},
            lifespan="soon",  # type: ignore[arg-type]
        )
    text = str(caught.value)
    assert len(caught.value.problems) == 5, caught.value.problems
    assert "settings are not JSON" in text
    assert "'nope'" in text and "'tools/call'" in text and "'example/sync'" in text
    assert "lifespan must be callable" in text


def test_an_extension_keeps_copies_of_what_it_was_given() -> None:
    settings: dict[str, Any] = {"v": 1}
    methods: dict[str, Any] = {"example/echo": echo}
    ext = Extension(identifier="com.example/echo", settings=settings, methods=methods)
    settings["v"] = 2
    methods["example/other"] = echo
    assert dict(ext.settings) == {"v": 1} and list(ext.methods) == ["example/echo"]
    with pytest.raises(AttributeError):
        ext.identifier = "com.example/other"  # type: ignore[misc]


# -- capabilities.extensions on both eras --------------------------------------------------------


@pytest.mark.parametrize("revision", HANDSHAKE)
async def test_initialize_advertises_the_extensions_settings(revision: str) -> None:
    server = MCPServer(name="ext", version="1", extensions=[echo_extension()])
    async with connect(server, protocol_version=revision) as client:
        caps = client.initialize_result["capabilities"]  # type: ignore[index]
        assert caps["extensions"] == {"com.example/echo": {"version": 2, "modes": ["loud"]}}
        schema.assert_valid_traffic(client)


async def test_discover_merges_the_extensions_with_mcpkits_own() -> None:
    server = MCPServer(name="ext", version="1")
    server.add_extension(echo_extension())
    server.add_extension(Extension(identifier="io.modelcontextprotocol/tasks"))
    async with modern(server) as client:
        result = await client.request("server/discover")
        schema.validate_message(client.received[-1], MODERN, request_method="server/discover")
    assert result["capabilities"]["extensions"] == {
        "mcpkit/input-rounds": {},
        "com.example/echo": {"version": 2, "modes": ["loud"]},
        "io.modelcontextprotocol/tasks": {},
    }
    assert list(server.extensions) == ["com.example/echo", "io.modelcontextprotocol/tasks"]


async def test_a_server_without_extensions_advertises_as_before() -> None:
    server = MCPServer(name="plain", version="1")
    async with connect(server) as client:
        assert "extensions" not in client.initialize_result["capabilities"]  # type: ignore[index]
    async with modern(server) as client:
        caps = (await client.request("server/discover"))["capabilities"]
        assert caps["extensions"] == {"mcpkit/input-rounds": {}}


# -- added methods -------------------------------------------------------------------------------


@additive
@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_an_added_method_is_served_on_both_eras(era: str) -> None:
    server = MCPServer(name="ext", version="1")
    assert server.add_method("example/echo", echo) is echo
    opened = connect(server) if era == "handshake" else modern(server)
    async with opened as client:
        result = await client.request("example/echo", {"text": "hi"})
        await client.request("tools/list")
    assert_spec_traffic_valid(client)
    assert (result["echo"], result["era"]) == ("hi", era)
    if era == "stateless":  # completed like every 2026-07-28 result
        assert result["resultType"] == "complete"
        assert "io.modelcontextprotocol/serverInfo" in result["_meta"]


@additive
@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_added_methods_pass_through_the_middleware_chain(era: str) -> None:
    seen: list[tuple[str, Any]] = []

    async def spy(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
        result = await call_next(ctx)
        seen.append((ctx.method, result.get("echo")))
        return {**result, "wrapped": True}

    server = MCPServer(name="ext", version="1", middleware=[spy])
    server.add_method("example/echo", echo)
    opened = connect(server) if era == "handshake" else modern(server)
    async with opened as client:
        result = await client.request("example/echo", {"text": "hi"})
    assert_spec_traffic_valid(client)
    assert result["wrapped"] is True
    assert ("example/echo", "hi") in seen


@additive
async def test_a_method_added_while_a_session_is_open_is_reachable_at_once() -> None:
    server = MCPServer(name="ext", version="1")
    async with connect(server) as client:
        with pytest.raises(RemoteError) as caught:
            await client.request("example/echo", {"text": "early"})
        assert caught.value.code == METHOD_NOT_FOUND
        server.add_method("example/echo", echo)
        assert (await client.request("example/echo", {"text": "late"}))["echo"] == "late"
    assert_spec_traffic_valid(client)


@additive
async def test_handler_errors_become_json_rpc_errors() -> None:
    async def picky(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        raise InvalidParams("needs text")

    async def sloppy(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return ["not", "a", "dict"]  # type: ignore[return-value]

    server = MCPServer(name="ext", version="1")
    server.add_method("example/picky", picky)
    server.add_method("example/sloppy", sloppy)
    async with connect(server) as client:
        with pytest.raises(RemoteError) as caught:
            await client.request("example/picky")
        assert (caught.value.code, str(caught.value)) == (INVALID_PARAMS, "needs text")
        with pytest.raises(RemoteError) as caught:
            await client.request("example/sloppy")
        assert caught.value.code == INTERNAL_ERROR
    assert_spec_traffic_valid(client)


@pytest.mark.parametrize("name", sorted(n for n in SPEC_METHODS if not n.startswith("tasks/")))
def test_the_specifications_method_names_are_refused(name: str) -> None:
    server = MCPServer(name="ext", version="1")
    with pytest.raises(RegistrationError, match="defined by the MCP specification"):
        server.add_method(name, echo)


@pytest.mark.parametrize("name", ["tasks/get", "tasks/cancel", "tasks/update", "tasks/mine"])
def test_a_prefix_reserved_for_an_extension_is_its_alone(name: str) -> None:
    # SEP-2663 reserves tasks/* for io.modelcontextprotocol/tasks: add_method and any other
    # extension are refused, spec name or not; the tasks extension may serve them.
    server = MCPServer(name="ext", version="1")
    with pytest.raises(RegistrationError, match="reserved for the extension"):
        server.add_method(name, echo)
    with pytest.raises(RegistrationError, match="reserved for the extension"):
        Extension(identifier="com.example/tasks", methods={name: echo})
    tasks = Extension(identifier="io.modelcontextprotocol/tasks", methods={name: echo})
    server.add_extension(tasks)
    assert server.extensions["io.modelcontextprotocol/tasks"] is tasks


def test_rpc_names_sync_handlers_and_duplicates_are_refused() -> None:
    def sync(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return {}

    server = MCPServer(name="ext", version="1")
    with pytest.raises(RegistrationError, match="reserved by JSON-RPC"):
        server.add_method("rpc.echo", echo)
    with pytest.raises(RegistrationError, match="must be an async function"):
        server.add_method("example/sync", sync)  # type: ignore[arg-type]
    server.add_method("example/echo", echo)
    with pytest.raises(RegistrationError, match=r"already served \(added by add_method\)"):
        server.add_method("example/echo", echo)


def test_duplicate_identifiers_and_methods_are_raised_together_and_nothing_is_added() -> None:
    server = MCPServer(name="ext", version="1")
    server.add_method("example/echo", echo)
    with pytest.raises(RegistrationError) as caught:
        MCPServer(
            name="ext",
            version="1",
            extensions=[
                echo_extension(),
                echo_extension(),  # the same identifier again
                Extension(identifier="com.example/other", methods={"example/echo": echo}),
            ],
        )
    assert caught.value.problems == [
        "extension 'com.example/echo' is added twice",
        "extension 'com.example/other': method 'example/echo' is already served "
        "(added by extension 'com.example/echo')",
    ]
    clash = Extension(
        identifier="com.example/clash",
        settings={"x": 1},
        methods={"example/new": echo, "example/echo": echo},
    )
    with pytest.raises(RegistrationError, match="already served"):
        server.add_extension(clash)
    assert "com.example/clash" not in server.extensions
    assert "extensions" not in server.capabilities()


@additive
async def test_unknown_methods_are_still_not_found() -> None:
    server = MCPServer(name="ext", version="1", extensions=[echo_extension()])
    async with connect(server) as client:
        with pytest.raises(RemoteError) as caught:
            await client.request("example/missing")
        assert caught.value.code == METHOD_NOT_FOUND
    assert_spec_traffic_valid(client)


# -- middleware and lifespans of extensions ------------------------------------------------------


@additive
async def test_extension_middleware_runs_inside_the_servers_own() -> None:
    trail: list[str] = []

    def tag(name: str) -> Any:
        async def mw(ctx: MiddlewareContext, call_next: CallNext) -> dict[str, Any]:
            trail.append(f"{name}>")
            try:
                return await call_next(ctx)
            finally:
                trail.append(f"<{name}")

        return mw

    server = MCPServer(
        name="ext",
        version="1",
        middleware=[tag("server")],
        extensions=[echo_extension(middleware=[tag("ext")])],
    )
    assert len(server.middleware) == 2
    async with connect(server) as client:
        trail.clear()
        await client.request("example/echo", {"text": "x"})
        await client.request("tools/list")
    assert_spec_traffic_valid(client)
    assert trail == ["server>", "ext>", "<ext", "<server"] * 2


async def test_extension_lifespans_wrap_the_servers_own() -> None:
    trail: list[str] = []

    def tracked(name: str, value: Any) -> Any:
        @contextlib.asynccontextmanager
        async def lifespan(server: MCPServer) -> AsyncIterator[Any]:
            trail.append(f"enter {name}")
            yield value
            trail.append(f"exit {name}")

        return lifespan

    server = MCPServer(
        name="ext",
        version="1",
        lifespan=tracked("server", {"db": "ready"}),
        extensions=[
            Extension(identifier="com.example/a", lifespan=tracked("a", "ignored")),
            Extension(identifier="com.example/b", lifespan=tracked("b", "ignored")),
        ],
    )
    async with connect(server):
        assert server.lifespan_state == {"db": "ready"}  # the server's own, not an extension's
    assert trail == ["enter a", "enter b", "enter server", "exit server", "exit b", "exit a"]


async def test_an_extension_lifespan_alone_runs_and_leaves_the_state_none() -> None:
    trail: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[None]:
        trail.append("up")
        yield
        trail.append("down")

    server = MCPServer(name="ext", version="1")
    server.add_extension(Extension(identifier="com.example/a", lifespan=lifespan))
    async with connect(server):
        assert trail == ["up"] and server.lifespan_state is None
    assert trail == ["up", "down"] and server.lifespan_state is None


async def test_a_failing_extension_lifespan_names_the_extension_and_unwinds() -> None:
    trail: list[str] = []

    @contextlib.asynccontextmanager
    async def first(server: MCPServer) -> AsyncIterator[None]:
        trail.append("first up")
        yield
        trail.append("first down")

    @contextlib.asynccontextmanager
    async def broken(server: MCPServer) -> AsyncIterator[None]:
        raise ConnectionRefusedError("queue refused")
        yield

    server = MCPServer(
        name="srv",
        version="1",
        extensions=[
            Extension(identifier="com.example/first", lifespan=first),
            Extension(identifier="com.example/broken", lifespan=broken),
        ],
    )
    with pytest.raises(LifespanError) as caught:
        async with connect(server):
            pass
    assert str(caught.value) == (
        "the lifespan of extension 'com.example/broken' of server 'srv' failed to start: "
        "ConnectionRefusedError: queue refused"
    )
    assert trail == ["first up", "first down"]
