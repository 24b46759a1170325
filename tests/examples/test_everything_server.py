"""examples/everything_server.py: the conformance fixture, checked in memory.

The conformance suite (tests/interop/test_conformance_server.py) judges the
fixture over HTTP; these tests pin what it exposes, feature by feature, so a
regression names the feature instead of a scenario. Every conversation is also
validated against the MCP schema of its revision (tests/conftest.py).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mcpkit import MCPServer
from mcpkit.errors import RemoteError
from mcpkit.testing import InMemoryClient, connect

FIXTURE = Path(__file__).resolve().parents[2] / "examples" / "everything_server.py"

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV_B64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

# What the suite's json-schema-2020-12 scenario expects, verbatim (conformance 0.2.0-alpha.12).
SUITE_2020_12_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

SAMPLING_ANSWER = {
    "role": "assistant",
    "content": {"type": "text", "text": "This is a test response from the client"},
    "model": "test-model",
    "stopReason": "endTurn",
}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[MCPServer]:
    """A fresh copy of the fixture module per test: some tools change the server's lists."""
    # As `python FILE` and `mcpkit run FILE` do: its sibling modules (everything_tasks).
    monkeypatch.syspath_prepend(str(FIXTURE.parent))
    spec = importlib.util.spec_from_file_location("everything_server_under_test", FIXTURE)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the module's annotations through it
    try:
        spec.loader.exec_module(module)
        yield module.server
    finally:
        sys.modules.pop(spec.name, None)


def client(server: MCPServer, **options: Any) -> InMemoryClient:
    options.setdefault("capabilities", {"sampling": {}, "elicitation": {}})
    return connect(server, **options)


def text_of(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


# -- tools/list --------------------------------------------------------------------------------


async def test_lists_every_conformance_tool_with_test_simple_text_first(server: MCPServer) -> None:
    async with client(server) as c:
        tools = await c.list_tools()
    names = [t["name"] for t in tools]
    assert names[0] == "test_simple_text"  # http-header-validation calls tools[0] with {}
    assert set(names) >= {
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_tool_with_logging",
        "test_tool_with_progress",
        "test_error_handling",
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "json_schema_2020_12_tool",
        "test_reconnection",
        "test_missing_capability",
        "test_streaming_elicitation",
        "test_logging_tool",
        "test_trigger_tool_change",
        "test_trigger_prompt_change",
    }
    for tool in tools:  # tools-list: a tool without a description fails the scenario
        assert tool["description"].strip(), tool["name"]
        assert tool["inputSchema"]["type"] == "object", tool["name"]


async def test_json_schema_2020_12_tool_publishes_the_suite_schema_unchanged(
    server: MCPServer,
) -> None:
    async with client(server) as c:
        tools = {t["name"]: t for t in await c.list_tools()}
    assert tools["json_schema_2020_12_tool"]["inputSchema"] == SUITE_2020_12_SCHEMA


async def test_a_string_argument_is_annotated_for_an_mcp_param_header(server: MCPServer) -> None:
    async with client(server) as c:
        tools = await c.list_tools()
    annotated = [
        (t["name"], name, prop)
        for t in tools
        for name, prop in t["inputSchema"].get("properties", {}).items()
        if "x-mcp-header" in prop
    ]
    assert annotated, "http-custom-header-server-validation needs an x-mcp-header property"
    tool, _, prop = annotated[0]
    assert prop["type"] == "string"
    async with client(server) as c:
        result = await c.call_tool(tool, {"region": "Hello"})
    assert text_of(result) == "Region: Hello"


# -- tools/call: content -----------------------------------------------------------------------


async def test_simple_text_works_without_an_arguments_key(server: MCPServer) -> None:
    async with client(server) as c:
        result = await c.request("tools/call", {"name": "test_simple_text"})
    assert result == {
        "content": [{"type": "text", "text": "This is a simple text response for testing."}]
    }


@pytest.mark.parametrize(
    ("tool", "content"),
    [
        ("test_image_content", [{"type": "image", "data": PNG_B64, "mimeType": "image/png"}]),
        ("test_audio_content", [{"type": "audio", "data": WAV_B64, "mimeType": "audio/wav"}]),
        (
            "test_embedded_resource",
            [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource content.",
                    },
                }
            ],
        ),
        (
            "test_multiple_content_types",
            [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG_B64, "mimeType": "image/png"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": '{"test":"data","value":123}',
                    },
                },
            ],
        ),
    ],
)
async def test_content_tools_return_the_suite_data(
    server: MCPServer, tool: str, content: list[dict[str, Any]]
) -> None:
    async with client(server) as c:
        result = await c.call_tool(tool, {})
    assert result == {"content": content}  # no structuredContent: helpers are content


