"""The official MCP conformance server suite, run against examples/everything_server.py.

``scripts/conformance.py`` installs the pinned suite from npm (first run only),
serves the fixture with ``mcpkit run ... --transport http`` on a free port and
judges every scenario against ``conformance/expected-failures.txt``. This test
runs it exactly as a developer would and fails with its table when the verdict
is not clean. The judging rules themselves are tested below on synthetic results.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "conformance.py"
# npm install (~15 s the first time) + four legs (~10 s each on 2 cores) + the frozen
# requirements leg (~5 s) + server start.
RUN_TIMEOUT_S = 600


def test_conformance_suite_passes_against_the_everything_server(tmp_path: Path) -> None:
    # A new session (process group), so a timeout stops the server and node children too.
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--output", str(tmp_path / "results")],
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
        pytest.fail(f"the conformance run took more than {RUN_TIMEOUT_S} s:\n{output}")
    lines = output.strip().splitlines()
    assert proc.returncode == 0, output
    assert lines[-1].endswith(" passed, 0 failed"), output
    assert int(lines[-1].split()[0]) >= 180, output  # five legs ran, not a handful of scenarios
    # The frozen 2026-07-28 requirement set ran, and its scored scenarios passed in it.
    assert "req-2026-07-28 server-stateless" in output, output
    assert "req-2026-07-28 input-required-result-tampered-state" in output, output
    # The skills scenarios ran their checks (a skipped-only pass is a SKIP row, an error).
    for scenario in ("enumeration", "manifest", "directory"):
        assert re.search(rf"^all +sep-2640-skills-{scenario} +PASS +ok", output, re.M), output


# -- the judging rules ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_runner", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module


TAGS = {
    "tools-list": ["2025-06-18", "2025-11-25", "2026-07-28"],
    "json-schema-2020-12": ["2025-11-25", "2026-07-28"],
    "tasks-wire-fields": ["extension"],
    "tasks-lifecycle": ["extension"],
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


def test_an_expected_failure_that_fails_is_fine(runner: ModuleType) -> None:
    got = verdicts(
        runner,
        {
            "tools-list": True,
            "json-schema-2020-12": True,
            "tasks-wire-fields": False,
            "tasks-lifecycle": False,
        },
        {"tasks-wire-fields": "later", "tasks-lifecycle": "later"},
    )
    assert got == dict.fromkeys(TAGS, True)


def test_an_unlisted_failure_fails(runner: ModuleType) -> None:
    got = verdicts(
        runner,
        {
            "tools-list": True,
            "json-schema-2020-12": True,
            "tasks-wire-fields": False,
            "tasks-lifecycle": True,
        },
        {},
    )
    assert got["tasks-wire-fields"] is False and got["tasks-lifecycle"] is True


def test_an_expected_failure_that_passes_fails(runner: ModuleType) -> None:
    got = verdicts(
        runner,
        {
            "tools-list": True,
            "json-schema-2020-12": True,
            "tasks-wire-fields": True,
            "tasks-lifecycle": True,
        },
        {"tasks-wire-fields": "later"},
    )
    assert got["tasks-wire-fields"] is False


def test_a_scenario_without_a_result_fails(runner: ModuleType) -> None:
    got = verdicts(
        runner, {"tools-list": True, "tasks-wire-fields": True, "tasks-lifecycle": True}, {}
    )
    assert got["json-schema-2020-12"] is False


def test_scenarios_of_implemented_revisions_cannot_be_excused(runner: ModuleType) -> None:
    outcomes = {"json-schema-2020-12": runner.Outcome(False, ["x"])}
    _, problems = runner.judge(
        ["all"], {"all": outcomes}, TAGS, {"json-schema-2020-12": "x", "nope": "y"}
    )
    assert len(problems) == 2


def test_the_expected_failures_file_parses(runner: ModuleType) -> None:
    expected = runner.load_expected(runner.DEFAULT_EXPECTED)
    # What is left is the tasks extension's (issue 23); every other scenario must pass.
    assert all(name.startswith("tasks-") for name in expected), sorted(expected)
    assert "server-stateless" not in expected  # the 2026-07-28 wire is served
    assert all(reason for reason in expected.values()), "every entry says which issue fixes it"


LISTING = """\
Required for 2026-07-28 (5 scenarios, frozen; run at the 2026-07-28 wire):

