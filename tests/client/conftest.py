"""Client test helpers: a recorder that validates every message against the MCP schema.

Pass ``trace=traffic`` to a ``Client``; when the test ends, every message the
client sent (and received) is checked with :func:`tests.schema.assert_valid_traffic`
against the revision the server negotiated.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import schema

FIXTURES = Path(__file__).parent / "fixtures"
DEMO = str(FIXTURES / "demo_server.py")
RAW = str(FIXTURES / "raw_server.py")
PYTHON = sys.executable


class Traffic:
    """``trace`` hook: records ``(direction, message, checked)`` in wire order."""

    def __init__(self) -> None:
        self.traffic: list[tuple[str, Any, bool]] = []
        self.initialize_result: dict[str, Any] | None = None
        self.enabled = True

    def __call__(self, direction: str, message: Any) -> None:
        self.traffic.append((direction, message, True))
        if (
            direction == "received"
            and isinstance(message, dict)
            and isinstance(message.get("result"), dict)
            and "protocolVersion" in message["result"]
        ):
            self.initialize_result = message["result"]

    def sent(self, method: str | None = None) -> list[dict[str, Any]]:
        return [
            m
            for d, m, _ in self.traffic
            if d == "sent" and (method is None or m.get("method") == method)
        ]

    def received(self, method: str | None = None) -> list[dict[str, Any]]:
        return [
            m
            for d, m, _ in self.traffic
            if d == "received" and (method is None or m.get("method") == method)
        ]

    def exempt(self, predicate: Any, reason: str) -> int:
        """Skip schema checks for the recorded messages ``predicate`` selects; say why."""
        assert reason
        count = 0
        for i, (d, m, _) in enumerate(self.traffic):
            if predicate(m):
                self.traffic[i] = (d, m, False)
                count += 1
        return count

    def check(self) -> int:
        if not self.enabled or self.initialize_result is None:
            return 0
        return schema.assert_valid_traffic(self)


@pytest.fixture
def traffic() -> Iterator[Traffic]:
    recorder = Traffic()
    yield recorder
    recorder.check()


def alive(pid: int) -> bool:
    """Is ``pid`` a running (not zombie) process?"""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """Live processes whose process group is ``pgid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            out.append(int(entry))
    return out
