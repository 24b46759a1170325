"""Depends(...) parameters: resolved per call, cached per request, cleaned up, hidden."""

# No `from __future__ import annotations`: the dependencies are local functions, and a
# string annotation can only be resolved from the module (the Annotated form; see docs).

import asyncio
import functools
import re
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest

from mcpkit import Context, Depends, MCPServer, ToolError
from mcpkit.client import Client
from mcpkit.testing import connect
from tests.client.http_servers import serve

FENCE = re.compile(r"```python\n(.*?)```", re.S)


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result["content"] if c["type"] == "text")


# -- hidden from clients ----------------------------------------------------------------------


def secret() -> str:
    return "from-dependency"


async def test_dependency_parameters_are_in_no_schema_and_cannot_be_overridden() -> None:
    server = MCPServer(name="t", version="1")

    @server.tool
    async def annotated(text: str, token: Annotated[str, Depends(secret)]) -> str:
        """Both forms."""
        return f"{text}/{token}"

    @server.tool
    def by_default(text: str, token: str = Depends(secret)) -> str:
        """Default form, sync."""
        return f"{text}/{token}"

    async with connect(server) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        for name in ("annotated", "by_default"):
            schema = tools[name]["inputSchema"]
            assert schema["properties"].keys() == {"text"}, name
            assert schema["required"] == ["text"], name
            # A client naming the hidden parameter is ignored, as any unknown argument is.
            result = await client.call_tool(name, {"text": "a", "token": "forged"})
            assert not result.get("isError"), result
            assert text_of(result) == "a/from-dependency"


async def test_prompt_arguments_and_template_variables_leave_dependencies_out() -> None:
    server = MCPServer(name="t", version="1")

    @server.prompt
    def greet(name: str, token: Annotated[str, Depends(secret)]) -> str:
        """Greet."""
        return f"hi {name} ({token})"

    @server.resource("notes://{note_id}")
    async def note(note_id: str, token: str = Depends(secret)) -> str:
        return f"note {note_id} ({token})"

    @server.resource("config://token")
    def config(token: str = Depends(secret)) -> str:
        return token

    async with connect(server) as client:
        [prompt] = await client.list_prompts()
        assert [a["name"] for a in prompt["arguments"]] == ["name"]
        got = await client.get_prompt("greet", {"name": "Ada", "token": "forged"})
        assert got["messages"][0]["content"]["text"] == "hi Ada (from-dependency)"
        read = await client.read_resource("notes://7")
        assert read["contents"][0]["text"] == "note 7 (from-dependency)"
        read = await client.read_resource("config://token")
        assert read["contents"][0]["text"] == "from-dependency"


def test_only_functions_with_dependencies_are_wrapped() -> None:
    server = MCPServer(name="t", version="1")

    async def plain(text: str) -> str:
        """No dependencies: registered as it is, so it costs nothing more per call."""
        return text

    async def injected(text: str, token: str = Depends(secret)) -> str:
        """One plain dependency: a sync wrapper handing back this coroutine."""
        return text

    for fn in (plain, injected):
        server.add_tool(fn)
    assert server.tools.get("plain").execute is plain  # type: ignore[union-attr]
    wrapper = server.tools.get("injected").execute  # type: ignore[union-attr]
    assert wrapper is not injected and wrapper.__wrapped__ is injected
    assert not asyncio.iscoroutinefunction(wrapper)


# -- sub-dependencies, caching, Context -------------------------------------------------------


