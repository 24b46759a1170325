"""The "everything" server: one of each MCP server feature, as the conformance suite expects.

This is the server the official MCP conformance suite (``@modelcontextprotocol/conformance``)
is run against (``scripts/conformance.py``). Names, arguments and texts follow the suite's
scenario descriptions, so the file also shows, feature by feature, how each is written with
mcpkit::

    mcpkit run examples/everything_server.py --transport http --port 3001

Tools return plain values or content helpers, talk back through ``Context``
(logging, progress, sampling, elicitation) and report failures by raising
``ToolError``. Resources are functions registered under a URI (a URI with
``{variables}`` is an RFC 6570 template); prompts are functions returning messages.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from everything_tasks import add_task_fixtures  # examples/everything_tasks.py, beside this file
from pydantic import BaseModel, Field

from mcpkit import (
    Audio,
    Context,
    EmbeddedResource,
    Image,
    MCPError,
    MCPServer,
    PromptMessage,
    Text,
    ToolError,
    create_tool,
)
from mcpkit.extensions.skills import add_skills

# A 1x1 PNG and a tiny WAV: the suite's shared test data.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")

# -32021: the request needs a client capability the client did not declare
# (2026-07-28 basic/lifecycle § capability errors).
MISSING_CAPABILITY = -32021

server = MCPServer(
    name="mcpkit-everything-server",
    version="1.0.0",
    instructions="Conformance fixture: exposes every server feature the MCP conformance suite tests.",
)


# -- tools: content types --------------------------------------------------------------------
# `test_simple_text` comes first: some scenarios call tools[0] with empty arguments.


@server.tool
async def test_simple_text() -> str:
    """Return a simple text response."""
    return "This is a simple text response for testing."


@server.tool
async def test_image_content() -> Image:
    """Return a small PNG image."""
    return Image(PNG, mime_type="image/png")


@server.tool
async def test_audio_content() -> Audio:
    """Return a short WAV audio clip."""
    return Audio(WAV, mime_type="audio/wav")


@server.tool
async def test_embedded_resource() -> EmbeddedResource:
    """Return a text resource embedded in the result."""
    return EmbeddedResource(
        "test://embedded-resource",
        text="This is an embedded resource content.",
        mime_type="text/plain",
    )


@server.tool
async def test_multiple_content_types() -> list[Text | Image | EmbeddedResource]:
    """Return text, an image and an embedded resource in one result."""
    return [
        Text("Multiple content types test:"),
        Image(PNG, mime_type="image/png"),
        EmbeddedResource(
            "test://mixed-content-resource",
            text=json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
            mime_type="application/json",
        ),
    ]


# -- tools: talking back to the client while running ----------------------------------------


@server.tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Send three log messages while running."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0, 50 and 100 out of 100 (when the request carries a progress token)."""
    for step in (0, 50, 100):
        await ctx.progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await asyncio.sleep(0.05)
    return f"Progress tool completed (token: {ctx.meta.get('progressToken')})"


@server.tool
async def test_error_handling() -> str:
    """Always fail, to show how a tool reports an error (isError: true)."""
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Ask the client's LLM to answer a prompt (sampling/createMessage).

    Args:
        prompt: The prompt to send to the LLM.
    """
    result = await ctx.sample(prompt, max_tokens=100)
    content = result.get("content")
    blocks = content if isinstance(content, list) else [content]
    text = " ".join(
        b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
    )
    return f"LLM response: {text}"


class UserInfo(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


@server.tool
async def test_elicitation(message: str, ctx: Context) -> str:
    """Ask the user for a username and an email address (elicitation/create).

    Args:
        message: The message to show the user.
    """
    answer = await ctx.elicit(message, UserInfo)
    content = answer.content.model_dump() if answer.content is not None else None
    return f"User response: action={answer.action}, content={json.dumps(content)}"


class Defaults(BaseModel):
    """Every primitive field type with a default value (SEP-1034, 2025-11-25)."""

    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


@server.tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Ask the user for a form whose fields all have default values (SEP-1034)."""
    answer = await ctx.elicit("Please review and update the form fields with defaults", Defaults)
    content = answer.content.model_dump() if answer.content is not None else None
    return f"Elicitation completed: action={answer.action}, content={json.dumps(content)}"


# The five enum shapes of SEP-1330, written as a JSON-Schema dict because the titled and
# legacy forms (`oneOf` of const/title, `enumNames`) have no pydantic spelling.
ENUM_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "title": "Untitled single-select",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "title": "Titled single-select",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "title": "Legacy titled enum",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "title": "Untitled multi-select",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "title": "Titled multi-select",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


