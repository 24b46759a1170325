"""mount(): resources, templates, prompts and completions the child adds later follow."""

from __future__ import annotations

import asyncio
import logging

import pytest

from mcpkit import MCPServer
from mcpkit.testing import connect


async def test_resources_prompts_and_completions_added_later_appear_with_list_changed() -> None:
    parent = MCPServer(name="hub", version="1.0.0")
    child = MCPServer(name="docs", version="1.0.0")
    parent.mount(child, namespace="docs")
    async with connect(parent) as client:

        @child.resource("file://readme")
        def readme() -> str:
            return "read me"

        @child.resource("file://pages/{page}")
        def page(page: str) -> str:
            return f"page {page}"

        @child.prompt
        def summarize(topic: str) -> str:
            return f"Summarize {topic}"

        @child.completion(prompt="summarize", argument="topic")
        def topics(value: str) -> list[str]:
            return ["install", "intro"]

        await asyncio.sleep(0.05)
        assert [r["uri"] for r in await client.list_resources()] == ["file://docs/readme"]
        read = await client.read_resource("file://docs/pages/intro")
        assert read["contents"][0]["text"] == "page intro"
        assert [p["name"] for p in await client.list_prompts()] == ["docs_summarize"]
        ref = {"type": "ref/prompt", "name": "docs_summarize"}
        assert (await client.complete(ref, "topic", "in"))["values"] == ["install", "intro"]
        methods = [n["method"] for n in client.notifications]
        assert methods.count("notifications/resources/list_changed") == 2
        assert methods.count("notifications/prompts/list_changed") == 1


async def test_a_resource_added_later_under_a_taken_uri_is_left_out_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    parent = MCPServer(name="hub", version="1.0.0")
    child = MCPServer(name="docs", version="1.0.0")
    parent.mount(child, namespace="docs")

    @parent.resource("file://docs/readme")
    def mine() -> str:
        return "parent's"

    with caplog.at_level(logging.WARNING, "mcpkit.compose"):

        @child.resource("file://readme")
        def readme() -> str:
            return "child's"

    assert "'file://docs/readme' is taken there" in caplog.text
    async with connect(parent) as client:
        read = await client.read_resource("file://docs/readme")
        assert read["contents"][0]["text"] == "parent's"


async def test_a_prompt_added_to_a_leaf_reaches_the_top_of_two_levels() -> None:
    top = MCPServer(name="top", version="1.0.0")
    middle = MCPServer(name="middle", version="1.0.0")
    leaf = MCPServer(name="leaf", version="1.0.0")
    middle.mount(leaf, namespace="leaf")
    top.mount(middle, namespace="mid")

    @leaf.prompt
    def hello() -> str:
        return "Say hello"

    async with connect(top) as client:
        assert [p["name"] for p in await client.list_prompts()] == ["mid_leaf_hello"]


async def test_a_childs_resource_update_reaches_the_parents_subscribers() -> None:
    top = MCPServer(name="top", version="1.0.0")
    middle = MCPServer(name="middle", version="1.0.0")
    leaf = MCPServer(name="leaf", version="1.0.0")

    @leaf.resource("mem://status")
    def status() -> str:
        return "ok"

    middle.mount(leaf, namespace="leaf")
    top.mount(middle, namespace="mid")
    async with connect(top) as client:
        await client.subscribe_resource("mem://mid/leaf/status")
        await leaf.resources.notify_updated("mem://status")
        updates = [
            n["params"]["uri"]
            for n in client.notifications
            if n["method"] == "notifications/resources/updated"
        ]
    assert updates == ["mem://mid/leaf/status"]
