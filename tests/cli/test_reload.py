"""``mcpkit run --reload``: a real process, a real file change, the last good server kept."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpkit import Client, MCPServer
from mcpkit.cli import main
from mcpkit.cli.reload import serve_reloading
from mcpkit.transports.asgi import ASGIApp

APP = """
from mcpkit import MCPServer

server = MCPServer(name="reloading", version="1")

@server.tool
def version() -> str:
    "Which code is running."
    return {answer!r}
"""


def ctrl_c_as_on_a_terminal() -> None:
    """In the child before exec: SIGINT as a terminal's Ctrl+C delivers it. A shell that runs
    jobs in the background (CI's, often) starts them with SIGINT ignored, and Python then
    installs no KeyboardInterrupt handler, so the test's SIGINT would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Stderr:
    """The lines a process writes to stderr, read in a thread, awaited by pattern."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert process.stderr is not None
        stream = process.stderr
        threading.Thread(
            target=lambda: [self.lines.put(line) for line in stream], daemon=True
        ).start()

    def wait_for(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no line matching {pattern!r} in:\n{''.join(self.seen)}")


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "reloading_app.py"
    path.write_text(textwrap.dedent(APP.format(answer="one")))
    return path


@pytest.fixture
def server(app: Path) -> Iterator[tuple[subprocess.Popen[str], Stderr, str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpkit", "run", str(app), "-t", "http", "--port", "0", "--reload"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        cwd=app.parent,
        preexec_fn=ctrl_c_as_on_a_terminal,
    )
    err = Stderr(process)
    try:
        url = err.wait_for(r"serving 'reloading' on (\S+) ").group(1)
        err.wait_for("reloading on changes")
        yield process, err, url
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def version(url: str) -> str:
    async with Client(url=url) as client:
        result = await client.call_tool("version", {})
    text: str = result["content"][0]["text"]
    return text


def rewrite(app: Path, text: str) -> None:
    app.write_text(text)
    # A coarse file system clock must still see a new modification.
    os.utime(app, (time.time(), time.time() + 1))


async def test_a_change_reloads_quickly_and_a_broken_one_keeps_the_last_good_server(
    app: Path, server: tuple[subprocess.Popen[str], Stderr, str]
) -> None:
    process, err, url = server
    assert await version(url) == "one"

    rewrite(app, textwrap.dedent(APP.format(answer="two")))
    took = float(err.wait_for(r"reloaded in ([\d.]+) s").group(1))
    assert took < 1.0  # loading the new code and starting its server
    assert await version(url) == "two"

    rewrite(app, textwrap.dedent(APP.format(answer="three")) + "\ndef broken(:\n")
    err.wait_for("SyntaxError")
    err.wait_for("the change did not load: the last good server keeps serving")
    assert await version(url) == "two"

    rewrite(app, textwrap.dedent(APP.format(answer="four")))
    err.wait_for("reloaded in")
    assert await version(url) == "four"

    process.send_signal(signal.SIGINT)
    assert process.wait(15) == 0


def test_reload_is_refused_on_stdio_and_with_workers(
    app: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(app), "--reload"]) == 2
    assert (
        capsys.readouterr().err == "mcpkit: error: --reload cannot be used with --transport stdio\n"
    )
    assert main(["run", str(app), "-t", "http", "--reload", "--workers", "2", "--stateless"]) == 2
    assert "--reload runs one server process" in capsys.readouterr().err
    assert main(["run", str(app), "-t", "http", "--reload-dir", "."]) == 2
    assert capsys.readouterr().err == "mcpkit: error: --reload-dir needs --reload\n"


def test_reload_without_watchfiles_names_the_extra(
    app: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "watchfiles", None)  # as if it were not installed
    assert main(["run", str(app), "-t", "http", "--reload"]) == 2
    assert capsys.readouterr().err == (
        "mcpkit: error: hot reload (mcpkit run --reload, mcpkit dev) needs watchfiles, which is "
        "not installed: pip install 'mcpkit[devtools]'\n"
    )


def _demo_app() -> ASGIApp:
    """The app each reloading child serves (module level: children import it by name)."""
    return MCPServer(name="demo", version="1").http_app()


def test_ctrl_c_before_the_watch_begins_stops_the_server_without_a_traceback(
    tmp_path: Path,
) -> None:
    called: list[str] = []

    def interrupt(url: str) -> None:  # Ctrl+C while `mcpkit dev` starts the Inspector
        called.append(url)
        raise KeyboardInterrupt

    serve_reloading(
        _demo_app,
        host="127.0.0.1",
        port=0,
        banner="serving on {url}",
        watch=[tmp_path],
        on_serving=interrupt,
    )
    [url] = called
    port = int(url.rsplit(":", 1)[1])
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        assert sock.connect_ex(("127.0.0.1", port)) != 0, "the server still listens"
