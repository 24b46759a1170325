"""Prompts: @server.prompt, typed arguments, content kinds, the seeds' callbacks, versions."""

from __future__ import annotations

from typing import Any

import pytest

from mcpkit import Audio, EmbeddedResource, Image, MCPServer, MCPServerPrompts, PromptMessage
from mcpkit.errors import INVALID_PARAMS, RemoteError
from mcpkit.testing import connect


def prompt_server() -> MCPServer:
    server = MCPServer(name="prompts", version="1")

    @server.prompt(title="Review code", description="Ask for a review")
    def review(code: str, strict: bool = False, passes: int = 1) -> list[PromptMessage]:
        """Review.

        Args:
            code: The code to review.
            strict: Be harsh.
        """
        return [
            PromptMessage(
                "user", f"Review ({'strict' if strict else 'gentle'} x{passes}):\n{code}"
            ),
            PromptMessage("assistant", "Sure."),
        ]

    @server.prompt
    async def rich() -> list[Any]:
        return [
            PromptMessage("user", Image(data=b"\x89PNG", mime_type="image/png")),
            PromptMessage("user", Audio(data=b"RIFF", mime_type="audio/wav")),
            PromptMessage(
                "user", EmbeddedResource(uri="test://doc", text="doc body", mime_type="text/plain")
            ),
            {"role": "assistant", "content": "plain dict message"},
            "bare string",
        ]

    return server


async def test_prompts_are_listed_with_arguments() -> None:
    async with connect(prompt_server()) as client:
        prompts = {p["name"]: p for p in (await client.request("prompts/list"))["prompts"]}
    assert prompts["review"] == {
        "name": "review",
        "title": "Review code",
        "description": "Ask for a review",
        "arguments": [
            {"name": "code", "description": "The code to review.", "required": True},
            {"name": "strict", "description": "Be harsh.", "required": False},
            {"name": "passes", "required": False},
        ],
    }
    assert prompts["rich"]["arguments"] == []


async def test_string_arguments_are_coerced_to_the_declared_types() -> None:
    async with connect(prompt_server()) as client:
        result = await client.get_prompt(
            "review", {"code": "x = 1", "strict": "true", "passes": "3"}
        )
    assert result["description"] == "Ask for a review"
    assert result["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Review (strict x3):\nx = 1"}},
        {"role": "assistant", "content": {"type": "text", "text": "Sure."}},
    ]


async def test_messages_with_image_audio_and_embedded_resources() -> None:
    async with connect(prompt_server()) as client:
        messages = (await client.get_prompt("rich"))["messages"]
    assert [m["content"]["type"] for m in messages] == [
        "image",
        "audio",
        "resource",
        "text",
        "text",
    ]
    assert messages[0]["content"] == {"type": "image", "data": "iVBORw==", "mimeType": "image/png"}
    assert messages[2]["content"]["resource"] == {
        "uri": "test://doc",
        "mimeType": "text/plain",
        "text": "doc body",
    }
    assert messages[3] == {
        "role": "assistant",
        "content": {"type": "text", "text": "plain dict message"},
    }
    assert messages[4] == {"role": "user", "content": {"type": "text", "text": "bare string"}}


async def test_audio_in_a_prompt_is_described_as_text_for_2024_11_05() -> None:
    async with connect(prompt_server(), protocol_version="2024-11-05") as client:
        messages = (await client.get_prompt("rich"))["messages"]
    assert messages[1]["content"]["type"] == "text"
    assert "audio" in messages[1]["content"]["text"]
    assert messages[0]["content"]["type"] == "image"


async def test_missing_required_argument_is_32602() -> None:
    async with connect(prompt_server()) as client:
        with pytest.raises(RemoteError) as info:
            await client.get_prompt("review", {"strict": "yes"})
    assert info.value.code == INVALID_PARAMS
    assert "code" in info.value.message


async def test_unknown_prompt_is_32602() -> None:
    async with connect(prompt_server()) as client:
        with pytest.raises(RemoteError) as info:
            await client.get_prompt("nope")
    assert info.value.code == INVALID_PARAMS


