"""examples/agents_server.py: in memory, and run the way a user runs it (mcpkit run, stdio)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mcpkit import MCPServer
from mcpkit.client import Client
from mcpkit.server.metadata import validate_server_json
from mcpkit.testing import connect

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "agents_server.py"
TIMEOUT = 30.0

HAIKU = {
    "role": "assistant",
    "content": {
        "type": "text",
        "text": "Tools answer in turn\nagents ask, workflows run\nno keys on the shelf",
    },
    "model": "client-llm",
    "stopReason": "endTurn",
}


@pytest.fixture
def server() -> Iterator[MCPServer]:
    """A fresh copy of the example per test (its notebook keeps state)."""
    spec = importlib.util.spec_from_file_location("agents_server_under_test", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the module's annotations through it
    try:
        spec.loader.exec_module(module)
        yield module.server
    finally:
        sys.modules.pop(spec.name, None)


async def test_it_exposes_agents_workflows_and_declared_components(server: MCPServer) -> None:
    async with connect(server) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        resources = await client.request("resources/list")
        prompts = await client.request("prompts/list")
    assert set(tools) == {"add_note", "ask_librarian", "ask_poet", "run_text-report"}
    assert tools["ask_librarian"]["description"] == (
        "Ask agent 'Librarian' a question. Agent description: "
        "Explains MCP terms: agent, workflow, MCP, sampling."
    )
    assert tools["run_text-report"]["inputSchema"]["required"] == ["text"]
    assert [r["uri"] for r in resources["resources"]] == ["notes://all"]
    assert [p["name"] for p in prompts["prompts"]] == ["review-notes"]


async def test_the_librarian_answers_from_its_glossary(server: MCPServer) -> None:
    async with connect(server) as client:
        result = await client.call_tool("ask_librarian", {"message": "What is sampling?"})
    assert result["structuredContent"]["terms"] == ["sampling"]
    assert result["structuredContent"]["text"].startswith("Sampling lets a server")


async def test_the_text_report_workflow_runs_every_kind_of_step(server: MCPServer) -> None:
    text = " ".join(["word"] * 60) + " extraordinarily"
    async with connect(server) as client:
        result = await client.call_tool("run_text-report", {"text": text}, progress_token="p")
        progress = [n["params"] for n in client.notifications if n["method"].endswith("progress")]
    data = result["structuredContent"]
    assert data["status"] == "success"
    assert data["result"] == {
        "words": 61,
        "longest_word": "extraordinarily",
        "reading_seconds": 15.25,
        "verdict": "a long read: take a coffee",
    }
    assert data["steps"]["quick_read"] == {"status": "skipped"}
    assert [p["progress"] for p in progress] == list(range(1, 8))
    assert {p["total"] for p in progress} == {7}


async def test_the_poet_thinks_with_the_clients_llm(server: MCPServer) -> None:
    async with connect(
        server, capabilities={"sampling": {}}, handlers={"sampling/createMessage": lambda p: HAIKU}
    ) as client:
        result = await client.call_tool("ask_poet", {"message": "tools"})
    assert result["structuredContent"]["text"] == HAIKU["content"]["text"]  # type: ignore[index]


async def test_notes_are_kept_read_and_reviewed(server: MCPServer) -> None:
    async with connect(server) as client:
        await client.call_tool("add_note", {"text": "fix the tpyo"})
        notes = await client.read_resource("notes://all")
        prompt = await client.get_prompt("review-notes", {"focus": "typos"})
        completion = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "review-notes"},
                "argument": {"name": "focus", "value": "t"},
            },
        )
    assert notes["contents"][0]["text"] == "fix the tpyo"
    assert "Review these notes for typos" in prompt["messages"][0]["content"]["text"]
    assert completion["completion"]["values"] == ["typos", "tone", "todos"]


async def test_run_with_one_command_over_stdio() -> None:
    """``mcpkit run examples/agents_server.py``, driven by mcpkit's own client."""
    async with Client(
        command=sys.executable,
        args=["-m", "mcpkit", "run", str(EXAMPLE)],
        cwd=REPO,
        sampling_handler=lambda params: HAIKU,
        timeout=TIMEOUT,
    ) as client:
        assert client.server_info["name"] == "mcpkit agents demo"
        # The default era: the poet samples through input-required rounds.
        assert client.protocol_version == "2026-07-28"
        librarian = await client.call_tool("ask_librarian", {"message": "what is an agent?"})
        report = await client.call_tool("run_text-report", {"text": "short and sweet"})
        poem = await client.call_tool("ask_poet", {"message": "stdio"})
    assert librarian["structuredContent"]["terms"] == ["agent"]
    assert report["structuredContent"]["result"]["verdict"] == "a quick read"
    assert poem["structuredContent"]["text"].startswith("Tools answer in turn")


def test_its_registry_server_json_is_valid() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mcpkit", "registry", str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    assert doc["name"] == "com.example/agents-demo"
    assert validate_server_json(doc) == []


def test_called_with_mcpkit_call() -> None:
    """What the example's docstring tells a new user to type."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpkit",
            "call",
            "run_text-report",
            "--stdio",
            f"{sys.executable} -m mcpkit run {EXAMPLE}",
            "--args",
            '{"text": "Agents think, workflows follow steps."}',
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert '"verdict": "a quick read"' in out.stdout
    assert '"longest_word": "workflows"' in out.stdout
