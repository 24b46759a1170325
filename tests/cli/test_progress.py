"""``mcpkit call``'s progress and task status: a live bar in a real terminal, plain lines
in a pipe (``mcpkit.cli.progress``)."""

from __future__ import annotations

import io
import os
import pty
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mcpkit.cli.progress import ProgressDisplay

REPO = Path(__file__).resolve().parents[2]
ASKING = str(REPO / "tests" / "fixtures" / "cli_asking.py")
TASKS_SERVER = str(REPO / "examples" / "tasks_server.py")
TIMEOUT = 60.0


def _in_a_terminal(*argv: str) -> tuple[int, str, str]:
    """Run ``mcpkit ARGV`` with stderr on a pseudo-terminal; (status, stdout, terminal)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpkit", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "120", "TERM": "xterm"},
    )
    os.close(follower)
    seen = bytearray()
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        out = proc.stdout.read().decode() if proc.stdout is not None else ""
        status = proc.wait(TIMEOUT)
    finally:
        os.close(leader)
        if proc.stdout is not None:
            proc.stdout.close()
    return status, out, seen.decode().replace("\r\n", "\n")  # the terminal's ONLCR


def test_progress_is_one_live_bar_on_a_terminal() -> None:
    command = shlex.join([sys.executable, "-m", "mcpkit", "run", ASKING])
    status, out, screen = _in_a_terminal("call", "coffee", "--stdio", command)
    assert (status, out) == (0, "no coffee (decline)\n"), screen
    assert "mcpkit: progress" not in screen  # no plain lines
    half = "\rmcpkit: [==========>         ]  50% 1/2 taking the order\x1b[K"
    full = "\rmcpkit: [====================] 100% 2/2 done\x1b[K"
    # The question's note ends the live line first; the bar stays on screen at the end.
    assert screen == (
        f"{half}\nmcpkit: the server asks: How do you take your coffee?\n"
        "mcpkit: declined (stdin is not a terminal; answer with --elicit JSON)\n"
        f"{full}\n"
    )


def test_task_status_is_redrawn_and_the_final_one_kept() -> None:
    command = shlex.join([sys.executable, "-m", "mcpkit", "run", TASKS_SERVER])
    status, out, screen = _in_a_terminal(
        "call", "slow_count", "--stdio", command, "--args", '{"n": 3}'
    )
    assert (status, out) == (0, "counted to 3\n"), screen
    lines = screen.split("\n")
    assert lines[-1] == ""  # ends with a newline
    assert len(lines) == 2, screen  # one line, redrawn in place, then kept
    draws = lines[0].split("\r")[1:]
    assert all(d.startswith("mcpkit: task ") and d.endswith("\x1b[K") for d in draws), draws
    assert any(d.endswith("working: counted 1 of 3\x1b[K") for d in draws)
    assert draws[-1].endswith(" completed\x1b[K")


def test_in_a_pipe_each_report_is_a_plain_line() -> None:
    stream = io.StringIO()
    display = ProgressDisplay(stream)  # a StringIO is no terminal
    display.progress(1, 4, "one")
    display.progress(2.5, None, None)
    display.finish()
    assert stream.getvalue() == "mcpkit: progress 1/4 (25%): one\nmcpkit: progress 2.5\n"


def test_a_live_line_is_cut_to_the_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "30")
    stream = io.StringIO()
    display = ProgressDisplay(stream, live=True)
    display.progress(3, 10, "a message far too long for thirty columns")
    display.progress(4, None, "no total")
    display.finish()
    first, second = stream.getvalue().split("\r")[1:]
    assert first == "mcpkit: [======>          ...\x1b[K"
    assert len(first) - len("\x1b[K") == 29  # one column short: no wrap
    assert second == "mcpkit: / 4 no total\x1b[K\n"