async def test_prompt_titles_are_dropped_for_old_revisions() -> None:
    async with connect(prompt_server(), protocol_version="2025-03-26") as client:
        prompts = {p["name"]: p for p in (await client.request("prompts/list"))["prompts"]}
    assert "title" not in prompts["review"]


# -- the seeds' callbacks, with versions -------------------------------------------------------------

SEED_PROMPTS = [
    {"name": "analyze-code", "description": "Analyze code for improvements", "version": "v1"},
    {
        "name": "analyze-code",
        "description": "Analyze code for improvements (new logic)",
        "version": "v2",
    },
]


def seed_server() -> MCPServer:
    async def list_prompts() -> list[dict[str, Any]]:
        return SEED_PROMPTS

    async def get_prompt_messages(
        *, name: str, version: str | None, args: dict[str, Any]
    ) -> dict[str, Any]:
        if name != "analyze-code":
            raise ValueError("Prompt not found")
        chosen = version or "v1"
        prompt = next(p for p in SEED_PROMPTS if p["version"] == chosen)
        logic = "with the new logic" if chosen == "v2" else ""
        return {
            "prompt": prompt,
            "messages": [
                {
                    "role": "user",
                    "content": {
                        "type": "text",
                        "text": f"Analyze this code {logic}: {args.get('code')}",
                    },
                }
            ],
        }

    return MCPServer(
        name="Promptful Server",
        version="1.0.0",
        prompts=MCPServerPrompts(
            list_prompts=list_prompts, get_prompt_messages=get_prompt_messages
        ),
    )


async def test_seed_prompt_callbacks_with_versions() -> None:
    async with connect(seed_server()) as client:
        assert client.initialize_result is not None
        assert client.initialize_result["capabilities"]["prompts"] == {"listChanged": True}
        assert (await client.request("prompts/list"))["prompts"] == SEED_PROMPTS
        v1 = await client.get_prompt("analyze-code", {"code": "x"})
        assert v1["messages"][0]["content"]["text"] == "Analyze this code : x"
        assert v1["description"] == "Analyze code for improvements"
        v2 = await client.request(
            "prompts/get",
            {"name": "analyze-code", "arguments": {"code": "y"}, "_meta": {"version": "v2"}},
        )
        assert "new logic" in v2["messages"][0]["content"]["text"]
        assert v2["description"] == "Analyze code for improvements (new logic)"
        with pytest.raises(RemoteError) as info:
            await client.get_prompt("other")
        assert info.value.code == INVALID_PARAMS


async def test_registered_prompt_versions_are_selectable() -> None:
    server = MCPServer(name="x", version="1")

    @server.prompt(name="greet", version="v1")
    def greet_v1() -> str:
        return "hello"

    @server.prompt(name="greet", version="v2")
    def greet_v2() -> str:
        return "hi there"

    async with connect(server) as client:
        listed = (await client.request("prompts/list"))["prompts"]
        assert [(p["name"], p["version"]) for p in listed] == [("greet", "v1"), ("greet", "v2")]
        latest = await client.get_prompt("greet")
        assert latest["messages"][0]["content"]["text"] == "hi there"
        first = await client.request("prompts/get", {"name": "greet", "_meta": {"version": "v1"}})
        assert first["messages"][0]["content"]["text"] == "hello"


async def test_prompt_list_changed_notification() -> None:
    server = prompt_server()
    async with connect(server) as client:

        @server.prompt
        def late() -> str:
            return "late"

        await server.prompts.notify_list_changed()
        assert [n["method"] for n in client.notifications] == ["notifications/prompts/list_changed"]
        names = [p["name"] for p in (await client.request("prompts/list"))["prompts"]]
        assert "late" in names


def test_listeners_hear_each_prompt_added() -> None:
    server = MCPServer(name="s", version="1")
    heard: list[tuple[str, str | None]] = []
    server.prompts.add_listener(lambda p: heard.append((p.name, p.version)))

    @server.prompt(version="2")
    def greet() -> str:
        return "hi"

    assert heard == [("greet", "2")]