@server.tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Ask the user to pick from single- and multi-select enums, titled and untitled (SEP-1330)."""
    answer = await ctx.elicit("Please select options from the enum fields", ENUM_FORM)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


# -- tools: schemas ---------------------------------------------------------------------------

# A hand-written JSON Schema 2020-12 input schema is published unchanged (SEP-1613, SEP-2106).
ADDRESS_FORM_SCHEMA: dict[str, Any] = {
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


def _describe_contact(**arguments: Any) -> str:
    return f"Received contact details: {json.dumps(arguments, sort_keys=True)}"


server.add_tool(
    create_tool(
        id="json_schema_2020_12_tool",
        description="Tool with JSON Schema 2020-12 features ($defs, $anchor, allOf/anyOf, if/then/else)",
        input_schema=ADDRESS_FORM_SCHEMA,
        execute=_describe_contact,
    )
)


# -- tools: transport behaviour -----------------------------------------------------------------


@server.tool
async def test_reconnection(ctx: Context) -> str:
    """Close this call's SSE stream mid-call; the result arrives when the client resumes (SEP-1699)."""
    await ctx.info("Closing the stream; resume with Last-Event-ID to get the result")
    await ctx.close_sse_stream()
    await asyncio.sleep(0.2)
    return "Reconnection test completed"


@server.tool
async def test_x_mcp_header(
    region: Annotated[
        str,
        Field(description="Region to echo", json_schema_extra={"x-mcp-header": "Region"}),
    ],
) -> str:
    """Echo an argument that is mirrored into the Mcp-Param-Region HTTP header (SEP-2243)."""
    return f"Region: {region}"


# -- tools: diagnostics for the stateless (2026-07-28) scenarios ------------------------------


@server.tool
async def test_missing_capability(ctx: Context) -> str:
    """Fail with -32021 unless the client declared the sampling capability."""
    if "sampling" not in ctx.client_capabilities:
        raise MCPError(
            "This tool needs the client's sampling capability",
            code=MISSING_CAPABILITY,
            data={"requiredCapabilities": {"sampling": {}}},
        )
    result = await ctx.sample("Say hello", max_tokens=20)
    return f"Sampling available: {result.get('model', 'unknown model')}"


@server.tool
async def test_streaming_elicitation(ctx: Context) -> str:
    """Ask the user for a name while the call is in progress."""
    answer = await ctx.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )
    name = (answer.content or {}).get("name", "stranger")
    return f"Hello, {name}!" if answer.action == "accept" else f"Elicitation {answer.action}"


@server.tool
async def test_logging_tool(ctx: Context) -> str:
    """Log one message at each of the levels info and debug."""
    await ctx.info("test_logging_tool: info message")
    await ctx.debug("test_logging_tool: debug message")
    return "Logged two messages"


async def _dynamic_tool() -> str:
    """A tool that test_trigger_tool_change adds and removes."""
    return "dynamic tool called"


async def _dynamic_prompt() -> str:
    """A prompt that test_trigger_prompt_change adds and removes."""
    return "This is a dynamic prompt."


@server.tool
async def test_trigger_tool_change() -> str:
    """Add or remove the tool test_dynamic_tool, then tell clients the tool list changed."""
    if server.tools.remove("test_dynamic_tool") is None:
        server.add_tool(_dynamic_tool, name="test_dynamic_tool")
    await server.tools.notify_list_changed()
    return "Tool list changed"


@server.tool
async def test_trigger_prompt_change() -> str:
    """Add or remove the prompt test_dynamic_prompt, then tell clients the prompt list changed."""
    # PromptManager has no remove() yet: `registered` is keyed by (name, version).
    if server.prompts.registered.pop(("test_dynamic_prompt", None), None) is None:
        server.prompts.add(_dynamic_prompt, name="test_dynamic_prompt")
    await server.prompts.notify_list_changed()
    return "Prompt list changed"


# -- tools: input-required results (MRTR, 2026-07-28) -------------------------------------------
# The same code runs on both eras: server-to-client requests on the handshake era, an
# input-required result answered by the client's retry on the stateless one. `key` names
# each question in the result's inputRequests.

NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}


def _sampled_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    return str(content.get("text", "")) if isinstance(content, dict) else ""


@server.tool
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Ask the user's name (one elicitation round)."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


@server.tool
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Ask the client's LLM one question (one sampling round)."""
    result = await ctx.sample(
        "What is the capital of France?", max_tokens=100, key="capital_question"
    )
    return f"The model said: {_sampled_text(result)}"


@server.tool
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """List the client's roots (one roots round)."""
    roots = await ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(r.uri for r in roots)


