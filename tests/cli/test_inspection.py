"""``mcpkit inspect``: what a server exposes, as the protocol would send it, without a transport."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpkit.cli import main
from mcpkit.protocol.versions import LATEST_HANDSHAKE
from mcpkit.testing import connect
from tests.examples.fresh import fresh_example
from tests.schema import validate_message

REPO = Path(__file__).resolve().parents[2]
EVERYTHING = REPO / "examples" / "everything_server.py"
TOP_LEVEL = {
    "protocolVersion",
    "serverInfo",
    "capabilities",
    "tools",
    "resources",
    "resourceTemplates",
    "prompts",
}


@pytest.fixture(autouse=True)
def _isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Loading the user's module edits sys.path and sys.modules; undo that after each test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("everything_", "small_server", "_mcpkit_target_")):
            del sys.modules[name]


def inspect_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["inspect", *argv, "--json"]) == 0
    out = capsys.readouterr().out
    doc: dict[str, Any] = json.loads(out)
    return doc


def assert_schema_valid(doc: dict[str, Any], revision: str) -> None:
    """Each piece is what a result of its method may carry, per the official schema."""
    answers: list[tuple[str, dict[str, Any]]] = [
        ("tools/list", {"tools": doc["tools"]}),
        ("resources/list", {"resources": doc["resources"]}),
        ("resources/templates/list", {"resourceTemplates": doc["resourceTemplates"]}),
        ("prompts/list", {"prompts": doc["prompts"]}),
    ]
    if revision == "2026-07-28":
        answers.append(
            (
                "server/discover",
                {
                    "supportedVersions": [revision],
                    "capabilities": doc["capabilities"],
                    "_meta": {"io.modelcontextprotocol/serverInfo": doc["serverInfo"]},
                },
            )
        )
    else:
        answers.append(
            (
                "initialize",
                {
                    "protocolVersion": doc["protocolVersion"],
                    "capabilities": doc["capabilities"],
                    "serverInfo": doc["serverInfo"],
                },
            )
        )
    for method, result in answers:
        if revision == "2026-07-28":  # the fields of the result envelope itself
            result = {**result, "resultType": "complete", "cacheScope": "public", "ttlMs": 0}
        validate_message(
            {"jsonrpc": "2.0", "id": 1, "result": result}, revision, request_method=method
        )


@pytest.mark.parametrize("revision", [LATEST_HANDSHAKE, "2026-07-28"])
def test_json_of_the_everything_server_is_valid_per_revision(
    capsys: pytest.CaptureFixture[str], revision: str
) -> None:
    doc = inspect_json(capsys, str(EVERYTHING), "--protocol-version", revision)
    assert TOP_LEVEL <= set(doc) <= TOP_LEVEL | {"instructions", "extensions"}
    assert doc["protocolVersion"] == revision
    assert doc["serverInfo"]["name"] == "mcpkit-everything-server"
    assert "io.modelcontextprotocol/tasks" in doc["extensions"]
    assert doc["extensions"] == doc["capabilities"]["extensions"]
    names = {t["name"] for t in doc["tools"]}
    assert {"test_simple_text", "test_sampling", "json_schema_2020_12_tool"} <= names
    assert doc["resources"] and doc["resourceTemplates"] and doc["prompts"]
    assert_schema_valid(doc, revision)


def test_json_is_what_a_connected_client_receives(capsys: pytest.CaptureFixture[str]) -> None:
    doc = inspect_json(capsys, str(EVERYTHING))

    async def seen_by_a_client(server: Any) -> None:
        async with connect(server) as client:
            assert doc["tools"] == await client.list_tools()
            assert doc["resources"] == await client.list_resources()
            assert doc["resourceTemplates"] == await client.list_resource_templates()
            assert doc["prompts"] == await client.list_prompts()
            init = client.initialize_result
            assert init is not None
            assert doc["serverInfo"] == init["serverInfo"]
            assert doc["instructions"] == init["instructions"]

    with fresh_example(EVERYTHING) as module:
        asyncio.run(seen_by_a_client(module.server))


SMALL = """
import contextlib
from mcpkit import MCPServer, ServerLimits

print("importing prints go to stderr")

@contextlib.asynccontextmanager
async def lifespan(server):
    # A tool that only exists while the server runs: inspect must enter the lifespan.
    @server.tool
    def late(x: int) -> int:
        "Registered by the lifespan."
        return x
    yield {}

server = MCPServer(
    name="small", version="0.1.0", title="Small", lifespan=lifespan,
    limits=ServerLimits(page_size=2),
)
for i in range(5):
    server.tool(lambda a: a, name=f"t{i}", description=f"tool {i}")
"""


def write_small(tmp_path: Path) -> Path:
    path = tmp_path / "small_server.py"
    path.write_text(textwrap.dedent(SMALL))
    return path


def test_every_page_is_listed_and_the_lifespan_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(write_small(tmp_path)), "--json"]) == 0
    out, err = capsys.readouterr()
    assert "importing prints go to stderr" in err
    doc = json.loads(out)
    assert [t["name"] for t in doc["tools"]] == ["t0", "t1", "t2", "t3", "t4", "late"]
    assert doc["serverInfo"] == {"name": "small", "version": "0.1.0", "title": "Small"}
    # Nothing declared, nothing listed, and no keys beyond the documented ones.
    assert "extensions" not in doc and "instructions" not in doc
    assert "resources" not in doc["capabilities"]
    assert doc["resources"] == doc["resourceTemplates"] == doc["prompts"] == []


def test_an_older_revision_gets_what_that_revision_defines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = inspect_json(capsys, str(write_small(tmp_path)), "--protocol-version", "2024-11-05")
    # `title` is 2025-06-18: a 2024-11-05 client is not sent it.
    assert doc["protocolVersion"] == "2024-11-05"
    assert doc["serverInfo"] == {"name": "small", "version": "0.1.0"}
    assert_schema_valid(doc, "2024-11-05")


def test_text_output_names_each_tool_with_its_signature(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(write_small(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert out.startswith("small 0.1.0  (protocol ")
    assert "tools (6):" in out
    assert "  late(x: integer)\n      Registered by the lifespan." in out
    assert "prompts (0):\n  (none)" in out


def test_a_missing_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(tmp_path / "nope.py"), "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("mcpkit: error: file not found")
