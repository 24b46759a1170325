"""URL-mode elicitation (2025-11-25 client/elicitation § URL mode) on both eras.

``ctx.elicit_url`` sends the user to a page out of band, ``URLElicitationRequiredError``
is the ``-32042`` error, and ``notifications/elicitation/complete`` tells the client a
visit is done (``ctx.complete_elicitation`` / ``server.complete_elicitation``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpkit import (
    Client,
    Context,
    MCPServer,
    URLElicitation,
    URLElicitationRequiredError,
)
from mcpkit.errors import URL_ELICITATION_REQUIRED, RemoteError
from mcpkit.server.client_requests import check_url
from mcpkit.testing import connect
from tests.schema import validate_message

URL = "https://pay.example.com/checkout?ref=abc"
BOTH_MODES = {"elicitation": {"form": {}, "url": {}}}


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result["content"] if c["type"] == "text")


def url_server() -> tuple[MCPServer, dict[str, Any]]:
    server = MCPServer(name="pay", version="1")
    seen: dict[str, Any] = {}

    @server.tool
    async def pay(ctx: Context) -> str:
        answer = await ctx.elicit_url(URL, "Pay on the provider's page", elicitation_id="e-1")
        seen["answer"] = answer
        seen["session_id"] = ctx.session_id
        if answer.action == "accept":
            seen["completed"] = await ctx.complete_elicitation("e-1")
        return answer.action

    @server.tool
    async def needs_link() -> str:
        raise URLElicitationRequiredError(
            [URLElicitation(url=URL, message="Link your account", elicitation_id="link-7")]
        )

    return server, seen


async def test_elicit_url_sends_a_url_mode_request_and_returns_the_action() -> None:
    server, seen = url_server()

    def consent(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept"}

    async with connect(
        server, capabilities=BOTH_MODES, handlers={"elicitation/create": consent}
    ) as client:
        assert text_of(await client.call_tool("pay")) == "accept"
        (request,) = [m for m in client.received if m.get("method") == "elicitation/create"]
        notes = [
            m for m in client.received if m.get("method") == "notifications/elicitation/complete"
        ]
    validate_message(request, "2025-11-25")
    assert request["params"] == {
        "mode": "url",
        "message": "Pay on the provider's page",
        "url": URL,
        "elicitationId": "e-1",
    }
    assert seen["answer"].action == "accept" and seen["answer"].content is None
    assert seen["completed"] is True
    (note,) = notes
    validate_message(note, "2025-11-25")
    assert note["params"] == {"elicitationId": "e-1"}


async def test_elicit_url_needs_the_client_to_declare_url_mode() -> None:
    server, seen = url_server()
    async with connect(server, capabilities={"elicitation": {"form": {}}}, handlers={}) as client:
        result = await client.call_tool("pay")
    assert result["isError"] is True
    assert "elicitation.url" in text_of(result)
    assert "answer" not in seen


async def test_elicit_url_needs_2025_11_25() -> None:
    server, _ = url_server()
    async with connect(server, capabilities=BOTH_MODES, protocol_version="2025-06-18") as client:
        result = await client.call_tool("pay")
    assert result["isError"] is True
    assert "2025-11-25" in text_of(result)


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "file:///etc/passwd", "/relative", "", "https://", "x" * 9000],
)
def test_only_absolute_web_urls_are_sent(url: str) -> None:
    with pytest.raises(ValueError, match="elicitation URL"):
        check_url(url)


async def test_url_elicitation_required_is_error_32042_with_the_elicitations() -> None:
    server, _ = url_server()
    async with connect(server, capabilities=BOTH_MODES) as client:
        with pytest.raises(RemoteError) as caught:
            await client.call_tool("needs_link")
        (response,) = [m for m in client.received if "error" in m]
    assert caught.value.code == URL_ELICITATION_REQUIRED == -32042
    validate_message(response, "2025-11-25", request_method="tools/call")
    assert response["error"]["data"] == {
        "elicitations": [
            {
                "mode": "url",
                "message": "Link your account",
                "url": URL,
                "elicitationId": "link-7",
            }
        ]
    }


def test_url_elicitation_required_checks_its_urls() -> None:
    with pytest.raises(ValueError):
        URLElicitationRequiredError([])
    with pytest.raises(ValueError):
        URLElicitationRequiredError([URLElicitation("ftp://x", "m", "i")])


async def test_server_complete_elicitation_reaches_the_live_session() -> None:
    server = MCPServer(name="pay", version="1")
    started = asyncio.Event()
    ids: list[str | None] = []

    @server.tool
    async def wait_for_visit(ctx: Context) -> str:
        ids.append(ctx.session_id)
        started.set()
        await asyncio.sleep(0.05)
        return "ok"

    got = asyncio.Event()
    async with Client(
        server=server,
        protocol_version="2025-11-25",
        elicitation_handler=lambda p: {"action": "accept"},
        elicitation_modes=("form", "url"),
    ) as client:
        client.session.on_notification(
            "notifications/elicitation/complete", lambda params: got.set()
        )
        call = asyncio.create_task(client.call_tool("wait_for_visit"))
        await asyncio.wait_for(started.wait(), 5)
        assert await server.complete_elicitation("visit-1", session_id=ids[0]) is True
        assert await server.complete_elicitation("visit-1", session_id="no-such") is False
        await asyncio.wait_for(got.wait(), 5)
        await call


async def test_complete_elicitation_sends_nothing_to_a_client_without_url_mode() -> None:
    server, _ = url_server()
    async with connect(server, capabilities={"elicitation": {}}, handlers={}) as client:
        sid = None
        for session in server.sessions():
            sid = session.session_id
        assert await server.complete_elicitation("e-1", session_id=sid) is False
        assert not [
            m for m in client.received if m.get("method") == "notifications/elicitation/complete"
        ]


async def test_elicit_url_on_2026_07_28_is_an_input_round_the_client_answers() -> None:
    server, seen = url_server()
    asked: list[dict[str, Any]] = []

    def consent(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "decline"}

    async with Client(
        server=server,
        protocol_version="2026-07-28",
        elicitation_handler=consent,
        elicitation_modes=("form", "url"),
    ) as client:
        result = await client.call_tool("pay")
    assert text_of(result) == "decline"
    (params,) = asked
    assert params["mode"] == "url" and params["url"] == URL
    assert seen["answer"].action == "decline"