async def test_a_dependency_is_called_once_per_request_unless_use_cache_is_false() -> None:
    calls: list[str] = []
    server = MCPServer(name="t", version="1")

    def counter() -> int:
        calls.append("counter")
        return len(calls)

    def doubled(n: Annotated[int, Depends(counter)]) -> int:
        return n * 2

    def fresh(n: int = Depends(counter, use_cache=False)) -> int:
        return n

    @server.tool
    async def shared(
        a: Annotated[int, Depends(counter)], b: Annotated[int, Depends(doubled)]
    ) -> str:
        """counter is used by the tool and by doubled: once per request."""
        return f"{a} {b}"

    @server.tool
    async def uncached(a: Annotated[int, Depends(counter)], b: int = Depends(fresh)) -> str:
        """fresh asks for its own counter call."""
        return f"{a} {b}"

    @server.tool
    def twice(a: int = Depends(counter), b: int = Depends(counter)) -> str:
        """The same dependency for two parameters: one call."""
        return f"{a} {b}"

    @server.tool
    def two(a: int = Depends(counter), b: str = Depends(secret)) -> str:
        """Two dependencies of nothing."""
        return f"{a} {b}"

    async with connect(server) as client:
        assert text_of(await client.call_tool("shared", {})) == "1 2"
        assert text_of(await client.call_tool("shared", {})) == "2 4"  # a new request
        assert text_of(await client.call_tool("uncached", {})) == "3 4"
        assert text_of(await client.call_tool("twice", {})) == "5 5"
        assert text_of(await client.call_tool("two", {})) == "6 from-dependency"
    assert len(calls) == 6


async def test_dependencies_receive_the_context_and_async_ones_are_awaited() -> None:
    server = MCPServer(name="t", version="1")

    async def caller(ctx: Context) -> str:
        await asyncio.sleep(0)
        info = ctx.client_info or {}
        return f"{info.get('name')}#{ctx.request_id}"

    def shout(who: Annotated[str, Depends(caller)]) -> str:
        return who.upper()

    @server.tool
    def whoami(who: Annotated[str, Depends(shout)]) -> str:
        """A sync tool whose dependency chain has an async dependency taking a Context."""
        return who

    @server.tool
    async def with_own_context(ctx: Context, who: str = Depends(caller)) -> str:
        """The tool takes the Context too."""
        return f"{who} {ctx.request_id}"

    async with connect(server) as client:
        who = text_of(await client.call_tool("whoami", {}))
        name, _, request_id = who.partition("#")
        assert name and request_id and name == name.upper()
        got = text_of(await client.call_tool("with_own_context", {}))
        who, request_id = got.split(" ")
        assert who.endswith(f"#{request_id}")


async def test_a_sync_tool_and_its_sync_dependencies_run_in_the_same_worker_thread() -> None:
    threads: list[str] = []
    server = MCPServer(name="t", version="1")

    def session() -> Iterator[str]:
        threads.append(threading.current_thread().name)
        yield "s"
        threads.append(threading.current_thread().name)

    @server.tool
    def work(s: Annotated[str, Depends(session)]) -> str:
        """Sync."""
        threads.append(threading.current_thread().name)
        return s

    @server.tool(run_in_thread=False)
    def inline(s: Annotated[str, Depends(session)]) -> str:
        """Sync, on the loop: its dependencies too."""
        threads.append(threading.current_thread().name)
        return s

    async with connect(server) as client:
        assert text_of(await client.call_tool("work", {})) == "s"
        assert len(threads) == 3 and len(set(threads)) == 1
        assert threads[0] != threading.main_thread().name
        threads.clear()
        assert text_of(await client.call_tool("inline", {})) == "s"
        assert threads == [threading.main_thread().name] * 3


# -- generator dependencies: cleanup ----------------------------------------------------------


def tracked(log: list[str]) -> tuple[Any, Any]:
    """A sync and an async generator dependency that log set-up, cleanup and errors seen."""

    def sync_resource() -> Iterator[str]:
        log.append("open sync")
        try:
            yield "sync"
        except Exception as exc:
            log.append(f"sync saw {type(exc).__name__}")
            raise
        finally:
            log.append("close sync")

    async def async_resource(
        first: Annotated[str, Depends(sync_resource)],
    ) -> AsyncIterator[str]:
        log.append("open async")
        try:
            yield f"async after {first}"
        except BaseException as exc:
            log.append(f"async saw {type(exc).__name__}")
            raise
        finally:
            await asyncio.sleep(0)  # cleanup may await, even when cancelled
            log.append("close async")

    return sync_resource, async_resource


