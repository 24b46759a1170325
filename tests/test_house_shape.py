"""Every module of mcpkit keeps the house shape: at most 600 lines, and a docstring first.

The house style (STYLE.md, issue 25): a module that grows past 600 lines is split by
concern, and its docstring's first line says what it holds, so a reader finds their
way by the modules' names and first lines alone. Like ``tests/test_layers.py`` this
reads the source with :mod:`ast` (nothing is imported), so it runs in milliseconds.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "mcpkit"

MAX_LINES = 600

MODULES = sorted(SRC.rglob("*.py"))


def test_the_walk_sees_the_package() -> None:
    names = {p.relative_to(SRC).as_posix() for p in MODULES}
    assert {"__init__.py", "server/session.py", "transports/http_sessions.py"} <= names


def test_no_module_is_longer_than_600_lines() -> None:
    long = {
        p.relative_to(SRC).as_posix(): n
        for p in MODULES
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"modules over {MAX_LINES} lines (split them by concern): {long}"


def test_every_module_starts_with_a_docstring_saying_what_it_holds() -> None:
    missing = []
    for path in MODULES:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if doc is None or not doc.splitlines()[0].strip():
            missing.append(path.relative_to(SRC).as_posix())
    assert not missing, (
        f"modules without a docstring whose first line says what they hold: {missing}"
    )
