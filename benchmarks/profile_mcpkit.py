"""Where mcpkit spends its time: profiles of the benchmarked paths.

    python benchmarks/profile_mcpkit.py stdio     # the stdio server under cProfile, echo load
    python benchmarks/profile_mcpkit.py http      # the uvicorn + mcpkit server under cProfile, wrk load
    python benchmarks/profile_mcpkit.py startup   # building the stdio server script: imports and set-up
    python benchmarks/profile_mcpkit.py http --py-spy   # sample with py-spy instead (pip install py-spy)

cProfile slows Python code down several times, so read its output for the
*shares* of time (which functions dominate), not for speeds. py-spy samples
without slowing the target and also sees time in C code (orjson, httptools,
uvloop); its report lists the functions most often on the CPU ("self") and
the mcpkit frames most often on the stack ("inclusive").
"""

from __future__ import annotations

import argparse
import collections
import pstats
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _util import PYTHON, SERVERS, child_env, emit, free_port, stop, wait_for_port
from bench_http import Client, echo_body, prepare, verify_echo, wrk
from stdio_client import StdioPeer, echo_batch, echo_request


def print_stats(path: Path, top: int) -> None:
    stats = pstats.Stats(str(path))
    stats.strip_dirs()
    for key in ("tottime", "cumulative"):
        emit(f"--- top {top} by {key}")
        stats.sort_stats(key).print_stats(top)


def profile_stdio(work: Path, top: int, small: int, large: int) -> None:
    out = work / "stdio.prof"
    peer = StdioPeer(
        [PYTHON, "-m", "cProfile", "-o", str(out), str(SERVERS / "mcpkit_stdio.py")], timeout=120
    )
    try:
        peer.handshake()
        text = "x" * 20
        elapsed = echo_batch(peer, [echo_request(10 + i, text) for i in range(small)], 10, text)
        emit(f"{small} small round trips in {elapsed:.2f} s under cProfile")
        text = "y" * (1 << 20)
        reqs = [echo_request(100_000 + i, text) for i in range(large)]
        elapsed = echo_batch(peer, reqs, 100_000, text)
        emit(f"{large} 1 MB round trips in {elapsed:.2f} s under cProfile")
    finally:
        assert peer.proc.stdin is not None
        peer.proc.stdin.close()  # EOF: the server exits normally and cProfile writes its file
        peer.proc.wait(30)
    print_stats(out, top)


def _http_server(
    argv_prefix: list[str], mode: str, port: int, log: Path
) -> subprocess.Popen[bytes]:
    with log.open("ab") as err:
        return subprocess.Popen(
            [*argv_prefix, str(SERVERS / "http_server.py"), "mcpkit", mode, str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=child_env(),
        )


def profile_http(work: Path, top: int, mode: str, seconds: int, py_spy: bool) -> None:
    from bench_http import Target

    body = work / "echo.json"
    body.write_bytes(echo_body("__ID__"))
    port = free_port()
    out = work / "http.prof"
    prefix = [PYTHON] if py_spy else [PYTHON, "-m", "cProfile", "-o", str(out)]
    proc = _http_server(prefix, mode, port, work / "server.log")
    target = Target("mcpkit", mode, port, proc)
    try:
        wait_for_port(port, proc, timeout=60)
        prepare(target)
        sampler = None
        raw = work / "py-spy.txt"
        if py_spy:
            sampler = subprocess.Popen(
                [
                    *("py-spy", "record", "--pid", str(proc.pid), "--format", "raw"),
                    *("-o", str(raw), "--duration", str(seconds), "--rate", "200", "--nonblocking"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(0.5)
        rps = wrk(target, 16, seconds, body, None)
        emit(
            f"mcpkit/{mode}: {rps:,.0f} req/s at 16 connections{' under cProfile' if not py_spy else ''}"
        )
        client = Client(port)
        if target.session_id:
            client.session_id = target.session_id
        verify_echo(client)
        client.close()
        if sampler is not None:
            sampler.wait(seconds + 30)
    finally:
        proc.send_signal(signal.SIGINT)  # uvicorn shuts down cleanly; cProfile then writes
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            stop(proc)
    if py_spy:
        summarize_collapsed(raw, top)
    else:
        print_stats(out, top)


_LINE = re.compile(r":\d+\)$")


def summarize_collapsed(path: Path, top: int) -> None:
    """Self and inclusive sample counts per function from py-spy's collapsed stacks.

    Each line is ``frame;frame;...;frame count`` with frames like
    ``func (path/file.py:123)``; line numbers are dropped so that a function's
    samples add up.
    """
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count = int(count_text)
        frames = [_LINE.sub(")", f) for f in stack.split(";")]
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            if "mcpkit" in frame or "http_server.py" in frame:
                inclusive[frame] += count
    emit(f"--- {total} samples; top {top} functions on the CPU (self)")
    for frame, count in own.most_common(top):
        emit(f"  {100 * count / total:5.1f}%  {frame}")
    emit(f"--- top {top} mcpkit frames on the stack (inclusive)")
    for frame, count in inclusive.most_common(top):
        emit(f"  {100 * count / total:5.1f}%  {frame}")


def profile_startup(work: Path, top: int) -> None:
    out = work / "startup.prof"
    code = (
        "import runpy, sys\n"
        f"sys.argv = [{str(SERVERS / 'mcpkit_stdio.py')!r}]\n"
        f"runpy.run_path({str(SERVERS / 'mcpkit_stdio.py')!r}, run_name='bench_import')\n"
    )
    subprocess.run(
        [PYTHON, "-m", "cProfile", "-o", str(out), "-c", code], check=True, env=child_env()
    )
    proc = subprocess.run(
        [PYTHON, "-X", "importtime", "-c", code], capture_output=True, text=True, env=child_env()
    )
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "cumulative" not in line:
            own, cumulative, name = line[len("import time:") :].split("|")
            rows.append((int(own), int(cumulative), name.rstrip()))
    emit(f"--- top {top} imports by self time (-X importtime), µs self / cumulative")
    for own, cumulative, name in sorted(rows, reverse=True)[:top]:
        emit(f"  {own:8d} {cumulative:9d}  {name.strip()}")
    print_stats(out, top)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("part", choices=["stdio", "http", "startup"])
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--mode", choices=["stateless", "stateful"], default="stateless")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--small", type=int, default=20_000, help="20-byte round trips (stdio)")
    parser.add_argument("--large", type=int, default=20, help="1 MB round trips (stdio)")
    parser.add_argument("--py-spy", action="store_true", help="sample with py-spy (http only)")
    args = parser.parse_args()
    if args.py_spy and shutil.which("py-spy") is None:
        parser.error("py-spy is not installed (pip install py-spy)")
    work = Path(tempfile.mkdtemp(prefix="mcpkit-profile-"))
    emit(f"# profile files in {work}")
    if args.part == "stdio":
        profile_stdio(work, args.top, args.small, args.large)
    elif args.part == "http":
        profile_http(work, args.top, args.mode, args.seconds, args.py_spy)
    else:
        profile_startup(work, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
