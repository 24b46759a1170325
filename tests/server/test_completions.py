"""completion/complete for prompt arguments and resource-template variables."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mcpkit import Context, MCPServer
from mcpkit.errors import INVALID_PARAMS, ConfigurationError, RemoteError
from mcpkit.testing import connect

LANGUAGES = ["python", "perl", "php", "pascal", "rust"]


def completion_server() -> MCPServer:
    server = MCPServer(name="c", version="1")

    @server.prompt
    def review(language: str, framework: str = "") -> str:
        return f"{language} {framework}"

    @server.resource("test://repos/{owner}/{repo}", tags={"code"})
    def repo(owner: str, repo: str) -> str:
        return f"{owner}/{repo}"

    @server.completion(prompt="review", argument="language")
    def languages(value: str) -> list[str]:
        return [lang for lang in LANGUAGES if lang.startswith(value)]

    @server.completion(prompt="review", argument="framework")
    def frameworks(value: str, arguments: dict[str, str]) -> list[str]:
        by_language = {"python": ["django", "flask", "fastapi"], "rust": ["axum"]}
        return [
            f for f in by_language.get(arguments.get("language", ""), []) if f.startswith(value)
        ]

    @server.completion(resource_template="test://repos/{owner}/{repo}")
    async def repos(argument: str, value: str, arguments: dict[str, str]) -> dict[str, Any]:
        if argument == "owner":
            return {"values": ["octocat", "oct-org"], "total": 2, "hasMore": False}
        owner = arguments.get("owner", "?")
        return {"values": [f"{owner}-repo-{i}" for i in range(3)], "total": 30, "hasMore": True}

    @server.completion(prompt="many")
    def many(value: str) -> list[str]:
        return [f"v{i}" for i in range(250)]

    return server


async def complete(
    client: Any, ref: dict[str, Any], name: str, value: str, context: Any = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
    if context is not None:
        params["context"] = {"arguments": context}
    return (await client.request("completion/complete", params))["completion"]  # type: ignore[no-any-return]


async def test_prompt_argument_completion() -> None:
    async with connect(completion_server()) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["capabilities"]["completions"] == {}
        got = await complete(client, {"type": "ref/prompt", "name": "review"}, "language", "p")
    assert got == {"values": ["python", "perl", "php", "pascal"], "total": 4, "hasMore": False}


async def test_context_arguments_are_passed_to_the_completer() -> None:
    async with connect(completion_server()) as client:
        ref = {"type": "ref/prompt", "name": "review"}
        assert (await complete(client, ref, "framework", "f", {"language": "python"}))[
            "values"
        ] == [
            "flask",
            "fastapi",
        ]
        assert (await complete(client, ref, "framework", "", {"language": "rust"}))["values"] == [
            "axum"
        ]
        assert (await complete(client, ref, "framework", ""))["values"] == []


async def test_resource_template_variable_completion() -> None:
    async with connect(completion_server()) as client:
        ref = {"type": "ref/resource", "uri": "test://repos/{owner}/{repo}"}
        owners = await complete(client, ref, "owner", "oc")
        assert owners == {"values": ["octocat", "oct-org"], "total": 2, "hasMore": False}
        repos = await complete(client, ref, "repo", "", {"owner": "octocat"})
        assert repos == {
            "values": ["octocat-repo-0", "octocat-repo-1", "octocat-repo-2"],
            "total": 30,
            "hasMore": True,
        }


async def test_more_than_100_values_are_cut_to_100_with_has_more_and_total() -> None:
    async with connect(completion_server()) as client:
        got = await complete(client, {"type": "ref/prompt", "name": "many"}, "anything", "")
    assert got["values"] == [f"v{i}" for i in range(100)]
    assert got["hasMore"] is True
    assert got["total"] == 250


async def test_no_completer_gives_no_values() -> None:
    async with connect(completion_server()) as client:
        got = await complete(client, {"type": "ref/prompt", "name": "review"}, "unknown_arg", "x")
    assert got == {"values": [], "total": 0, "hasMore": False}


@pytest.mark.parametrize(
    "params",
    [
        {"ref": {"type": "ref/prompt", "name": "review"}},
        {"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": ""}},
        {"ref": {"type": "ref/prompt"}, "argument": {"name": "a", "value": ""}},
        {"argument": {"name": "a", "value": ""}},
    ],
)
async def test_malformed_completion_requests_are_32602(params: dict[str, Any]) -> None:
    async with connect(completion_server()) as client:
        out = await client.send_raw(
            {"jsonrpc": "2.0", "id": 1, "method": "completion/complete", "params": params}
        )
        assert out["error"]["code"] == INVALID_PARAMS


def test_completion_needs_exactly_one_target() -> None:
    server = MCPServer(name="c", version="1")
    with pytest.raises(ConfigurationError):
        server.completion()
    with pytest.raises(ConfigurationError):
        server.completion(prompt="a", resource_template="b")


async def test_completions_capability_is_absent_for_2024_11_05() -> None:
    async with connect(completion_server(), protocol_version="2024-11-05") as client:
        assert client.initialize_result is not None
        assert "completions" not in client.initialize_result["capabilities"]
        # The method itself exists in 2024-11-05.
        got = await complete(client, {"type": "ref/prompt", "name": "review"}, "language", "ru")
    assert got["values"] == ["rust"]


async def test_a_failing_completer_is_an_internal_error() -> None:
    server = MCPServer(name="c", version="1")

    @server.completion(prompt="p")
    def broken(value: str) -> list[str]:
        raise RuntimeError("boom")

    async with connect(server) as client:
        with pytest.raises(RemoteError) as info:
            await complete(client, {"type": "ref/prompt", "name": "p"}, "a", "")
    assert info.value.code == -32603


async def test_a_bad_total_from_the_completer_is_replaced_by_the_count() -> None:
    server = MCPServer(name="c", version="1")

    @server.completion(prompt="p")
    def sloppy(value: str) -> dict[str, Any]:
        return {"values": ["a", "b"], "total": "lots"}

    async with connect(server) as client:
        got = await complete(client, {"type": "ref/prompt", "name": "p"}, "x", "")
    assert got == {"values": ["a", "b"], "total": 2, "hasMore": False}


def test_listeners_hear_each_completion_added() -> None:
    server = MCPServer(name="s", version="1")
    heard: list[tuple[str, str, str | None]] = []
    server.completions.add_listener(lambda kind, target, arg, fn: heard.append((kind, target, arg)))

    @server.completion(prompt="greet", argument="name")
    def names(value: str) -> list[str]:
        return []

    assert heard == [("ref/prompt", "greet", "name")]


REVIEW = {"type": "ref/prompt", "name": "review"}
REPOS = {"type": "ref/resource", "uri": "test://repos/{owner}/{repo}"}


@pytest.mark.parametrize(
    ("rule", "ref", "error"),
    [
        ({"keys": ("review",)}, REVIEW, "Prompt 'review' is disabled"),
        ({"tags": {"code"}}, REPOS, "Resource template 'test://repos/{owner}/{repo}' is disabled"),
    ],
)
async def test_a_hidden_prompt_or_template_has_no_completions(
    rule: dict[str, Any], ref: dict[str, str], error: str
) -> None:
    # Suggestions tell what a hidden component would take: refused as a get or read of it
    # is, -32602 (server/utilities/completion § error handling: invalid prompt name).
    server = completion_server()
    argument = "language" if ref is REVIEW else "owner"
    server.disable(*rule.get("keys", ()), tags=rule.get("tags", ()))
    async with connect(server) as client:
        with pytest.raises(RemoteError, match=re.escape(error)) as refused:
            await client.complete(ref, argument, "p")
        assert refused.value.code == INVALID_PARAMS
        server.enable(*rule.get("keys", ()), tags=rule.get("tags", ()))
        assert (await client.complete(ref, argument, "p"))["values"]


async def test_a_prompt_registered_disabled_has_no_completions_unknown_ones_stay_empty() -> None:
    server = MCPServer(name="c", version="1")

    @server.prompt(enabled=False)
    def draft(topic: str) -> str:
        return topic

    @server.completion(prompt="draft", argument="topic")
    def topics(value: str) -> list[str]:
        return ["tests"]

    async with connect(server) as client:
        with pytest.raises(RemoteError, match="Prompt 'draft' is disabled"):
            await client.complete({"type": "ref/prompt", "name": "draft"}, "topic", "")
        unknown = await client.complete({"type": "ref/prompt", "name": "nope"}, "topic", "")
        assert unknown["values"] == []


async def test_a_sessions_own_rules_hide_completions_from_it_only() -> None:
    server = completion_server()

    @server.tool
    async def hide_review(ctx: Context) -> str:
        """Hide the review prompt from this caller."""
        await ctx.disable_components("review")
        return "hidden"

    async with connect(server) as alice, connect(server) as bob:
        await alice.call_tool("hide_review")
        with pytest.raises(RemoteError, match="Prompt 'review' is disabled"):
            await alice.complete(REVIEW, "language", "p")
        assert (await bob.complete(REVIEW, "language", "p"))["values"] == [
            "python",
            "perl",
            "php",
            "pascal",
        ]
