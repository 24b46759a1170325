"""The official TypeScript SDK client (``@modelcontextprotocol/sdk`` from npm) against mcpkit.

The client that Claude Desktop and most hosts embed. Its ``Protocol`` class runs a
notification's handler in a microtask but settles a response at once, dropping the
request's progress callback as it does; so a ``notifications/progress`` that arrives in the
same read as its request's response reaches no callback (the client reports "unknown
token"). Each test runs ``fixtures/ts_progress_client.cjs``, which calls
``test_tool_with_progress`` of ``examples/everything_server.py`` (progress 0, 50 and 100,
the last one right before the result) several times in a row and prints every progress
value each call's callback saw.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.interop.fixtures.peers import REPO, http_peer, install_typescript_sdk
from tests.transports.stdio_peer import _WITHOUT_UVLOOP

CLIENT = Path(__file__).resolve().parent / "fixtures" / "ts_progress_client.cjs"
SERVER = "examples/everything_server.py"
TOOL = "test_tool_with_progress"
CALLS = 10
EVERY_STEP = [0, 50, 100]
RUN_TIMEOUT_S = 60

# stdio: `mcpkit run` as a host would launch it, on uvloop (installed here) and on asyncio's
# own loop (uvloop made unimportable, as on a plain `pip install mcpkit`).
STDIO_LAUNCHERS = {
    "uvloop": [sys.executable, "-m", "mcpkit", "run", SERVER],
    "asyncio": [sys.executable, "-c", _WITHOUT_UVLOOP, "-mmcpkit", "run", SERVER],
}


@pytest.fixture(scope="module")
def sdk() -> tuple[Path, Path]:
    return install_typescript_sdk()


def run_client(sdk: tuple[Path, Path], *target: str) -> dict[str, Any]:
    node, home = sdk
    proc = subprocess.run(
        [str(node), str(CLIENT), str(home), str(CALLS), TOOL, *target],
        cwd=REPO,
        env=os.environ.copy(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


@pytest.mark.parametrize(
    "loop",
    [pytest.param("uvloop", marks=pytest.mark.uvloop), "asyncio"],
)
def test_every_progress_notification_reaches_the_callback_over_stdio(
    sdk: tuple[Path, Path], loop: str
) -> None:
    report = run_client(sdk, "stdio", *STDIO_LAUNCHERS[loop])
    assert report["calls"] == [EVERY_STEP] * CALLS
    assert report["errors"] == []


@pytest.fixture
def http_url(tmp_path: Path) -> Iterator[str]:
    argv = [sys.executable, "-m", "mcpkit", "run", SERVER, "--transport", "http", "--port"]
    with http_peer(lambda port: [*argv, str(port)], log_path=tmp_path / "server.log") as port:
        yield f"http://127.0.0.1:{port}/mcp"


def test_every_progress_notification_reaches_the_callback_over_streamable_http(
    sdk: tuple[Path, Path], http_url: str
) -> None:
    # The answer is an SSE stream (the call sends notifications); the client's HTTP
    # transport awaits the next event from its stream reader before handing it on, so the
    # progress handler's microtask has run by then, whatever the TCP segments held.
    report = run_client(sdk, "http", http_url)
    assert report["calls"] == [EVERY_STEP] * CALLS
    assert report["errors"] == []
