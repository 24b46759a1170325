"""What ``mcpkit call`` shows while a tool runs: a live bar on a terminal, plain lines otherwise.

Progress notifications (2025-03-26 basic/utilities/progress) and the status of a
task the server runs the call as (SEP-2663) go to stderr. When stderr is a
terminal they are one line redrawn in place (``\\r`` and erase-to-end-of-line),
``mcpkit: [=========>          ] 45% 9/20 counting``, cut to the terminal's
width so it never wraps; a status a task keeps (``completed``, ``failed``,
``cancelled``, ``input required``) stays on its own line. Anything else written
to stderr meanwhile (a question, an error) first ends the live line, and
:meth:`ProgressDisplay.finish` ends it before the result is printed. When stderr
is not a terminal (a pipe, a file, CI), every report is one plain line that
scripts can read: ``mcpkit: progress 9/20 (45%): counting``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:
    from ..extensions.tasks.client import TaskState

__all__ = ["ProgressDisplay", "progress_line", "task_line"]

_BAR = 20
_SPINNER = "|/-\\"
_KEPT = frozenset({"completed", "failed", "cancelled", "input_required"})


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def progress_line(progress: float, total: float | None, message: str | None) -> str:
    """A progress notification as a plain line."""
    line = f"mcpkit: progress {_number(progress)}"
    if total:
        line += f"/{_number(total)}"
        if isinstance(progress, int | float) and isinstance(total, int | float):
            line += f" ({progress / total:.0%})"
    if message:
        line += f": {message}"
    return line


def task_line(state: TaskState) -> str:
    """A task's status (and status message) as a plain line."""
    line = f"mcpkit: task {state.task_id} {state.status.value.replace('_', ' ')}"
    if state.status_message:
        line += f": {state.status_message}"
    return line


class ProgressDisplay:
    """Shows progress and task status on ``stream`` (stderr by default).

    ``live`` defaults to whether the stream is a terminal (and ``TERM`` is not ``dumb``).
    """

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = _is_terminal(self.stream) if live is None else live
        self._shown = False  # a live line is on the screen, not ended
        self._turns = 0

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if not self.live:
            self._line(progress_line(progress, total, message))
            return
        if total and isinstance(progress, int | float) and total > 0:
            share = min(max(progress / total, 0.0), 1.0)
            filled = int(share * _BAR)
            bar = "=" * filled + (">" if filled < _BAR else "") + " " * (_BAR - filled - 1)
            text = f"mcpkit: [{bar}] {share:4.0%} {_number(progress)}/{_number(total)}"
        else:  # no total: a spinner and the count so far
            self._turns += 1
            text = f"mcpkit: {_SPINNER[self._turns % len(_SPINNER)]} {_number(progress)}"
        self._draw(f"{text} {message}" if message else text)

    def task_status(self, state: TaskState) -> None:
        line = task_line(state)
        if not self.live:
            self._line(line)
            return
        self._draw(line)
        if state.status.value in _KEPT:
            self.finish()

    def finish(self) -> None:
        """End the live line (it stays on the screen), so what comes next starts a line."""
        if self._shown:
            self._shown = False
            self.stream.write("\n")
            self.stream.flush()

    @contextlib.contextmanager
    def guarding_stderr(self) -> Iterator[None]:
        """While inside, whatever else writes to ``sys.stderr`` ends the live line first."""
        if not self.live or self.stream is not sys.stderr:
            yield
            return
        original = sys.stderr
        sys.stderr = cast(TextIO, _Guard(original, self))
        try:
            yield
        finally:
            sys.stderr = original
            self.finish()

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _draw(self, text: str) -> None:
        width = shutil.get_terminal_size((80, 24)).columns
        if len(text) >= width:  # a wrapped line could not be redrawn with \r
            text = text[: max(width - 4, 1)] + "..." if width > 4 else text[:1]
        self.stream.write("\r" + text + "\x1b[K")
        self.stream.flush()
        self._shown = True


class _Guard:
    """``sys.stderr`` while a live line is shown: other writes end that line first."""

    def __init__(self, stream: TextIO, display: ProgressDisplay) -> None:
        self._stream = stream
        self._display = display

    def write(self, text: str) -> int:
        if text:
            self._display.finish()
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding...
        return getattr(self._stream, name)


def _is_terminal(stream: TextIO) -> bool:
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (ValueError, AttributeError):  # closed, or not a real stream
        return False
