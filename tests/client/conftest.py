"""Client test helpers: a recorder that validates every message against the MCP schema.

Pass ``trace=traffic`` to a ``Client``; when the test ends, every message the
client sent (and received) is checked with :func:`tests.schema.assert_valid_conversation`
against the revision in use: the one ``initialize`` negotiated (handshake era), or the
one every request names in its ``_meta`` (2026-07-28). A ``server/discover`` probe that
a handshake followed is checked against the revision the probe asked for.
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

    def forgive_number_answers(self) -> None:
        """Check accepted elicitation answers as if their non-integer numbers were integers.

        The schemas type ElicitResult content values as string/integer/boolean while
        NumberSchema allows any number, and the official conformance scenario
        elicitation-sep1034-client-defaults expects a default of 95.5 sent back. Only that
        mismatch is forgiven: the rest of each message is still checked.
        """
        for i, (d, m, checked) in enumerate(self.traffic):
            if d != "sent" or not isinstance(m, dict):
                continue
            result = m.get("result")
            params = m.get("params")
            answers = params.get("inputResponses") if isinstance(params, dict) else None
            if isinstance(result, dict) and result.get("action") == "accept":
                self.traffic[i] = (d, {**m, "result": _answer_copy(result)}, checked)
            elif isinstance(answers, dict):
                fixed = {k: _answer_copy(a) for k, a in answers.items()}
                self.traffic[i] = (d, {**m, "params": {**params, "inputResponses": fixed}}, checked)

    @property
    def stateless_version(self) -> str | None:
        """The 2026-07-28-style revision the last enveloped request named, if any."""
        for d, m, _ in reversed(self.traffic):
            version = _meta_version(m) if d == "sent" else None
            if version is not None:
                return version
        return None

    def check(self) -> int:
        if not self.enabled:
            return 0
        self.forgive_number_answers()
        start = next(
            (i for i, (d, m, _) in enumerate(self.traffic) if d == "sent" and _is_init(m)), None
        )
        if start is None:
            version = self.stateless_version
            if version is None:
                return 0  # nothing was agreed: no revision to check against
            return schema.assert_valid_conversation(self.traffic, version)
        checked = 0
        probe = next((v for d, m, _ in self.traffic[:start] if (v := _meta_version(m))), None)
        if probe is not None:
            checked += schema.assert_valid_conversation(self.traffic[:start], probe)
        # The revision the server agreed to; when it agreed to none this client knows (or
        # never answered), the one the client asked for.
        agreed = (self.initialize_result or {}).get("protocolVersion")
        if agreed not in schema.revisions():
            agreed = self.traffic[start][1]["params"]["protocolVersion"]
        return checked + schema.assert_valid_conversation(self.traffic[start:], agreed)


def _is_init(message: Any) -> bool:
    return isinstance(message, dict) and message.get("method") == "initialize"


def _meta_version(message: Any) -> str | None:
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = (
        meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
    )
    return version if isinstance(version, str) else None


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


def _integral(content: Any) -> Any:
    """``content`` with its non-integer numbers rounded (see forgive_number_answers)."""
    if isinstance(content, dict):
        return {
            k: round(v) if isinstance(v, float) and not v.is_integer() else v
            for k, v in content.items()
        }
    return content


def _answer_copy(answer: Any) -> Any:
    if isinstance(answer, dict) and answer.get("action") == "accept" and "content" in answer:
        return {**answer, "content": _integral(answer["content"])}
    return answer
