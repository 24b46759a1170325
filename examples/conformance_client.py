"""A conformance client written with mcpkit's ``Client``, for the official MCP client suite.

The harness (``@modelcontextprotocol/conformance client --command ...``) starts a mock
server per scenario and runs this script with the mock's URL as the last argument,
the scenario's name in ``MCP_CONFORMANCE_SCENARIO``, the wire revision in
``MCP_CONFORMANCE_PROTOCOL_VERSION`` and, for a few scenarios, a JSON context in
``MCP_CONFORMANCE_CONTEXT``. The harness judges what it sees on the wire; this
script only has to do what each scenario asks and exit 0 when it could.

Run it by hand against any Streamable HTTP server:

    MCP_CONFORMANCE_SCENARIO=tools_call python examples/conformance_client.py http://127.0.0.1:8000/mcp

or through the runner: ``python scripts/conformance_client.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from mcpkit.auth.client import (
    ClientCredentials,
    DPoPSigner,
    EnterpriseAuth,
    HeadlessAuthorizer,
    OAuth,
    WorkloadIdentity,
)
from mcpkit.client import Client
from mcpkit.client.stateless.discover import STATELESS_VERSIONS
from mcpkit.extensions.skills.client import SkillsClient, SkillVerificationError
from mcpkit.protocol.versions import HANDSHAKE_REVISIONS, LATEST_HANDSHAKE

log = logging.getLogger("conformance-client")

# The harness's own per-scenario limit is 30-60 s; give up a little before it does, so a
# hung call shows up as our error rather than as the harness's timeout.
TIMEOUT_S = 25.0

Scenario = Callable[[Client, dict[str, Any]], Awaitable[None]]


def text_of(result: dict[str, Any]) -> str:
    return " ".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")


async def list_only(client: Client, context: dict[str, Any]) -> None:
    """``initialize``, ``json-schema-ref-no-deref``: connect and list the tools, nothing more.

    Listing must not dereference a ``$ref`` in a schema (the no-deref scenario watches a
    canary URL): mcpkit treats schemas as plain JSON and never fetches anything.
    """
    tools = await client.list_tools()
    log.info("tools: %s", [t["name"] for t in tools])


async def tools_call(client: Client, context: dict[str, Any]) -> None:
    await client.list_tools()
    result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
    log.info("add_numbers: %s", text_of(result))
    if result.get("isError"):
        raise RuntimeError(f"add_numbers failed: {text_of(result)}")


async def elicitation_defaults(client: Client, context: dict[str, Any]) -> None:
    """SEP-1034: accept with no content; ``Client`` fills every field from the schema defaults."""
    await client.list_tools()
    result = await client.call_tool("test_client_elicitation_defaults", {})
    log.info("test_client_elicitation_defaults: %s", text_of(result))


async def sse_retry(client: Client, context: dict[str, Any]) -> None:
    """The server closes the call's SSE stream after a priming event; the transport resumes it
    with ``GET`` + ``Last-Event-ID`` after the server's ``retry`` delay (transports §
    resumability) and the result still arrives."""
    await client.list_tools()
    result = await client.call_tool("test_reconnection", {})
    log.info("test_reconnection: %s", text_of(result))


async def schema_preservation(client: Client, context: dict[str, Any]) -> None:
    """Send back the 2020-12 input schema exactly as received: nothing may be lost in parsing."""
    tools = {t["name"]: t for t in await client.list_tools()}
    schema = tools["json_schema_2020_12_tool"]["inputSchema"]
    result = await client.call_tool("json_schema_echo", {"schema": schema})
    log.info("json_schema_echo: %s", text_of(result)[:200])


async def custom_headers(client: Client, context: dict[str, Any]) -> None:
    """``http-custom-headers``: list, then make exactly the calls the context lists."""
    await client.list_tools()
    for call in context.get("toolCalls", []):
        await client.call_tool(call["name"], call.get("arguments", {}))


async def valid_tool_only(client: Client, context: dict[str, Any]) -> None:
    """``http-invalid-tool-headers``: list, then call only the well-formed tool."""
    await client.list_tools()
    await client.call_tool("valid_tool", {})


async def request_metadata(client: Client, context: dict[str, Any]) -> None:
    """``request-metadata``: every request carries the ``_meta`` envelope; the mock refuses
    the first one with ``UnsupportedProtocolVersionError`` and the client retries."""
    await client.list_tools()
    await client.call_tool("add_numbers", {"a": 5, "b": 3})


async def standard_headers(client: Client, context: dict[str, Any]) -> None:
    """``http-standard-headers``: one request of each kind that carries ``Mcp-Name``."""
    tools = await client.list_tools()
    for tool in tools:
        await client.call_tool(tool["name"], {})
    for resource in await client.list_resources():
        await client.read_resource(resource["uri"])
    for prompt in await client.list_prompts():
        await client.get_prompt(prompt["name"], {})


async def request_state(client: Client, context: dict[str, Any]) -> None:
    """``sep-2322-client-request-state``: input-required rounds, answered by the handlers."""
    await client.list_tools()
    for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state"):
        result = await client.call_tool(name, {})
        log.info("%s: %s", name, text_of(result))
    await client.call_tool("test_mrtr_no_result_type", {})


async def skills_list_only(client: Client, context: dict[str, Any]) -> None:
    """``sep-2640-client-no-prefetch``: list the skills; read no file of a skill not loaded."""
    entries = await SkillsClient(client).list()
    log.info("skills: %s", [e.name for e in entries])


async def skills_load_verified(client: Client, context: dict[str, Any]) -> None:
    """``sep-2640-client-verify-*``: load the first skill, then read its other files only
    if its SKILL.md verified (digest, size, frontmatter): tampered content is never used."""
    skills = SkillsClient(client)
    entries = await skills.list()
    if not entries:
        return
    try:
        loaded = await skills.load(entries[0])
    except SkillVerificationError as exc:
        log.info("refused the skill %s: %s", entries[0].uri, exc)
        return
    for file in loaded.entry.files or ():
        if file.uri != loaded.entry.uri:
            await skills.read_file(loaded.entry, file.uri)


async def list_and_call_first(client: Client, context: dict[str, Any]) -> None:
    """Any other scenario (the auth ones, for example): connect, list, call the first tool."""
    tools = await client.list_tools()
    if tools:
        await client.call_tool(tools[0]["name"], {})


SCENARIOS: dict[str, Scenario] = {
    "initialize": list_only,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "json-schema-2020-12-preservation": schema_preservation,
    "json-schema-ref-no-deref": list_only,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": valid_tool_only,
    "request-metadata": request_metadata,
    "http-standard-headers": standard_headers,
    "sep-2322-client-request-state": request_state,
    "sep-2640-client-no-prefetch": skills_list_only,
    "sep-2640-client-verify-digest": skills_load_verified,
    "sep-2640-client-verify-size": skills_load_verified,
    "sep-2640-client-verify-frontmatter": skills_load_verified,
}


async def accept_with_defaults(params: dict[str, Any]) -> dict[str, Any]:
    # No content of our own: the client completes the form with the schema's defaults.
    return {"action": "accept", "content": {}}


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "conformance"},
        "model": "mcpkit-conformance",
        "stopReason": "endTurn",
    }


def wire_revision() -> str:
    """Ask for the revision the mock speaks when mcpkit knows it.

    For 2026-07-28 the client probes with ``server/discover`` and falls back to the
    handshake when the mock turns out to speak only that.
    """
    wanted = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "")
    known = HANDSHAKE_REVISIONS + STATELESS_VERSIONS
    return wanted if wanted in known else LATEST_HANDSHAKE


# -- authorization ------------------------------------------------------------------------------
# The auth/* scenarios: the mock answers 401 and the client completes the OAuth flow. The
# mock's authorization endpoint approves at once, so HeadlessAuthorizer follows its redirect
# instead of a browser. Extension scenarios (client credentials, enterprise-managed, DPoP,
# workload identity) get their own functions beside these and an entry in AUTH_FLOWS.

# The Client ID Metadata Document URL the basic-cimd scenario expects as client_id.
CIMD_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://127.0.0.1:33418/callback"


def authorization_code_auth(scenario: str, context: dict[str, Any]) -> OAuth:
    """Every authorization-code scenario: discovery, DCR or CIMD, PKCE, step-up, iss checks."""
    return OAuth(
        authorizer=HeadlessAuthorizer(REDIRECT_URI),
        client_name="mcpkit-conformance-client",
        client_metadata_url=CIMD_URL,
    )


def pre_registered_auth(scenario: str, context: dict[str, Any]) -> OAuth:
    """``auth/pre-registration``: the credentials come in the context; no registration."""
    return OAuth(
        authorizer=HeadlessAuthorizer(REDIRECT_URI),
        client_id=context["client_id"],
        client_secret=context.get("client_secret"),
        client_issuer=context.get("issuer"),
    )


# -- authorization extensions (machine-to-machine, enterprise, DPoP) ----------------------------


def client_credentials_auth(scenario: str, context: dict[str, Any]) -> OAuth:
    """``auth/client-credentials-{jwt,basic}``: no user; a private key or a secret from the context."""
    if "private_key_pem" in context:
        return ClientCredentials(
            context["client_id"],
            private_key=context["private_key_pem"],
            algorithm=context.get("signing_algorithm"),
        )
    return ClientCredentials(context["client_id"], client_secret=context["client_secret"])


def enterprise_auth(scenario: str, context: dict[str, Any]) -> OAuth:
    """``auth/enterprise-managed-authorization``: ID token -> ID-JAG at the IdP -> JWT bearer grant."""
    return EnterpriseAuth(
        client_id=context["client_id"],
        client_secret=context.get("client_secret"),
        id_token=context["idp_id_token"],
        idp_token_endpoint=context["idp_token_endpoint"],
        idp_client_id=context["idp_client_id"],
        idp_issuer=context.get("idp_issuer"),
    )


def workload_identity_auth(scenario: str, context: dict[str, Any]) -> OAuth:
    """``auth/wif-jwt-bearer``: the workload's JWT as a JWT bearer grant (only the valid one:
    the context's expired and wrong-audience tokens exist to be refused, not to be sent)."""
    return WorkloadIdentity(context["valid_jwt"], client_id=context["client_id"])


