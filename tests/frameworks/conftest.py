"""A server with a few tools, an MCPClient on it, and local HTTP servers speaking OpenAI's and Anthropic's wire formats."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpkit import MCPClient, MCPServer, ToolError
from tests.client.http_servers import serve


def tool_server() -> MCPServer:
    server = MCPServer(name="calc", version="1.0.0")

    @server.tool
    def add(a: int, b: int) -> dict[str, int]:
        """Add two numbers."""
        return {"sum": a + b}

    @server.tool
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    @server.tool
    def refuse(reason: str) -> str:
        """Always fails, with the reason."""
        raise ToolError(f"refused: {reason}")

    @server.tool(name="files.read")
    def files_read(path: str) -> str:
        """A tool whose MCP name has a dot."""
        return f"contents of {path}"

    return server


@pytest.fixture
async def mcp() -> AsyncIterator[MCPClient]:
    client = MCPClient(servers={"calc": {"server": tool_server()}})
    async with client:
        yield client


class Provider:
    """A local model API: records each request's JSON body, answers from a queue."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []
        self.url = ""

    async def handle(self, request: Request) -> JSONResponse:
        self.requests.append(json.loads(await request.body()))
        return JSONResponse(self.answers.pop(0))


@pytest.fixture
async def provider() -> AsyncIterator[Provider]:
    prov = Provider()
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", prov.handle, methods=["POST"]),
            Route("/v1/messages", prov.handle, methods=["POST"]),
        ]
    )
    async with serve(app, path="/v1") as url:
        prov.url = url
        yield prov