Server scenarios (test against a server):
  - server-stateless
  - tools-list

Client scenarios (test against a client):
  - tools_call

Run and reported, but never scored:
  extension (2):
    - auth/dpop [client]
    - tasks-lifecycle [server]
  pending (1):
    - json-schema-2020-12 [server]
"""


def test_the_requirement_listing_gives_the_server_scenarios_of_the_leg(runner: ModuleType) -> None:
    assert runner.requirement_scenarios(LISTING) == {
        "server-stateless",
        "tools-list",
        "tasks-lifecycle",
        "json-schema-2020-12",
    }


def test_a_requirement_leg_scenario_without_a_result_fails(runner: ModuleType) -> None:
    leg = "req-2026-07-28"
    outcomes = {"tools-list": runner.Outcome(True)}
    rows, problems = runner.judge(
        [leg], {leg: outcomes}, TAGS, {}, {leg: {"tools-list", "json-schema-2020-12"}}
    )
    assert not problems
    assert {(r.scenario, r.result, r.ok) for r in rows} == {
        ("tools-list", "PASS", True),
        ("json-schema-2020-12", "MISSING", False),
    }


def test_the_frozen_2026_requirement_set_is_a_default_leg(runner: ModuleType) -> None:
    assert "req-2026-07-28" in runner.DEFAULT_LEGS
    assert runner.leg_arguments("req-2026-07-28") == ["--requirements", "2026-07-28"]


def _leg_with(tmp_path: Path, scenario: str, checks: list[dict[str, str]]) -> Path:
    rundir = tmp_path / "all" / f"server-{scenario}-2026-11-28T05-00-00-000Z"
    rundir.mkdir(parents=True)
    (rundir / "checks.json").write_text(json.dumps(checks))
    return tmp_path / "all"


SKIPPED_ONLY = [
    {"id": "sep-2640-skills-list-implemented", "status": "SKIPPED"},
    {"id": "wire-schema-valid", "status": "SUCCESS"},
]


def test_a_skills_scenario_passing_by_skipping_every_check_fails(
    runner: ModuleType, tmp_path: Path
) -> None:
    scenario = "sep-2640-skills-enumeration"
    got = runner.load_leg(_leg_with(tmp_path, scenario, SKIPPED_ONLY))
    rows, _ = runner.judge(["all"], {"all": got}, {scenario: ["extension"]}, {})
    assert [(r.result, r.ok) for r in rows] == [("SKIP", False)]


def test_a_skills_scenario_that_ran_a_check_passes(runner: ModuleType, tmp_path: Path) -> None:
    scenario = "sep-2640-skills-enumeration"
    checks = [*SKIPPED_ONLY, {"id": "sep-2640-skills-get-implemented", "status": "SUCCESS"}]
    got = runner.load_leg(_leg_with(tmp_path, scenario, checks))
    rows, _ = runner.judge(["all"], {"all": got}, {scenario: ["extension"]}, {})
    assert [(r.result, r.ok) for r in rows] == [("PASS", True)]


def test_other_scenarios_may_skip_every_check(runner: ModuleType, tmp_path: Path) -> None:
    # tasks-status-notifications records no check at all in the pinned suite version.
    scenario = "tasks-status-notifications"
    got = runner.load_leg(_leg_with(tmp_path, scenario, SKIPPED_ONLY))
    rows, _ = runner.judge(["all"], {"all": got}, {scenario: ["extension"]}, {})
    assert [(r.result, r.ok) for r in rows] == [("PASS", True)]
