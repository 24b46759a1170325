"""``mcpkit dev``: hot reload plus the MCP Inspector, started with npx and pointed at the server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mcpkit.cli import main
from mcpkit.cli.dev import INSPECTOR, inspector_command, inspector_ui_url
from tests.cli.test_reload import Stderr

APP = """
from mcpkit import MCPServer

server = MCPServer(name="devved", version="1")
"""

# Stands in for npx: records how it was called, prints what the Inspector prints, waits.
FAKE_NPX = """#!/bin/sh
echo "$@" > "{record}"
echo $$ > "{pid}"
echo "Starting MCP inspector..."
echo "MCP Inspector is up and running at http://localhost:6274/?MCP_PROXY_AUTH_TOKEN=t0k3n"
exec sleep 60
"""


def test_the_inspector_command_connects_to_the_server_over_streamable_http() -> None:
    assert inspector_command("/usr/bin/npx", "http://127.0.0.1:8000/mcp") == [
        "/usr/bin/npx",
        "-y",
        INSPECTOR,
        "--transport",
        "http",
        "--server-url",
        "http://127.0.0.1:8000/mcp",
    ]


def test_the_inspector_ui_url_is_found_in_its_output() -> None:
    server = "http://127.0.0.1:8000"
    line = (
        "🚀 MCP Inspector is up and running at http://localhost:6274/?MCP_PROXY_AUTH_TOKEN=abc 🚀"
    )
    assert inspector_ui_url(line, server) == "http://localhost:6274/?MCP_PROXY_AUTH_TOKEN=abc"
    assert inspector_ui_url(f"connecting to {server}/mcp", server) is None
    assert inspector_ui_url("Starting MCP inspector...", server) is None


def test_without_npx_the_message_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "devved.py"
    app.write_text(textwrap.dedent(APP))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["dev", str(app)]) == 2
    assert capsys.readouterr().err == (
        "mcpkit: error: mcpkit dev starts the MCP Inspector with npx, which is not on PATH: "
        "install Node.js 22 or newer (https://nodejs.org), or serve without the Inspector: "
        "mcpkit dev FILE --no-inspector\n"
    )


def test_dev_serves_then_starts_the_inspector_on_its_url_and_stops_it(tmp_path: Path) -> None:
    app = tmp_path / "devved.py"
    app.write_text(textwrap.dedent(APP))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record, pid_file = tmp_path / "npx-args", tmp_path / "npx-pid"
    npx = bin_dir / "npx"
    npx.write_text(FAKE_NPX.format(record=record, pid=pid_file))
    npx.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpkit", "dev", str(app), "--port", "0"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    err = Stderr(process)
    try:
        url = err.wait_for(r"serving 'devved' on (\S+) ").group(1)
        ui = err.wait_for(r"mcpkit: MCP Inspector: (\S+)").group(1)
        assert ui == "http://localhost:6274/?MCP_PROXY_AUTH_TOKEN=t0k3n"
        assert record.read_text().split() == [
            "-y",
            INSPECTOR,
            "--transport",
            "http",
            "--server-url",
            url,
        ]
        inspector_pid = int(pid_file.read_text())
        process.send_signal(signal.SIGINT)
        assert process.wait(15) == 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.kill(inspector_pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the Inspector was left running")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