async def test_generator_dependencies_close_in_reverse_order_after_success_and_error() -> None:
    log: list[str] = []
    _, async_resource = tracked(log)
    server = MCPServer(name="t", version="1")

    @server.tool
    async def ok(r: Annotated[str, Depends(async_resource)]) -> str:
        """Fine."""
        log.append(f"tool got {r}")
        return r

    @server.tool
    async def fails(r: Annotated[str, Depends(async_resource)]) -> str:
        """Raises."""
        log.append("tool raises")
        raise ToolError("no luck")

    async with connect(server) as client:
        assert text_of(await client.call_tool("ok", {})) == "async after sync"
        expected = ["open sync", "open async", "tool got async after sync"]
        assert log == [*expected, "close async", "close sync"]
        log.clear()
        result = await client.call_tool("fails", {})
        assert result["isError"] is True and "no luck" in text_of(result)
    assert log == [
        "open sync",
        "open async",
        "tool raises",
        "async saw ToolError",
        "close async",
        "sync saw ToolError",
        "close sync",
    ]


async def test_generators_close_when_a_later_dependency_fails_or_the_call_times_out() -> None:
    log: list[str] = []
    sync_resource, async_resource = tracked(log)
    server = MCPServer(name="t", version="1")

    def broken(first: Annotated[str, Depends(sync_resource)]) -> str:
        raise ToolError("dependency refused")

    @server.tool
    async def refused(r: Annotated[str, Depends(broken)]) -> str:
        """Never runs."""
        log.append("tool ran")
        return r

    @server.tool(timeout=0.05)
    async def slow(r: Annotated[str, Depends(async_resource)]) -> str:
        """Cancelled by its timeout."""
        await asyncio.sleep(30)
        return r

    async with connect(server) as client:
        result = await client.call_tool("refused", {})
        assert result["isError"] is True and "dependency refused" in text_of(result)
        assert log == ["open sync", "sync saw ToolError", "close sync"]
        log.clear()
        result = await client.call_tool("slow", {})
        assert result["isError"] is True and "timed out" in text_of(result)
    assert log == [
        "open sync",
        "open async",
        "async saw CancelledError",
        "close async",
        "close sync",  # CancelledError is no Exception: the except clause does not see it
    ]


async def test_a_cleanup_cannot_swallow_the_error_but_may_replace_it() -> None:
    server = MCPServer(name="t", version="1")

    def swallows() -> Iterator[str]:
        try:
            yield "x"
        except Exception:
            pass  # returns instead of re-raising

    def replaces() -> Iterator[str]:
        try:
            yield "x"
        except Exception as exc:
            raise ToolError(f"rolled back after {exc}") from exc

    @server.tool
    async def quiet(x: Annotated[str, Depends(swallows)]) -> str:
        """Raises."""
        raise ToolError("boom")

    @server.tool
    async def loud(x: Annotated[str, Depends(replaces)]) -> str:
        """Raises."""
        raise ToolError("boom")

    async with connect(server) as client:
        result = await client.call_tool("quiet", {})
        assert result["isError"] is True and text_of(result) == "boom"
        result = await client.call_tool("loud", {})
        assert result["isError"] is True and text_of(result) == "rolled back after boom"


async def test_a_generator_must_yield_exactly_once() -> None:
    server = MCPServer(name="t", version="1")

    def never() -> Iterator[str]:
        return
        yield "unreachable"

    async def twice() -> AsyncIterator[str]:
        yield "a"
        yield "b"

    @server.tool
    def no_value(x: Annotated[str, Depends(never)]) -> str:
        """Sync."""
        return x

    @server.tool
    async def two_values(x: Annotated[str, Depends(twice)]) -> str:
        """Async."""
        return x

    server.debug = True  # the RuntimeError's text, not a generic one
    async with connect(server) as client:
        result = await client.call_tool("no_value", {})
        assert result["isError"] is True and "did not yield a value" in text_of(result)
        result = await client.call_tool("two_values", {})
        assert result["isError"] is True and "yielded more than once" in text_of(result)


