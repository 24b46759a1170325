"""The official MCP conformance CLIENT suite, run against examples/conformance_client.py.

``scripts/conformance_client.py`` installs the pinned suite from npm (first run only, shared
with the server runner), runs the legs that judge the implemented revisions (``all``,
``2025-06-18``, ``2025-11-25``; about 35 s on 2 cores, most of it the ``all`` leg starting
48 clients at once) and judges every scenario against
``conformance/expected-client-failures.txt``. This test runs it exactly as a developer
would and fails with its table when the verdict is not clean. The judging rules are tested
below on synthetic results.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "conformance_client.py"
# npm install (~15 s the first time) + three legs (~35 s together on 2 cores, more when loaded).
RUN_TIMEOUT_S = 600
# Non-auth scenarios of the implemented revisions: they must pass in every leg that runs them.
MUST_PASS = {
    "all": {
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
        "json-schema-2020-12-preservation",
    },
    "2025-06-18": {"initialize", "tools_call"},
    "2025-11-25": {
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
        "json-schema-2020-12-preservation",
    },
}

SKILLS_SCENARIOS = (
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
)


def test_client_conformance_suite_passes(tmp_path: Path) -> None:
    results = tmp_path / "results"
    # A new session (process group), so a timeout stops node and every client it spawned.
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--output", str(results)],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"the client conformance run took more than {RUN_TIMEOUT_S} s:\n{output}")
    lines = output.strip().splitlines()
    assert proc.returncode == 0, output
    assert lines[-1].endswith(" passed, 0 failed"), output
    # The verdict holds a PASS for every required scenario in every leg, not just "no errors".
    verdict = json.loads((results / "verdict.json").read_text())
    passed = {(row["leg"], row["scenario"]) for row in verdict if row["result"] == "PASS"}
    for leg, scenarios in MUST_PASS.items():
        for scenario in scenarios:
            assert (leg, scenario) in passed, f"{scenario} did not pass in leg {leg}:\n{output}"
    # The skills scenarios ran their checks: the client listed, loaded and verified.
    skills = {
        row["scenario"]: row["note"]
        for row in verdict
        if row["leg"] == "all" and row["scenario"].startswith("sep-2640-client-")
    }
    assert set(skills) == set(SKILLS_SCENARIOS), output
    for scenario in SKILLS_SCENARIOS:
        assert ("all", scenario) in passed, f"{scenario} did not pass:\n{output}"
        assert "skipped" not in skills[scenario], f"{scenario}: {skills[scenario]}\n{output}"


# -- the judging rules ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_client_runner", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module


TAGS = {
    "tools_call": ["2025-06-18", "2025-11-25", "2026-07-28"],
    "sse-retry": ["2025-11-25"],
    "auth/metadata-default": ["2025-11-25", "2026-07-28"],
    "request-metadata": ["2026-07-28"],
    "sep-2640-client-no-prefetch": ["extension"],
}


def verdicts(
    runner: ModuleType, results: dict[str, bool], expected: dict[str, str]
) -> dict[str, bool]:
    outcomes = {
        name: runner.Outcome(passed, [] if passed else ["some-check"])
        for name, passed in results.items()
    }
    rows, problems = runner.judge(["all"], {"all": outcomes}, TAGS, expected)
    assert not problems
    return {row.scenario: row.ok for row in rows}


def test_newer_revisions_may_be_expected_failures(runner: ModuleType) -> None:
    got = verdicts(
        runner,
        {
            "tools_call": True,
            "sse-retry": True,
            "auth/metadata-default": True,
            "request-metadata": False,
            "sep-2640-client-no-prefetch": True,
        },
        {"request-metadata": "2026 issue"},
    )
    assert got == dict.fromkeys(TAGS, True)


def test_authorization_scenarios_cannot_be_expected_failures(runner: ModuleType) -> None:
    outcomes = {"auth/metadata-default": runner.Outcome(False, ["x"])}
    _, problems = runner.judge(
        ["all"], {"all": outcomes}, TAGS, {"auth/metadata-default": "auth issue"}
    )
    assert len(problems) == 1 and "auth/metadata-default" in problems[0], problems


def test_an_unlisted_failure_fails(runner: ModuleType) -> None:
    got = verdicts(
        runner,
        {
            "tools_call": True,
            "sse-retry": False,
            "auth/metadata-default": False,
            "request-metadata": True,
            "sep-2640-client-no-prefetch": True,
        },
        {"request-metadata": "x"},
    )
    assert got["sse-retry"] is False  # required, failing
    assert got["auth/metadata-default"] is False  # not listed, failing
    assert got["request-metadata"] is False  # listed, passing: the list is stale


def test_a_scenario_without_a_result_fails(runner: ModuleType) -> None:
    got = verdicts(runner, {"tools_call": True}, {})
    assert got["tools_call"] is True
    assert got["sse-retry"] is False


def test_required_scenarios_cannot_be_excused(runner: ModuleType) -> None:
    outcomes = {"sse-retry": runner.Outcome(False, ["x"])}
    _, problems = runner.judge(
        ["all"],
        {"all": outcomes},
        TAGS,
        {"sse-retry": "x", "nope": "y", "auth/metadata-default": "", "request-metadata": "z"},
    )
    # sse-retry and the auth entry are required, nope is unknown, the auth entry gives no
    # reason.
    assert len(problems) == 4, problems


def test_a_warning_fails_a_client_scenario(runner: ModuleType, tmp_path: Path) -> None:
    def record(name: str, statuses: list[str]) -> None:
        rundir = tmp_path / f"{name}-2026-01-01T00-00-00-000Z"
        rundir.mkdir(parents=True)
        checks = [{"id": f"c{i}", "status": s} for i, s in enumerate(statuses)]
        (rundir / "checks.json").write_text(json.dumps(checks))

    record("tools_call", ["SUCCESS", "WARNING"])
    record("sse-retry", ["SUCCESS", "INFO"])
    record("auth/metadata-default", ["FAILURE"])  # auth runs sit one directory deeper
    record("sep-2640-client-no-prefetch", ["SKIPPED"])
    got = runner.load_leg(tmp_path)
    assert not got["tools_call"].passed and got["tools_call"].failing_checks == ["c1(warning)"]
    assert got["sse-retry"].passed and not got["sse-retry"].vacuous
    assert not got["auth/metadata-default"].passed
    assert got["sep-2640-client-no-prefetch"].passed and got["sep-2640-client-no-prefetch"].vacuous


def test_the_expected_failures_file_parses(runner: ModuleType, tmp_path: Path) -> None:
    sample = tmp_path / "expected.txt"
    sample.write_text("# a comment\n\nauth/dpop  # why -- the issue\n")
    assert runner.load_expected(sample) == {"auth/dpop": "why -- the issue"}
    expected = runner.load_expected(runner.DEFAULT_EXPECTED)
    # The OAuth client is complete: no authorization scenario may be listed any more.
    assert not [name for name in expected if name.startswith("auth/")]
    # The client speaks 2026-07-28 now: its scenarios pass and must not be listed.
    assert "request-metadata" not in expected
    assert "sep-2322-client-request-state" not in expected
    assert all(reason for reason in expected.values()), "every entry says which issue fixes it"
    assert not [name for name in expected if runner.required(name, TAGS.get(name, []))]