async def test_error_tool_returns_is_error_not_a_protocol_error(server: MCPServer) -> None:
    async with client(server) as c:
        result = await c.call_tool("test_error_handling", {})
    assert result["isError"] is True
    assert result["content"][0]["text"] == "This tool intentionally returns an error for testing"


# -- tools/call: talking back ------------------------------------------------------------------


async def test_logging_tool_sends_three_info_messages_on_the_call(server: MCPServer) -> None:
    async with client(server) as c:
        await c.request("logging/setLevel", {"level": "debug"})
        result = await c.call_tool("test_tool_with_logging", {})
    logs = [n["params"] for n in c.notifications if n["method"] == "notifications/message"]
    assert [(m["level"], m["data"]) for m in logs] == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("info", "Tool execution completed"),
    ]
    assert text_of(result) == "Tool with logging executed successfully"


async def test_progress_tool_reports_0_50_100_with_the_request_token(server: MCPServer) -> None:
    async with client(server) as c:
        result = await c.request(
            "tools/call",
            {
                "name": "test_tool_with_progress",
                "arguments": {},
                "_meta": {"progressToken": "progress-test-1"},
            },
        )
    progress = [n["params"] for n in c.notifications if n["method"] == "notifications/progress"]
    assert [(p["progressToken"], p["progress"], p["total"]) for p in progress] == [
        ("progress-test-1", 0, 100),
        ("progress-test-1", 50, 100),
        ("progress-test-1", 100, 100),
    ]
    assert "progress-test-1" in text_of(result)


async def test_progress_tool_without_a_token_sends_no_progress(server: MCPServer) -> None:
    async with client(server) as c:
        await c.call_tool("test_tool_with_progress", {})
    assert not [n for n in c.notifications if n["method"] == "notifications/progress"]


async def test_sampling_tool_asks_the_client_llm(server: MCPServer) -> None:
    seen: list[dict[str, Any]] = []

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return SAMPLING_ANSWER

    async with client(server, handlers={"sampling/createMessage": answer}) as c:
        result = await c.call_tool("test_sampling", {"prompt": "Test prompt for sampling"})
    assert seen == [
        {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}
            ],
            "maxTokens": 100,
        }
    ]
    assert text_of(result) == "LLM response: This is a test response from the client"


async def test_elicitation_tool_asks_for_username_and_email(server: MCPServer) -> None:
    seen: list[dict[str, Any]] = []

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {
            "action": "accept",
            "content": {"username": "testuser", "email": "test@example.com"},
        }

    async with client(server, handlers={"elicitation/create": answer}) as c:
        result = await c.call_tool(
            "test_elicitation", {"message": "Please provide your information"}
        )
    [request] = seen
    assert request["message"] == "Please provide your information"
    schema = request["requestedSchema"]
    assert schema["required"] == ["username", "email"]
    assert {k: v["type"] for k, v in schema["properties"].items()} == {
        "username": "string",
        "email": "string",
    }
    assert text_of(result) == (
        'User response: action=accept, content={"username": "testuser", "email": "test@example.com"}'
    )


async def test_elicitation_decline_is_reported_not_raised(server: MCPServer) -> None:
    async with client(
        server, handlers={"elicitation/create": lambda p: {"action": "decline"}}
    ) as c:
        result = await c.call_tool("test_elicitation", {"message": "?"})
    assert text_of(result) == "User response: action=decline, content=null"


async def test_sep1034_form_has_a_default_for_every_primitive_type(server: MCPServer) -> None:
    seen: list[dict[str, Any]] = []

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        content = {
            "name": "Jane Smith",
            "age": 25,
            "score": 88,
            "status": "inactive",
            "verified": False,
        }
        return {"action": "accept", "content": content}

    async with client(server, handlers={"elicitation/create": answer}) as c:
        result = await c.call_tool("test_elicitation_sep1034_defaults", {})
    props = seen[0]["requestedSchema"]["properties"]
    assert {k: (v["type"], v["default"]) for k, v in props.items()} == {
        "name": ("string", "John Doe"),
        "age": ("integer", 30),
        "score": ("number", 95.5),
        "status": ("string", "active"),
        "verified": ("boolean", True),
    }
    assert props["status"]["enum"] == ["active", "inactive", "pending"]
    assert text_of(result).startswith("Elicitation completed: action=accept, content=")
    assert '"name": "Jane Smith"' in text_of(result)


