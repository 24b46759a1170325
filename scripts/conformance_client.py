#!/usr/bin/env python3
"""Run the official MCP conformance CLIENT suite against examples/conformance_client.py.

Usage: python3 scripts/conformance_client.py [--legs all,2025-06-18,2025-11-25] [--output DIR]
                                             [--expected FILE] [--timeout-ms MS]
                                             [--command "CLIENT COMMAND"]

Steps:
1. Install the suite and Node.js 22 exactly as ``scripts/conformance.py`` does (same pinned
   ``@modelcontextprotocol/conformance`` version, same ``$MCP_CONFORMANCE_HOME``; its
   install code is reused, not copied).
2. Run the harness once per leg: ``all`` (``--suite all``: every scenario on its default
   wire, the only leg with the 2026-07-28 and extension scenarios) and one leg per
   handshake revision (``--suite all --spec-version REV``). For each scenario the harness
   starts a mock server and runs the client command with the mock's URL appended, the
   scenario in ``MCP_CONFORMANCE_SCENARIO`` (client contract: the kit's
   CLIENT_FIXTURE.md). A leg runs its scenarios concurrently.
3. Judge every (leg, scenario) with the harness's client rule: a scenario passes when none
   of its checks is a FAILURE *or a WARNING*. The run succeeds iff
   * every authorization scenario (``auth/*``, extensions included) and every scenario
     tagged 2025-06-18 or 2025-11-25 passes (listing one in the expected-failures file is
     itself an error: the OAuth client and those revisions are implemented);
   * every other failing scenario (2026-07-28 drafts, other extensions) is listed in
     ``conformance/expected-client-failures.txt``;
   * no listed scenario passes (the list is stale then: remove the entry);
   * every scenario the harness should have run left a result.

Standard library only, like the server runner.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_LEGS = ("all", "2025-06-18", "2025-11-25")
REQUIRED_TAGS = frozenset({"2025-06-18", "2025-11-25"})
# Relative to the repository (the harness splits the command on spaces, so no absolute
# path that might contain one); the harness inherits our working directory.
CLIENT_SCRIPT = "examples/conformance_client.py"
DEFAULT_EXPECTED = REPO / "conformance" / "expected-client-failures.txt"
LEG_TIMEOUT_S = 600  # the `all` leg takes ~30 s on 2 cores; the harness's own limit is per scenario
# The harness runs a leg's scenarios at once; sse-retry has a real-time reconnect wait, so the
# per-scenario limit needs headroom on a loaded machine (the python-sdk CI uses 60 s too).
DEFAULT_TIMEOUT_MS = 60000


def _server_runner() -> ModuleType:
    """``scripts/conformance.py``, for its installer (one copy of the install logic)."""
    path = Path(__file__).resolve().parent / "conformance.py"
    spec = importlib.util.spec_from_file_location("mcpkit_conformance_server_runner", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module


_server = _server_runner()
RunnerError = _server.RunnerError
install = _server.install
leg_arguments = _server.leg_arguments
SUITE_VERSION: str = _server.SUITE_VERSION
# The expected-failures format and the result rows are the server runner's.
load_expected = _server.load_expected
Row = _server.Row
report = _server.report


def log(message: str) -> None:
    print(f"[conformance-client] {message}", file=sys.stderr, flush=True)


def is_auth(scenario: str) -> bool:
    return scenario.startswith("auth/")


def required(scenario: str, tags: list[str]) -> bool:
    """Must pass: every authorization scenario (the OAuth client and its extensions are
    complete), and every scenario of a revision mcpkit implements."""
    return is_auth(scenario) or bool(REQUIRED_TAGS & set(tags))


# -- the suite ----------------------------------------------------------------------------------


def scenario_tags(suite: Any) -> dict[str, list[str]]:
    """``{scenario: [tags]}`` from ``conformance list --client``."""
    out = subprocess.run(
        suite.command("list", "--client"),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    tags: dict[str, list[str]] = {}
    for line in out.splitlines():
        match = re.match(r"\s*-\s+(\S+)\s+\[([^\]]*)\]", line)
        if match:
            tags[match.group(1)] = match.group(2).split(",")
    if not tags:
        raise RunnerError(f"`conformance list --client` listed no scenarios:\n{out}")
    return tags


def scheduled(leg: str, tags: dict[str, list[str]]) -> set[str]:
    """The scenarios the harness runs in ``leg`` (requirement legs: whatever it reports)."""
    if leg == "all":
        return set(tags)
    if leg.startswith("req-"):
        return set()
    return {name for name, t in tags.items() if leg in t}


def client_command(explicit: str | None) -> str:
    if explicit:
        return explicit
    python = sys.executable
    if any(c.isspace() for c in python):
        # The harness splits --command on single spaces and has no quoting.
        raise RunnerError(f"the interpreter path {python!r} contains a space; pass --command")
    return f"{python} {CLIENT_SCRIPT}"


def run_leg(suite: Any, command: str, leg: str, outdir: Path, timeout_ms: int) -> float:
    """Run one leg; returns its wall time in seconds."""
    legdir = outdir / leg
    shutil.rmtree(legdir, ignore_errors=True)
    legdir.mkdir(parents=True)
    cmd = suite.command(
        "client",
        "--command",
        command,
        *leg_arguments(leg),
        "--timeout",
        str(timeout_ms),
        "-o",
        str(legdir),
    )
    log(f"leg {leg}: client --command '{command}' {' '.join(leg_arguments(leg))}")
    node_dir = str(suite.node.parent)
    env = dict(os.environ, PATH=f"{node_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    started = time.monotonic()
    with open(outdir / f"{leg}.log", "wb") as out:
        # The harness exits non-zero when a scenario fails; the results decide, not that.
        # A new session: a leg that overruns is stopped with every client it spawned.
        proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=LEG_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RunnerError(f"leg {leg} did not finish within {LEG_TIMEOUT_S} s") from None
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    elapsed = time.monotonic() - started
    log(f"leg {leg} finished in {elapsed:.1f} s (log: {outdir / (leg + '.log')})")
    return elapsed


@dataclass
class Outcome:
    passed: bool
    failing_checks: list[str] = field(default_factory=list)
    vacuous: bool = False  # every check was SKIPPED or INFO: the pass says nothing


_RUN_DIR = re.compile(r"(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def load_leg(legdir: Path) -> dict[str, Outcome]:
    """``{scenario: outcome}`` from ``<scenario>-<timestamp>/checks.json``.

    Auth scenarios are named ``auth/<name>``, so their runs sit one directory deeper.
    """
    results: dict[str, Outcome] = {}
    runs = [p for p in legdir.rglob("*") if p.is_dir() and _RUN_DIR.match(p.name)]
    for rundir in sorted(runs):  # sorted: the latest run of a scenario wins
        match = _RUN_DIR.match(rundir.relative_to(legdir).as_posix())
        if match is None:
            continue
        try:
            checks = json.loads((rundir / "checks.json").read_text())
        except FileNotFoundError:  # the scenario threw before it could record its checks
            checks = [{"id": "scenario-crashed (see the leg log)", "status": "FAILURE"}]
        except (OSError, ValueError):
            checks = [{"id": "unreadable-checks-json", "status": "FAILURE"}]
        # The harness's client rule: a WARNING fails a client scenario too.
        failing = [
            f"{c.get('id')}{'(warning)' if c.get('status') == 'WARNING' else ''}"
            for c in checks
            if c.get("status") in ("FAILURE", "WARNING")
        ]
        vacuous = all(c.get("status") in ("SKIPPED", "INFO") for c in checks)
        results[match.group(1)] = Outcome(not failing, failing, vacuous)
    return results


# -- judging ------------------------------------------------------------------------------------


def judge(
    legs: list[str],
    results: dict[str, dict[str, Outcome]],
    tags: dict[str, list[str]],
    expected: dict[str, str],
) -> tuple[list[Row], list[str]]:
    """One row per (leg, scenario), plus problems with the expected-failures list itself."""
    problems = []
    for name, reason in expected.items():
        if name not in tags:
            problems.append(f"expected-client-failures lists {name!r}, which the suite lacks")
        elif required(name, tags[name]):
            problems.append(
                f"expected-client-failures lists {name!r}, but authorization scenarios and "
                f"those of {'/'.join(sorted(REQUIRED_TAGS))} must pass: fix the client instead"
            )
        if not reason:
            problems.append(f"expected-client-failures gives no reason for {name!r}")
    rows = []
    for leg in legs:
        got = results.get(leg, {})
        for scenario in sorted(scheduled(leg, tags) | set(got)):
            outcome = got.get(scenario)
            listed = scenario in expected
            if outcome is None:
                result, ok, note = "MISSING", False, "the harness left no result"
            elif outcome.passed:
                result, ok = "PASS", not listed
                note = "passes: remove it from expected-client-failures" if listed else ""
                if ok and outcome.vacuous:
                    note = "every check skipped: the pass says nothing"
            else:
                result, ok = "FAIL", listed
                failing = ",".join(outcome.failing_checks[:3])
                if len(outcome.failing_checks) > 3:
                    failing += f",+{len(outcome.failing_checks) - 3}"
                note = f"expected ({expected[scenario]})" if listed else f"failing: {failing}"
            rows.append(Row(leg, scenario, tags.get(scenario, []), result, listed, ok, note))
    return rows, problems


# -- main ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--legs", default=",".join(DEFAULT_LEGS), help="comma-separated legs")
    parser.add_argument("--output", type=Path, help="results directory (default: a new temp dir)")
    parser.add_argument("--expected", type=Path, default=DEFAULT_EXPECTED, help="expected failures")
    parser.add_argument("--command", help=f"client command (default: python {CLIENT_SCRIPT})")
    parser.add_argument(
        "--timeout-ms", type=int, default=DEFAULT_TIMEOUT_MS, help="per-scenario timeout"
    )
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # keep order with logs
    legs = [leg for leg in args.legs.split(",") if leg]
    outdir: Path = args.output or Path(tempfile.mkdtemp(prefix="mcpkit-conformance-client-"))
    outdir.mkdir(parents=True, exist_ok=True)
    outdir = outdir.resolve()

    # pytest or CI may stop us with SIGTERM: unwind so a running leg is stopped too.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    durations: dict[str, float] = {}
    try:
        expected = load_expected(args.expected)
        command = client_command(args.command)
        suite = install()
        tags = scenario_tags(suite)
        (outdir / "scenario-tags.json").write_text(json.dumps(tags, indent=1))
        results = {}
        for leg in legs:
            durations[leg] = run_leg(suite, command, leg, outdir, args.timeout_ms)
            results[leg] = load_leg(outdir / leg)
            if not results[leg]:
                raise RunnerError(f"leg {leg} produced no results; see {outdir / (leg + '.log')}")
    except RunnerError as exc:
        print(f"error: {exc}")
        print("0 passed, 1 failed")
        return 2
    log(f"results in {outdir}")
    log("leg durations: " + ", ".join(f"{leg} {s:.1f} s" for leg, s in durations.items()))
    rows, problems = judge(legs, results, tags, expected)
    (outdir / "verdict.json").write_text(json.dumps([row.__dict__ for row in rows], indent=1))
    return 0 if report(rows, problems) else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
