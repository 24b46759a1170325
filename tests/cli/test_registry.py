"""``mcpkit registry``: writing and checking the server.json of the MCP registry."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpkit.cli import main
from mcpkit.server.metadata import SERVER_SCHEMA_URL, validate_server_json

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0

SERVER = """
from mcpkit import MCPServer, ServerMetadata

print("importing prints go to stderr")
server = MCPServer(
    name="Weather",
    version="1.2.0",
    description={description!r},
    metadata=ServerMetadata(
        id="io.github.example/weather",
        repository={{"url": "https://github.com/example/weather", "source": "github"}},
        packages=[{{"registryType": "pypi", "identifier": "weather-mcp", "version": "1.2.0"}}],
    ),
)
"""


@pytest.fixture(autouse=True)
def _isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Loading the user's module edits sys.path and sys.modules; undo that after each test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("weather_server", "_mcpkit_target_")):
            del sys.modules[name]


def write_server(tmp_path: Path, description: str = "Forecasts for any city.") -> Path:
    path = tmp_path / "weather_server.py"
    path.write_text(textwrap.dedent(SERVER.format(description=description)))
    return path


def test_prints_a_valid_server_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["registry", str(write_server(tmp_path))]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["$schema"] == SERVER_SCHEMA_URL
    assert doc["name"] == "io.github.example/weather"
    assert doc["packages"][0]["transport"] == {"type": "stdio"}
    assert validate_server_json(doc) == []
    assert "importing prints go to stderr" in err


def test_writes_the_file_and_takes_a_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "server.json"
    status = main(
        ["registry", str(write_server(tmp_path)), "--name", "com.example/wx", "-o", str(target)]
    )
    assert status == 0
    assert json.loads(target.read_text())["name"] == "com.example/wx"
    out, err = capsys.readouterr()
    assert out == ""
    assert f"wrote {target}" in err


def test_an_invalid_server_is_reported_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "server.json"
    status = main(["registry", str(write_server(tmp_path, "x" * 150)), "-o", str(target)])
    assert status == 1
    assert not target.exists()
    err = capsys.readouterr().err
    assert "would be rejected by the MCP registry" in err
    assert "description: 150 characters; the registry allows 100" in err


def test_checks_an_existing_server_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            {
                "$schema": SERVER_SCHEMA_URL,
                "name": "com.example/thing",
                "description": "A thing.",
                "version": "1.0.0",
                "remotes": [{"type": "sse", "url": "https://thing.example.com/sse"}],
            }
        )
    )
    assert main(["registry", str(good)]) == 0
    assert "valid for the MCP registry" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "thing", "version": "latest"}))
    assert main(["registry", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "name: 'thing' is not a reverse-DNS name" in err
    assert "description: is required" in err
    assert "version: 'latest'" in err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert main(["registry", str(broken)]) == 1
    assert "is not JSON" in capsys.readouterr().err


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["registry", str(tmp_path / "missing.py")]) == 2
    assert "file not found" in capsys.readouterr().err
    assert main(["registry", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    good = tmp_path / "x.json"
    good.write_text("{}")
    assert main(["registry", str(good), "--name", "com.example/x"]) == 2
    assert "apply to a server" in capsys.readouterr().err


def test_the_installed_command_writes_json_to_stdout(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mcpkit", "registry", str(write_server(tmp_path))],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["version"] == "1.2.0"