async def test_sep1330_form_has_the_five_enum_shapes(server: MCPServer) -> None:
    seen: list[dict[str, Any]] = []
    choice = {
        "untitledSingle": "option1",
        "titledSingle": "value1",
        "legacyEnum": "opt1",
        "untitledMulti": ["option1", "option2"],
        "titledMulti": ["value1", "value2"],
    }

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"action": "accept", "content": choice}

    async with client(server, handlers={"elicitation/create": answer}) as c:
        result = await c.call_tool("test_elicitation_sep1330_enums", {})
    p = seen[0]["requestedSchema"]["properties"]
    assert p["untitledSingle"]["type"] == "string" and isinstance(p["untitledSingle"]["enum"], list)
    assert "oneOf" not in p["untitledSingle"] and "enumNames" not in p["untitledSingle"]
    assert "enum" not in p["titledSingle"]
    assert all(
        isinstance(o["const"], str) and isinstance(o["title"], str)
        for o in p["titledSingle"]["oneOf"]
    )
    assert len(p["legacyEnum"]["enumNames"]) == len(p["legacyEnum"]["enum"])
    assert p["untitledMulti"]["type"] == "array" and "anyOf" not in p["untitledMulti"]["items"]
    assert p["untitledMulti"]["items"]["enum"] == ["option1", "option2", "option3"]
    assert p["titledMulti"]["type"] == "array" and "enum" not in p["titledMulti"]["items"]
    assert [o["const"] for o in p["titledMulti"]["items"]["anyOf"]] == [
        "value1",
        "value2",
        "value3",
    ]
    assert json.dumps(choice) in text_of(result)


async def test_elicitation_on_2025_06_18_drops_what_that_revision_lacks(server: MCPServer) -> None:
    seen: list[dict[str, Any]] = []

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"action": "accept", "content": {"username": "u", "email": "e"}}

    async with client(
        server, protocol_version="2025-06-18", handlers={"elicitation/create": answer}
    ) as c:
        result = await c.call_tool("test_elicitation", {"message": "m"})
    assert "mode" not in seen[0]  # form `mode` is 2025-11-25
    assert text_of(result).startswith("User response: action=accept")


async def test_reconnection_tool_completes_where_streams_cannot_be_closed(
    server: MCPServer,
) -> None:
    async with client(server) as c:
        result = await c.call_tool("test_reconnection", {})
    assert text_of(result) == "Reconnection test completed"


# -- diagnostic tools of the stateless scenarios ------------------------------------------------


async def test_missing_capability_tool_answers_minus_32021_without_sampling(
    server: MCPServer,
) -> None:
    async with client(server, capabilities={}) as c:
        with pytest.raises(RemoteError) as err:
            await c.call_tool("test_missing_capability", {})
    assert err.value.code == -32021
    assert err.value.data == {"requiredCapabilities": {"sampling": {}}}


async def test_missing_capability_tool_samples_when_it_can(server: MCPServer) -> None:
    async with client(server, handlers={"sampling/createMessage": lambda p: SAMPLING_ANSWER}) as c:
        result = await c.call_tool("test_missing_capability", {})
    assert text_of(result) == "Sampling available: test-model"


async def test_trigger_tool_change_toggles_a_tool_and_notifies(server: MCPServer) -> None:
    async with client(server) as c:
        before = {t["name"] for t in await c.list_tools()}
        await c.call_tool("test_trigger_tool_change", {})
        during = {t["name"] for t in await c.list_tools()}
        await c.call_tool("test_trigger_tool_change", {})
        after = {t["name"] for t in await c.list_tools()}
    assert during - before == {"test_dynamic_tool"}
    assert after == before
    changed = [n for n in c.notifications if n["method"] == "notifications/tools/list_changed"]
    assert len(changed) == 2


async def test_trigger_prompt_change_toggles_a_prompt_and_notifies(server: MCPServer) -> None:
    async with client(server) as c:
        await c.call_tool("test_trigger_prompt_change", {})
        names = {p["name"] for p in (await c.request("prompts/list"))["prompts"]}
    assert "test_dynamic_prompt" in names
    assert [n["method"] for n in c.notifications] == ["notifications/prompts/list_changed"]


async def test_logging_tool_logs_at_the_session_level(server: MCPServer) -> None:
    async with client(server) as c:
        await c.call_tool("test_logging_tool", {})  # default level info: the debug line is dropped
    logs = [n["params"]["level"] for n in c.notifications if n["method"] == "notifications/message"]
    assert logs == ["info"]


# -- resources ----------------------------------------------------------------------------------


async def test_resources_are_listed_with_uri_and_name(server: MCPServer) -> None:
    async with client(server) as c:
        listed = (await c.request("resources/list"))["resources"]
        templates = (await c.request("resources/templates/list"))["resourceTemplates"]
    assert {r["uri"] for r in listed if r["uri"].startswith("test://")} == {
        "test://static-text",
        "test://static-binary",
        "test://watched-resource",
    }
    # The rest are the files of the example skills (the skills extension's fixture).
    skills = {r["uri"] for r in listed if not r["uri"].startswith("test://")}
    assert "skill://changelog-writer/SKILL.md" in skills
    assert all(uri.startswith("skill://") for uri in skills)
    assert all(r["name"] for r in listed)
    assert [t["uriTemplate"] for t in templates] == ["test://template/{id}/data"]


