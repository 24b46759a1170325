"""examples/protected_server.py, served over real sockets as `mcpkit run` would serve it."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from mcpkit import MCPServer
from mcpkit.auth.resource_server import ProtectedApp
from tests.auth.protected_support import client_with, initialize_message, raw_post
from tests.transports.conftest import TIMEOUT, run_app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "protected_server.py"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[MCPServer]:
    monkeypatch.setenv("MCP_DEV_TOKENS", "t-ada=ada t-bob=bob")
    spec = importlib.util.spec_from_file_location("protected_server_under_test", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module.server
    finally:
        sys.modules.pop(spec.name, None)


async def test_the_example_refuses_strangers_and_keeps_notes_per_subject(
    server: MCPServer,
) -> None:
    app = server.http_app()
    assert isinstance(app, ProtectedApp)
    async with run_app(app) as base, httpx.AsyncClient(timeout=TIMEOUT) as http:
        url = base + "/mcp"
        refused = await raw_post(http, url, initialize_message())
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == (
            'Bearer resource_metadata="http://127.0.0.1:8000/.well-known/'
            'oauth-protected-resource/mcp", scope="notes:read notes:write"'
        )
        meta = await http.get(base + "/.well-known/oauth-protected-resource/mcp")
        assert meta.json()["resource_name"] == "Protected notes (mcpkit example)"
        answers = []
        for token in ("t-ada", "t-bob"):
            client = client_with(http, url, token)
            await client.initialize()
            await client.call_tool("add_note", {"text": f"from {token}"})
            answers.append((await client.call_tool("my_notes")).result["content"])
        assert [[c["text"] for c in a] for a in answers] == [["from t-ada"], ["from t-bob"]]
