"""``mcpkit dev``: hot reload plus the MCP Inspector, started with npx and pointed at the server."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from mcpkit.cli import main
from mcpkit.cli.dev import INSPECTOR, inspector_command, inspector_ui_url
from tests.cli.test_reload import Stderr, ctrl_c_as_on_a_terminal

APP = """
from mcpkit import MCPServer

server = MCPServer(name="devved", version="1")
"""

REPO = Path(__file__).resolve().parents[2]
# Installs Node 22 from npm for the conformance suite (CI runs it too); the Inspector needs it.
CONFORMANCE_SCRIPT = REPO / "scripts" / "conformance.py"
# The first npx run downloads the Inspector (~1 min on a slow link); later ones start in ~10 s.
REAL_INSPECTOR_TIMEOUT_S = 120.0

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
        preexec_fn=ctrl_c_as_on_a_terminal,
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


def _node_22_bin() -> Path:
    """The ``bin`` directory of the conformance kit's Node 22 (installed on first use)."""
    spec = importlib.util.spec_from_file_location("conformance_runner", CONFORMANCE_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    node: Path = module.install().node
    return node.parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _processes_with(marker: str) -> set[int]:
    """Live processes whose environment holds ``marker`` (the Inspector's, here)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # A zombie's environ reads empty: only running processes count.
            if marker.encode() in (entry / "environ").read_bytes().split(b"\0"):
                found.add(int(entry.name))
        except OSError:
            continue
    return found


def _command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return b""


def test_dev_starts_the_real_inspector_relays_its_ui_url_and_stops_it(tmp_path: Path) -> None:
    app = tmp_path / "devved.py"
    app.write_text(textwrap.dedent(APP))
    ui_port = _free_port()
    # CLIENT_PORT: the Inspector's web server (a fixed port, so a free one here: parallel runs
    # do not clash); its MCP Apps sandbox and app origin on any free ports; no browser.
    marker = f"CLIENT_PORT={ui_port}"
    env = {
        **os.environ,
        "PATH": f"{_node_22_bin()}{os.pathsep}{os.environ['PATH']}",
        "CLIENT_PORT": str(ui_port),
        "MCP_SANDBOX_PORT": "0",
        "MCP_APP_ORIGIN_PORT": "0",
        "MCP_AUTO_OPEN_ENABLED": "false",
        "MCP_STORAGE_DIR": str(tmp_path / "inspector-storage"),
        "MCP_INSPECTOR_SECRET_STORE": "memory",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpkit", "dev", str(app), "--port", "0"],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    err = Stderr(process)
    inspector: set[int] = set()
    try:
        url = err.wait_for(r"serving 'devved' on (\S+) ").group(1)
        ui = err.wait_for(r"mcpkit: MCP Inspector: (\S+)", REAL_INSPECTOR_TIMEOUT_S).group(1)
        assert "mcpkit: warning" not in "".join(err.seen)  # node 22 was the node found
        assert ui.startswith((f"http://127.0.0.1:{ui_port}", f"http://localhost:{ui_port}"))
        assert "TOKEN=" in ui and not ui.startswith(url)
        # The Inspector runs in a session of its own (mcpkit and its server run in ours).
        ours = os.getpgid(process.pid)
        inspector = {pid for pid in _processes_with(marker) if os.getpgid(pid) != ours}
        assert any(b"inspector" in _command_line(pid) for pid in inspector), inspector
        with urllib.request.urlopen(ui, timeout=10) as answer:
            assert answer.status == 200
            assert b"<html" in answer.read().lower()
        # SIGTERM, as a service manager stops it (SIGINT is ignored under a background shell)
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0
        deadline = time.monotonic() + 10
        while _processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        # Neither the Inspector (npm, sh, node) nor the server's processes are left running.
        left = {pid: _command_line(pid) for pid in _processes_with(marker)}
        assert not left, f"left running: {left}"
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            assert sock.connect_ex(("127.0.0.1", ui_port)) != 0, "the Inspector's port is open"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in _processes_with(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
