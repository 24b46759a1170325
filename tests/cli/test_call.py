"""``mcpkit call`` answering a tool's questions (elicitation) and showing its progress.

The command runs as a real subprocess against a real stdio server
(``tests/fixtures/cli_asking.py``) whose tool reports progress and asks the
user how to make a coffee.
"""

from __future__ import annotations

import os
import pty
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ASKING = str(REPO / "tests" / "fixtures" / "cli_asking.py")
TIMEOUT = 60.0
HANDSHAKE = ("--protocol-version", "2025-11-25")


def server(*, handshake: bool = True) -> list[str]:
    command = shlex.join([sys.executable, "-m", "mcpkit", "run", ASKING])
    return ["--stdio", command, *(HANDSHAKE if handshake else ())]


def call(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpkit", "call", "coffee", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


PROGRESS = [
    "mcpkit: progress 1/2 (50%): taking the order",
    "mcpkit: progress 2/2 (100%): done",
]


def test_without_a_terminal_a_question_is_declined_with_a_note() -> None:
    proc = call(*server())
    assert (proc.returncode, proc.stdout) == (0, "no coffee (decline)\n")
    assert proc.stderr.splitlines() == [
        PROGRESS[0],
        "mcpkit: the server asks: How do you take your coffee?",
        "mcpkit: declined (stdin is not a terminal; answer with --elicit JSON)",
        PROGRESS[1],
    ]


def test_elicit_json_answers_and_the_schema_defaults_fill_the_rest() -> None:
    proc = call(*server(), "--elicit", '{"size": "large", "sugar": 2, "unasked": 1}')
    assert (proc.returncode, proc.stdout) == (0, "a large coffee, 2 sugar, no milk\n")
    assert proc.stderr.splitlines() == PROGRESS


def test_elicit_json_answers_on_the_stateless_revision_too() -> None:
    proc = call(*server(handshake=False), "-e", '{"size": "small", "sugar": 0, "milk": true}')
    assert (proc.returncode, proc.stdout) == (0, "a small coffee, 0 sugar, with milk\n")
    # The second report comes from the run the retry resumed, under the retry's token.
    assert proc.stderr.splitlines() == PROGRESS


def test_elicit_json_lacking_a_required_field_is_declined_naming_it() -> None:
    proc = call(*server(), "--elicit", '{"size": "large"}')
    assert (proc.returncode, proc.stdout) == (0, "no coffee (decline)\n")
    assert "mcpkit: declined (--elicit lacks the required field(s) sugar)" in proc.stderr


def test_elicit_that_is_not_a_json_object_is_a_usage_error() -> None:
    proc = call(*server(), "--elicit", "[1]")
    assert proc.returncode == 2
    assert proc.stderr.startswith("mcpkit: error: --elicit must be a JSON object")


def test_on_a_terminal_each_field_is_asked_with_its_type() -> None:
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpkit", "call", "coffee", *server()],
            stdin=secondary,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        os.close(secondary)
        # The terminal keeps the typed lines until they are read: size by its number,
        # a sugar that is not an integer and then one that is, milk as "y".
        os.write(primary, b"2\nlots\n1\ny\n")
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        os.close(primary)
    assert (proc.returncode, out) == (0, "a large coffee, 1 sugar, with milk\n"), err
    assert "The server asks: How do you take your coffee?" in err
    assert "  size: Cup size" in err and "    1. small" in err and "    2. large" in err
    assert "  size (choice: a number or a value): " in err
    assert "  sugar (integer): " in err
    assert "    an integer, please" in err
    assert "  milk (boolean, optional, default false): " in err
    assert err.count("mcpkit: progress") == 2


TASKS_SERVER = str(REPO / "examples" / "tasks_server.py")


def tasks_call(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = shlex.join([sys.executable, "-m", "mcpkit", "run", TASKS_SERVER])
    return subprocess.run(
        [sys.executable, "-m", "mcpkit", "call", tool, "--stdio", command, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


def test_a_task_is_followed_to_its_result_and_its_status_shown_live() -> None:
    proc = tasks_call("slow_count", "--args", '{"n": 3}')
    assert (proc.returncode, proc.stdout) == (0, "counted to 3\n")
    lines = proc.stderr.splitlines()
    assert all(line.startswith("mcpkit: task ") for line in lines), lines
    assert len({line.split()[2] for line in lines}) == 1  # one task id throughout
    assert lines[0].endswith(" working") and lines[-1].endswith(" completed")
    assert any(line.endswith("working: counted 1 of 3") for line in lines)


def test_a_task_asking_for_input_is_answered_from_elicit_json_on_both_eras() -> None:
    for era in ("2025-11-25", "2026-07-28"):
        proc = tasks_call(
            "approve", "--args", '{"item": "it"}', "-e", '{"ok": true}', "--protocol-version", era
        )
        assert (proc.returncode, proc.stdout) == (0, "approved it\n"), proc.stderr
        assert " input required" in proc.stderr