def dpop_auth(scenario: str, context: dict[str, Any]) -> OAuth:
    """``auth/dpop``, ``auth/dpop-nonce``: the authorization code flow with DPoP-bound tokens."""
    return OAuth(
        authorizer=HeadlessAuthorizer(REDIRECT_URI),
        client_name="mcpkit-conformance-client",
        hooks=[DPoPSigner()],
    )


AuthFactory = Callable[[str, dict[str, Any]], OAuth]
AUTH_FLOWS: dict[str, AuthFactory] = {
    "auth/pre-registration": pre_registered_auth,
    "auth/client-credentials-jwt": client_credentials_auth,
    "auth/client-credentials-basic": client_credentials_auth,
    "auth/enterprise-managed-authorization": enterprise_auth,
    "auth/wif-jwt-bearer": workload_identity_auth,
    "auth/dpop": dpop_auth,
    "auth/dpop-nonce": dpop_auth,
}


def auth_for(scenario: str, context: dict[str, Any]) -> OAuth | None:
    if not scenario.startswith("auth/"):
        return None
    return AUTH_FLOWS.get(scenario, authorization_code_auth)(scenario, context)


# -- running ------------------------------------------------------------------------------------
async def run(scenario: str, url: str, context: dict[str, Any]) -> None:
    action = SCENARIOS.get(scenario, list_and_call_first)
    async with Client(
        url=url,
        auth=auth_for(scenario, context),
        name=f"conformance:{scenario}",
        timeout=TIMEOUT_S,
        protocol_version=wire_revision(),
        supported_versions=HANDSHAKE_REVISIONS + STATELESS_VERSIONS,
        client_info={"name": "mcpkit-conformance-client", "version": "0.1.0"},
        elicitation_handler=accept_with_defaults,
        sampling_handler=sample,
        roots=[],
    ) as client:
        log.info("connected to %s with %s", url, client.protocol_version)
        await action(client, context)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    if len(argv) < 2:
        print("usage: conformance_client.py [args...] SERVER_URL", file=sys.stderr)
        return 2
    url = argv[-1]  # the harness appends the mock server's URL last
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    except ValueError:
        context = {}
    log.info("scenario %r against %s", scenario, url)
    try:
        asyncio.run(run(scenario, url, context if isinstance(context, dict) else {}))
    except Exception as exc:
        print(
            f"conformance client failed ({scenario}): {type(exc).__name__}: {exc}", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