# -- other callables, other transports --------------------------------------------------------


class Settings:
    def __init__(self, ctx: Context, region: str = "eu") -> None:
        self.region = region
        self.has_context = ctx is not None


async def test_a_class_dependency_and_depends_without_a_function() -> None:
    server = MCPServer(name="t", version="1")

    @server.tool
    async def region(settings: Annotated[Settings, Depends()]) -> str:
        """Depends() calls the annotated class."""
        return f"{settings.region} {settings.has_context}"

    async with connect(server) as client:
        assert text_of(await client.call_tool("region", {})) == "eu True"


class Greeter:
    async def __call__(self, ctx: Context) -> str:
        return f"hello from {type(ctx).__name__}"


def labelled(text: str, *, label: str = "?") -> str:
    return f"{label}: {text}"


async def test_callable_instances_and_partials_are_dependencies() -> None:
    server = MCPServer(name="t", version="1")

    @server.tool
    async def greet(
        hello: Annotated[str, Depends(Greeter())],
        tag: str = Depends(functools.partial(labelled, "x", label="tag")),
    ) -> str:
        """An async callable instance taking the Context, and a partial."""
        return f"{hello} / {tag}"

    async with connect(server) as client:
        got = text_of(await client.call_tool("greet", {}))
        assert got == "hello from Context / tag: x"


async def test_dependencies_over_streamable_http() -> None:
    closed: list[str] = []
    server = MCPServer(name="t", version="1")

    async def user(ctx: Context) -> AsyncIterator[str]:
        yield f"user-{type(ctx).__name__}"
        closed.append("user")

    @server.tool
    async def me(text: str, who: Annotated[str, Depends(user)]) -> str:
        """Over HTTP."""
        return f"{text} {who}"

    async with serve(server.http_app()) as url, Client(url=url, timeout=10) as client:
        [tool] = await client.list_tools()
        assert set(tool["inputSchema"]["properties"]) == {"text"}
        result = await client.call_tool("me", {"text": "hi", "who": "forged"})
        assert text_of(result) == "hi user-Context"
    assert closed == ["user"]


@pytest.mark.parametrize("form", ["annotated", "default"])
async def test_declared_components_take_dependencies(form: str) -> None:
    from mcpkit import mcp_tool

    class Tools:
        if form == "annotated":

            @mcp_tool
            async def hello(self, name: str, token: Annotated[str, Depends(secret)]) -> str:
                """Hello."""
                return f"{name} {token}"

        else:

            @mcp_tool
            async def hello(self, name: str, token: str = Depends(secret)) -> str:
                """Hello."""
                return f"{name} {token}"

    server = MCPServer(name="t", version="1", components=[Tools()])
    async with connect(server) as client:
        [tool] = await client.list_tools()
        assert set(tool["inputSchema"]["properties"]) == {"name"}
        assert text_of(await client.call_tool("hello", {"name": "a"})) == "a from-dependency"


async def test_the_docs_example_commits_and_shares_one_pool_lookup() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "server.md"
    [code] = [c for c in FENCE.findall(docs.read_text()) if "Depends(transaction)" in c]
    namespace: dict[str, Any] = {"__name__": "docs_dependencies"}
    exec(compile(code, "server.md", "exec"), namespace)
    server = namespace["server"]
    async with connect(server) as client:
        [tool] = await client.list_tools()
        assert set(tool["inputSchema"]["properties"]) == {"order_id"}
        result = await client.call_tool("order_lines", {"order_id": 7})
        assert result["structuredContent"] == {
            "result": ["row for select * from lines where order_id = 7"]
        }
        assert server.lifespan_state["pool"].log == ["begin", "commit"]