@pytest.mark.parametrize(
    ("uri", "contents"),
    [
        (
            "test://static-text",
            {"mimeType": "text/plain", "text": "This is the content of the static text resource."},
        ),
        ("test://static-binary", {"mimeType": "image/png", "blob": PNG_B64}),
        (
            "test://template/123/data",
            {
                "mimeType": "application/json",
                "text": '{"id":"123","templateTest":true,"data":"Data for ID: 123"}',
            },
        ),
        ("test://watched-resource", {"mimeType": "text/plain", "text": "Watched resource content"}),
    ],
)
async def test_resources_read(server: MCPServer, uri: str, contents: dict[str, Any]) -> None:
    async with client(server) as c:
        result = await c.read_resource(uri)
    assert result == {"contents": [{"uri": uri, **contents}]}


async def test_watched_resource_subscribe_and_unsubscribe(server: MCPServer) -> None:
    async with client(server) as c:
        assert await c.request("resources/subscribe", {"uri": "test://watched-resource"}) == {}
        await server.resources.notify_updated("test://watched-resource")
        assert await c.request("resources/unsubscribe", {"uri": "test://watched-resource"}) == {}
        await server.resources.notify_updated("test://watched-resource")
    updates = [
        n["params"] for n in c.notifications if n["method"] == "notifications/resources/updated"
    ]
    assert updates == [{"uri": "test://watched-resource"}]


# -- prompts and completion ------------------------------------------------------------------------


async def test_prompts_are_listed_with_descriptions(server: MCPServer) -> None:
    async with client(server) as c:
        prompts = {p["name"]: p for p in (await c.request("prompts/list"))["prompts"]}
    assert set(prompts) == {
        "test_simple_prompt",
        "test_prompt_with_arguments",
        "test_prompt_with_embedded_resource",
        "test_prompt_with_image",
        "test_input_required_result_prompt",
    }
    assert all(p["description"] for p in prompts.values())
    args = prompts["test_prompt_with_arguments"]["arguments"]
    assert [(a["name"], a["required"]) for a in args] == [("arg1", True), ("arg2", True)]


async def test_prompts_get(server: MCPServer) -> None:
    async with client(server) as c:
        simple = await c.get_prompt("test_simple_prompt")
        with_args = await c.get_prompt(
            "test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"}
        )
        embedded = await c.get_prompt(
            "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}
        )
        image = await c.get_prompt("test_prompt_with_image")
    assert simple["messages"] == [
        {
            "role": "user",
            "content": {"type": "text", "text": "This is a simple prompt for testing."},
        }
    ]
    assert (
        with_args["messages"][0]["content"]["text"]
        == "Prompt with arguments: arg1='testValue1', arg2='testValue2'"
    )
    assert embedded["messages"][0]["content"] == {
        "type": "resource",
        "resource": {
            "uri": "test://example-resource",
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        },
    }
    assert (
        embedded["messages"][1]["content"]["text"] == "Please process the embedded resource above."
    )
    assert image["messages"][0]["content"] == {
        "type": "image",
        "data": PNG_B64,
        "mimeType": "image/png",
    }


async def test_completion_for_prompt_arguments(server: MCPServer) -> None:
    async with client(server) as c:
        result = await c.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "test"},
            },
        )
    values = result["completion"]["values"]
    assert values and all(v.startswith("test") for v in values)


async def test_capabilities_cover_every_feature_the_suite_uses(server: MCPServer) -> None:
    async with client(server) as c:
        assert c.initialize_result is not None
        caps = c.initialize_result["capabilities"]
    assert caps["resources"]["subscribe"] is True
    assert {"tools", "prompts", "logging", "completions"} <= set(caps)


async def test_the_input_required_tools_ask_by_server_requests_on_the_handshake_era(
    server: MCPServer,
) -> None:
    async def elicit(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Alice"}}

    async def sample(params: dict[str, Any]) -> dict[str, Any]:
        text = {"type": "text", "text": "Hi"}
        return {"role": "assistant", "content": text, "model": "m", "stopReason": "endTurn"}

    async def roots(params: dict[str, Any] | None) -> dict[str, Any]:
        return {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}

    handlers = {"elicitation/create": elicit, "sampling/createMessage": sample, "roots/list": roots}
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    async with client(server, capabilities=caps, handlers=handlers) as c:
        result = await c.call_tool("test_input_required_result_multiple_inputs", {})
    assert result["content"][0]["text"] == "Hi Alice (1 roots)"
