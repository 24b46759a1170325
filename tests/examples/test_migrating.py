"""The migration examples side by side: each original (FastMCP 4, the official SDK's
``MCPServer``) and its mcpkit port, asked the same things, give clients the same answers.

Each server is driven by its own framework's in-memory client and every answer is
compared in its wire form. Left out of the comparison, because they are the
frameworks' own additions rather than what the tools are: FastMCP's title made from
the tool's name and its ``_meta.fastmcp`` entries and ``x-fastmcp-*`` schema keys,
the property titles and schema titles some of them add, ``additionalProperties:
false`` (FastMCP), and result ``_meta``/``resultType``. Content blocks are compared
where they hold one value; a list's text differs (docs/migrating.md says how).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from mcpkit.testing import connect
from tests.examples.fresh import fresh_example

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "migrating"
DROPPED = {"title", "additionalProperties", "$schema"}


def plain(value: Any) -> Any:
    """A schema without the keys only one framework adds."""
    if isinstance(value, dict):
        return {
            k: plain(v) for k, v in value.items() if k not in DROPPED and not k.startswith("x-")
        }
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def tool_view(tool: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": tool["name"],
        "description": tool.get("description"),
        "inputSchema": plain(tool["inputSchema"]),
        "outputSchema": plain(tool.get("outputSchema")),
        "annotations": tool.get("annotations"),
    }


def result_view(result: dict[str, Any]) -> dict[str, Any]:
    content = result.get("content") or []
    structured = result.get("structuredContent")
    # A list's text blocks differ: one JSON text (FastMCP), one block per item (mcpkit).
    listed = isinstance(structured, dict) and isinstance(structured.get("result"), list)
    return {
        "structuredContent": structured,
        "isError": bool(result.get("isError")),
        "text": content[0].get("text") if len(content) == 1 and not listed else None,
    }


def entry_view(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in ("_meta", "title")}


CALLS = {
    "weather": [
        ("forecast", {"city": "Lima", "days": 2}),
        ("count_letters", {"word": "fjord"}),
        ("forecast", {"city": "Oslo", "days": "many"}),  # an invalid argument
    ],
    "notes": [
        ("add_note", {"title": "a", "body": "first"}),
        ("count_notes", {}),
    ],
}
READS = {"weather": "weather://cities", "notes": "notes://a"}
PROMPTS = {"weather": ("plan", {"city": "Oslo"}), "notes": ("summarize", {"title": "a"})}


async def foreign_view(server: Any, kind: str) -> dict[str, Any]:
    """What a client of the original sees, through its framework's own client."""
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    if kind == "weather":
        from fastmcp import Client

        client: Any = Client(server)
    else:
        from mcp import Client as SDKClient

        client = SDKClient(server)

    def wire(model: Any) -> Any:
        if isinstance(model, list):
            return [wire(m) for m in model]
        return model.model_dump(by_alias=True, exclude_none=True, mode="json")

    async with client:
        if kind == "weather":
            tools = [wire(t) for t in await client.list_tools()]
            calls = [wire(await client.call_tool_mcp(n, a)) for n, a in CALLS[kind]]
            resources = [wire(r) for r in await client.list_resources()]
            templates = [wire(t) for t in await client.list_resource_templates()]
            prompts = [wire(p) for p in await client.list_prompts()]
        else:
            tools = [wire(t) for t in (await client.list_tools()).tools]
            calls = [wire(await client.call_tool(n, a)) for n, a in CALLS[kind]]
            resources = [wire(r) for r in (await client.list_resources()).resources]
            templates = [
                wire(t) for t in (await client.list_resource_templates()).resource_templates
            ]
            prompts = [wire(p) for p in (await client.list_prompts()).prompts]
        read = wire(await client.read_resource(READS[kind]))
        prompt = wire(await client.get_prompt(*PROMPTS[kind]))
    if kind == "weather":  # FastMCP's client gives the contents list of a read
        read = {"contents": read} if isinstance(read, list) else read
    return view(tools, calls, resources, templates, prompts, read, prompt)


async def mcpkit_view(server: Any, kind: str) -> dict[str, Any]:
    async with connect(server) as client:
        tools = await client.list_tools()
        calls = [await client.call_tool(n, a) for n, a in CALLS[kind]]
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
        prompts = await client.list_prompts()
        read = await client.read_resource(READS[kind])
        name, arguments = PROMPTS[kind]
        prompt = await client.get_prompt(name, arguments)
    return view(tools, calls, resources, templates, prompts, read, prompt)


def view(
    tools: list[dict[str, Any]],
    calls: list[dict[str, Any]],
    resources: list[dict[str, Any]],
    templates: list[dict[str, Any]],
    prompts: list[dict[str, Any]],
    read: Any,
    prompt: dict[str, Any],
) -> dict[str, Any]:
    return {
        "tools": sorted((tool_view(t) for t in tools), key=lambda t: t["name"]),
        "calls": [result_view(c) for c in calls],
        "resources": [entry_view(r) for r in resources],
        "templates": [entry_view(t) for t in templates],
        "prompts": [entry_view(p) for p in prompts],
        "read": read["contents"],
        "prompt": prompt["messages"],
    }


async def test_the_fastmcp_example_and_its_port_look_the_same_to_a_client() -> None:
    with (
        fresh_example(EXAMPLES / "fastmcp_weather.py") as original,
        fresh_example(EXAMPLES / "weather.py") as port,
    ):
        theirs = await foreign_view(original.mcp, "weather")
        ours = await mcpkit_view(port.mcp, "weather")
    assert [t["name"] for t in ours["tools"]] == ["count_letters", "forecast"]  # admin: disabled
    assert ours["calls"][2]["isError"] is True
    # Error texts are each framework's own words; what matters is that both refuse.
    theirs["calls"][2]["text"] = ours["calls"][2]["text"] = None
    assert ours == theirs


async def test_the_sdk_example_and_its_port_look_the_same_to_a_client() -> None:
    with (
        fresh_example(EXAMPLES / "sdk_notes.py") as original,
        fresh_example(EXAMPLES / "notes.py") as port,
    ):
        theirs = await foreign_view(original.server, "notes")
        ours = await mcpkit_view(port.server, "notes")
    assert ours["calls"][1]["structuredContent"] == {"result": 1}
    assert ours == theirs