@server.tool
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Ask for a confirmation; the round trip carries a requestState."""
    answer = await ctx.elicit("Please confirm", CONFIRM_SCHEMA, key="confirm")
    ok = (answer.content or {}).get("ok") is True
    return "state-ok: confirmed" if ok else "state-ok: not confirmed"


@server.tool
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Ask three questions at once (elicitation, sampling, roots) in one round."""
    answer, greeting, roots = await asyncio.gather(
        ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name"),
        ctx.sample("Generate a greeting", max_tokens=50, key="greeting"),
        ctx.list_roots(key="client_roots"),
    )
    name = (answer.content or {}).get("name", "stranger")
    return f"{_sampled_text(greeting)} {name} ({len(roots)} roots)"


@server.tool
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Ask two questions one after the other (two rounds)."""
    first = await ctx.elicit("Step 1: What is your name?", NAME_SCHEMA, key="step1")
    color_schema = {
        "type": "object",
        "properties": {"color": {"type": "string"}},
        "required": ["color"],
    }
    second = await ctx.elicit("Step 2: What is your favorite color?", color_schema, key="step2")
    name = (first.content or {}).get("name", "stranger")
    return f"{name} likes {(second.content or {}).get('color', 'no color')}"


@server.tool
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Ask for a confirmation; a tampered requestState must be refused."""
    answer = await ctx.elicit("Please confirm", CONFIRM_SCHEMA, key="confirm")
    return f"confirmed: {(answer.content or {}).get('ok')}"


@server.tool
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Ask only through the capabilities the client declared on this request."""
    caps = ctx.client_capabilities
    asks: list[Any] = []
    if "elicitation" in caps:
        asks.append(ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name"))
    if "sampling" in caps:
        asks.append(ctx.sample("Say hello", max_tokens=20, key="hello"))
    if "roots" in caps:
        asks.append(ctx.list_roots(key="client_roots"))
    if not asks:
        return "The client declared no capability to ask through"
    await asyncio.gather(*asks)
    return f"Asked {len(asks)} question(s)"


@server.prompt
async def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks the user for context before it is built."""
    schema = {
        "type": "object",
        "properties": {"context": {"type": "string"}},
        "required": ["context"],
    }
    answer = await ctx.elicit("What context should the prompt use?", schema, key="user_context")
    return f"Use this context: {(answer.content or {}).get('context', 'none')}"


# -- resources ----------------------------------------------------------------------------------


@server.resource("test://static-text", name="static-text", mime_type="text/plain")
async def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", mime_type="image/png")
async def static_binary() -> bytes:
    """A static binary resource (a PNG image)."""
    return PNG


@server.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
async def template_data(id: str) -> dict[str, Any]:
    """Data for one id, from a resource template."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


@server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
async def watched_resource() -> str:
    """A resource clients can subscribe to."""
    return "Watched resource content"


# -- prompts --------------------------------------------------------------------------------------


@server.prompt
async def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt
async def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with two required arguments.

    Args:
        arg1: First test argument.
        arg2: Second test argument.
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt
async def test_prompt_with_embedded_resource(resourceUri: str) -> list[PromptMessage]:
    """A prompt that embeds a resource.

    Args:
        resourceUri: URI of the resource to embed.
    """
    return [
        PromptMessage(
            "user",
            EmbeddedResource(
                resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
            ),
        ),
        PromptMessage("user", "Please process the embedded resource above."),
    ]


@server.prompt
async def test_prompt_with_image() -> list[PromptMessage]:
    """A prompt that includes an image."""
    return [
        PromptMessage("user", Image(PNG, mime_type="image/png")),
        PromptMessage("user", "Please analyze the image above."),
    ]


# -- completion ------------------------------------------------------------------------------------

SUGGESTIONS = ["test", "test-value", "testing", "example", "sample"]


@server.completion(prompt="test_prompt_with_arguments")
def complete_prompt_argument(value: str) -> list[str]:
    """Suggest values for either argument of test_prompt_with_arguments."""
    return [s for s in SUGGESTIONS if s.startswith(value)]


# -- skills extension (SEP-2640) ------------------------------------------------------------------
# The sep-2640-skills-* scenarios run their checks only against a server that declares
# io.modelcontextprotocol/skills: serve the example skills (the first one listed has a
# subfolder, which the directory-read scenario descends into).

add_skills(server, Path(__file__).resolve().parent / "skills")

# -- tasks extension (SEP-2663): the tasks-* scenarios' fixtures -------------------------------------
add_task_fixtures(server)


if __name__ == "__main__":
    server.run_http(port=3001)
