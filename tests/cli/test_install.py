"""``mcpkit install``: each host's file, format and location, written idempotently with a backup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcpkit.cli import main
from mcpkit.cli.hosts import HOSTS, parse_jsonc, user_config_path

SERVER = """
from mcpkit import MCPServer

print("importing prints go to stderr")
server = MCPServer(name="weather", version="1.0.0", description="Forecasts.")

@server.tool
def forecast(city: str) -> str:
    "The weather in a city."
    return f"sunny in {city}"
"""

# Where each host keeps its user file, relative to HOME, on Linux (XDG unset).
LINUX_FILES = {
    "claude-desktop": ".config/Claude/claude_desktop_config.json",
    "claude-code": ".claude.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".config/Code/User/mcp.json",
    "gemini-cli": ".gemini/settings.json",
    "goose": ".config/goose/config.yaml",
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME with no XDG or APPDATA override: every host file lands under it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("APPDATA", raising=False)
    return home


@pytest.fixture(autouse=True)
def _isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("weather_server", "_mcpkit_target_")):
            del sys.modules[name]


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "proj" / "weather_server.py"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(SERVER))
    return path


def load(path: Path) -> Any:
    text = path.read_text()
    return yaml.safe_load(text) if path.suffix == ".yaml" else json.loads(text)


def entry(doc: Any, host: str, name: str = "weather") -> dict[str, Any]:
    key = {"vscode": "servers", "goose": "extensions"}.get(host, "mcpServers")
    found: dict[str, Any] = doc[key][name]
    return found


def command_of(host: str, item: dict[str, Any]) -> tuple[str, list[str], dict[str, str]]:
    if host == "goose":
        return item["cmd"], item["args"], item["envs"]
    return item["command"], item["args"], item.get("env", {})


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_dry_run_prints_each_hosts_file_and_writes_nothing(
    host: str, home: Path, app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["install", host, str(app), "--env", "TOKEN=abc", "--dry-run"]) == 0
    out = capsys.readouterr().out
    first, _, body = out.partition("\n")
    path = home / LINUX_FILES[host]
    assert first == f"would write {path}:"
    assert not path.exists()
    doc = yaml.safe_load(body) if host == "goose" else json.loads(body)
    command, args, env = command_of(host, entry(doc, host))
    assert (command, args, env) == (
        sys.executable,
        ["-m", "mcpkit", "run", str(app)],
        {"TOKEN": "abc"},
    )
    if host in ("claude-code", "vscode"):
        assert entry(doc, host)["type"] == "stdio"
    if host == "goose":
        item = entry(doc, host)
        assert (item["name"], item["type"], item["enabled"]) == ("weather", "stdio", True)
        assert item["description"] == "Forecasts."


EXPECTED_PATHS = {
    ("claude-desktop", "darwin"): "H/Library/Application Support/Claude/claude_desktop_config.json",
    ("claude-desktop", "win32"): "A/Claude/claude_desktop_config.json",
    ("claude-desktop", "linux"): "X/Claude/claude_desktop_config.json",
    ("claude-code", "darwin"): "H/.claude.json",
    ("claude-code", "win32"): "H/.claude.json",
    ("cursor", "win32"): "H/.cursor/mcp.json",
    ("vscode", "darwin"): "H/Library/Application Support/Code/User/mcp.json",
    ("vscode", "win32"): "A/Code/User/mcp.json",
    ("vscode", "linux"): "X/Code/User/mcp.json",
    ("gemini-cli", "win32"): "H/.gemini/settings.json",
    ("goose", "darwin"): "X/goose/config.yaml",
    ("goose", "linux"): "X/goose/config.yaml",
    ("goose", "win32"): "A/Block/goose/config/config.yaml",
}


@pytest.mark.parametrize(("host", "system"), sorted(EXPECTED_PATHS))
def test_each_host_file_per_operating_system(host: str, system: str) -> None:
    env = {"APPDATA": "A", "XDG_CONFIG_HOME": "X"}
    path = user_config_path(HOSTS[host], system=system, home=Path("H"), env=env)
    assert path == Path(EXPECTED_PATHS[host, system])


def test_install_keeps_the_rest_of_the_file_is_idempotent_and_backs_up(
    home: Path, app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    before = {"mcpServers": {"other": {"command": "other-server"}}, "theme": "dark"}
    path.write_text(json.dumps(before))

    assert main(["install", "cursor", str(app), "--env", "A=1"]) == 0
    assert capsys.readouterr().out.startswith(f"Cursor: installed 'weather' in {path} (backup: ")
    doc = load(path)
    assert doc["theme"] == "dark" and doc["mcpServers"]["other"] == {"command": "other-server"}
    backups = list(path.parent.glob("mcp.json.*.bak"))
    assert [json.loads(b.read_text()) for b in backups] == [before]

    # The same again: nothing written, no new backup.
    written = path.read_text()
    for backup in backups:
        backup.unlink()
    assert main(["install", "cursor", str(app), "--env", "A=1"]) == 0
    assert "already installed" in capsys.readouterr().out
    assert path.read_text() == written
    assert not list(path.parent.glob("*.bak"))

    # A variable added by hand survives a re-install that changes another.
    doc["mcpServers"]["weather"]["env"]["SECRET"] = "s3"
    path.write_text(json.dumps(doc))
    assert main(["install", "cursor", str(app), "--env", "A=2"]) == 0
    assert "updated 'weather'" in capsys.readouterr().out
    assert entry(load(path), "cursor")["env"] == {"A": "2", "SECRET": "s3"}
    assert len(list(path.parent.glob("*.bak"))) == 1


def test_env_file_then_env_flags_and_name(home: Path, app: Path, tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "# secrets\nexport API_KEY='k y'\nREGION=eu # where\nEMPTY=\nQUOTED=\"a#b\"\nA=from-file\n"
    )
    argv = ["install", "gemini-cli", str(app), "--env-file", str(env_file), "--env", "A=flag"]
    assert main([*argv, "--name", "wx"]) == 0
    item = entry(load(home / ".gemini" / "settings.json"), "gemini-cli", "wx")
    assert item["env"] == {
        "API_KEY": "k y",
        "REGION": "eu",
        "EMPTY": "",
        "QUOTED": "a#b",
        "A": "flag",
    }


def test_goose_yaml_keeps_other_settings(home: Path, app: Path) -> None:
    path = home / ".config" / "goose" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(
        "GOOSE_PROVIDER: anthropic\nextensions:\n  developer:\n    bundled: true\n"
        "    enabled: true\n    name: developer\n    timeout: 300\n    type: builtin\n"
    )
    assert main(["install", "goose", str(app)]) == 0
    doc = load(path)
    assert doc["GOOSE_PROVIDER"] == "anthropic"
    assert doc["extensions"]["developer"]["type"] == "builtin"
    item = doc["extensions"]["weather"]
    assert (item["cmd"], item["args"]) == (sys.executable, ["-m", "mcpkit", "run", str(app)])
    assert item["timeout"] == 300 and item["envs"] == {}


def test_goose_keys_the_entry_as_goose_does(home: Path, app: Path) -> None:
    assert main(["install", "goose", str(app), "--name", "My Weather+"]) == 0
    item = entry(load(home / LINUX_FILES["goose"]), "goose", "myweather_")
    assert item["name"] == "My Weather+"


def test_vscode_file_with_comments_is_read(
    home: Path, app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = home / ".config" / "Code" / "User" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        '{\n  // mine\n  "servers": {"x": {"type": "http", "url": "http://a//b"},},\n  "inputs": [],\n}\n'
    )
    assert main(["install", "vscode", str(app)]) == 0
    doc = load(path)
    assert doc["servers"]["x"] == {"type": "http", "url": "http://a//b"} and doc["inputs"] == []
    assert entry(doc, "vscode")["type"] == "stdio"
    assert "comments or trailing commas, which are not kept" in capsys.readouterr().err
    assert "// mine" in next(path.parent.glob("mcp.json.*.bak")).read_text()


def test_parse_jsonc_keeps_comment_like_text_in_strings() -> None:
    text = '{"a": "// no", "b": "/* no */", /* c */ "c": [1, 2, ], }'
    assert parse_jsonc(text) == {"a": "// no", "b": "/* no */", "c": [1, 2]}


def test_project_configuration(home: Path, app: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    assert main(["install", "claude-code", str(app), "--project", str(project)]) == 0
    assert entry(load(project / ".mcp.json"), "claude-code")["type"] == "stdio"
    assert not (home / ".claude.json").exists()


def test_refusals(
    home: Path, app: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["install", "claude-desktop", str(app), "--project", str(tmp_path)]) == 2
    assert "Claude Desktop has no project configuration" in capsys.readouterr().err
    assert main(["install", "cursor", str(tmp_path / "nope.py")]) == 2
    assert capsys.readouterr().err == f"mcpkit: error: file not found: {tmp_path / 'nope.py'}\n"
    assert main(["install", "cursor", str(app), "--env", "NOEQUALS"]) == 2
    assert "--env 'NOEQUALS' is not KEY=VALUE" in capsys.readouterr().err
    broken = home / ".cursor" / "mcp.json"
    broken.parent.mkdir()
    broken.write_text("{not json")
    assert main(["install", "cursor", str(app)]) == 1
    assert "fix it first, nothing was written" in capsys.readouterr().err
    assert broken.read_text() == "{not json"


def fake_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    uv = bin_dir / "uv"
    uv.write_text("#!/bin/sh\nexit 0\n")
    uv.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return str(uv)


def test_uv_runs_the_files_project(
    home: Path, app: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uv = fake_uv(tmp_path, monkeypatch)
    (app.parent / "pyproject.toml").write_text("[project]\nname = 'wx'\n")
    assert main(["install", "claude-desktop", str(app), "--uv", "--with", "httpx"]) == 0
    item = entry(load(home / LINUX_FILES["claude-desktop"]), "claude-desktop")
    args = ["run", "--project", str(app.parent), "--with", "httpx", "mcpkit", "run", str(app)]
    assert (item["command"], item["args"]) == (uv, args)


def test_uv_without_a_project_brings_mcpkit(
    home: Path, app: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uv = fake_uv(tmp_path, monkeypatch)
    monkeypatch.setattr("mcpkit.cli.install._project_of", lambda start: None)
    assert main(["install", "cursor", f"{app}:server", "--uv"]) == 0
    item = entry(load(home / ".cursor" / "mcp.json"), "cursor")
    assert (item["command"], item["args"]) == (
        uv,
        ["run", "--with", "mcpkit", "mcpkit", "run", f"{app}:server"],
    )


def test_a_module_target_is_found_from_where_it_was_named(
    home: Path, app: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(app.parent)
    assert main(["install", "cursor", "weather_server"]) == 0
    item = entry(load(home / ".cursor" / "mcp.json"), "cursor")
    assert item["args"] == ["-m", "mcpkit", "run", "weather_server"]
    assert item["env"] == {"PYTHONPATH": str(app.parent)}


def test_the_installed_entry_starts_the_server(home: Path, app: Path) -> None:
    """The written command really serves: a client started from the file lists the tool."""
    assert main(["install", "claude-desktop", str(app), "--env", "WX=1"]) == 0
    config = home / LINUX_FILES["claude-desktop"]
    done = subprocess.run(
        [sys.executable, "-m", "mcpkit", "tools", "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [t["name"] for t in json.loads(done.stdout)["weather"]] == ["forecast"]


def test_goose_without_pyyaml_names_the_extra(
    home: Path, app: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # as if PyYAML were not installed
    assert main(["install", "goose", str(app)]) == 2
    assert capsys.readouterr().err.endswith(
        "mcpkit: error: installing into Goose (a YAML file) needs yaml, which is not "
        "installed: pip install 'mcpkit[devtools]'\n"
    )
