"""The client commands and ``mcpkit run`` as a person meets them: KEY=VALUE arguments, a
pipe closed early, a server that wants authorization, the same capabilities for ``tools``
and ``call``, and a stdio server started by hand on a terminal."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import select
import shlex
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO = str(REPO / "examples" / "demo_server.py")
STDIO = shlex.join([sys.executable, "-m", "mcpkit", "run", DEMO])
TIMEOUT = 60.0


def mcpkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpkit", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


def test_key_value_arguments_are_typed_by_the_schema() -> None:
    done = mcpkit("call", "add", "a=2", "b=40", "--stdio", STDIO)
    assert (done.returncode, done.stdout, done.stderr) == (0, "42\n", "")
    # --args and KEY=VALUE together: the pair wins.
    done = mcpkit("call", "add", "--args", '{"a": 1, "b": 1}', "b=2", "--stdio", STDIO)
    assert done.stdout == "3\n"


def test_a_key_value_argument_that_does_not_fit_is_a_usage_error() -> None:
    done = mcpkit("call", "add", "a=two", "b=1", "--stdio", STDIO)
    assert (done.returncode, done.stderr) == (2, "mcpkit: error: a=two: 'a' takes an integer\n")
    done = mcpkit("call", "add", "a", "--stdio", STDIO)
    assert done.returncode == 2 and "'a' is not KEY=VALUE" in done.stderr


def test_output_piped_into_a_reader_that_stops_early_ends_quietly() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpkit", "tools", "--stdio", STDIO],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # as `| head -0` would: every write hits a closed pipe
    err = process.stderr.read().decode()
    assert process.wait(TIMEOUT) == 1
    assert err == ""


class _Unauthorized(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = b'{"error": "unauthorized"}'
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer error="invalid_token"')
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def protected_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Unauthorized)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


def test_a_401_suggests_how_to_authorize(protected_url: str) -> None:
    done = mcpkit("tools", "--url", protected_url)
    assert done.returncode == 1
    assert done.stderr.endswith(
        " (the server needs authorization: add --auth oauth to sign in, or "
        "--header 'Authorization: Bearer TOKEN' with a token you have)\n"
    )
    done = mcpkit("tools", "--url", protected_url, "--header", "Authorization: Bearer old")
    assert done.stderr.endswith(" (the Authorization header given with --header was refused)\n")


CAPS_SERVER = '''
import json

from mcpkit import Context, MCPServer


async def show_caps(ctx, call_next):
    """tools/list lists the tool `caps` only to a client declaring tasks, with the
    client's capabilities as its description."""
    result = await call_next(ctx)
    if ctx.method != "tools/list":
        return result
    caps = ctx.client_capabilities
    tasks = "io.modelcontextprotocol/tasks" in (caps.get("extensions") or {})
    tools = [
        dict(t, description=json.dumps(caps, sort_keys=True)) if t["name"] == "caps" else t
        for t in result["tools"]
        if t["name"] != "caps" or tasks
    ]
    return {**result, "tools": tools}


server = MCPServer(name="caps", version="1", middleware=[show_caps])


@server.tool
def caps(ctx: Context) -> str:
    "The client's capabilities."
    return json.dumps(ctx.client_capabilities, sort_keys=True)
'''


def test_tools_declares_what_call_declares(tmp_path: Path) -> None:
    path = tmp_path / "caps_server.py"
    path.write_text(textwrap.dedent(CAPS_SERVER))
    command = shlex.join([sys.executable, "-m", "mcpkit", "run", str(path)])
    listed = mcpkit("tools", "--stdio", command, "--json")
    assert listed.returncode == 0, listed.stderr
    tools = {t["name"]: t for t in json.loads(listed.stdout)["server"]}
    assert "caps" in tools  # listed: the server saw the tasks extension
    called = mcpkit("call", "caps", "--stdio", command, "--json")
    seen_by_call = json.loads(called.stdout)["content"][0]["text"]
    assert json.loads(tools["caps"]["description"]) == json.loads(seen_by_call)


def test_run_over_stdio_on_a_terminal_says_it_waits_for_a_client() -> None:
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpkit", "run", DEMO],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    os.close(follower)
    try:
        assert process.stderr is not None
        ready, _, _ = select.select([process.stderr], [], [], TIMEOUT)
        assert ready
        line = process.stderr.readline().decode()
        assert line.startswith(
            "mcpkit: serving 'Demo' over stdio: waiting for an MCP client on stdin."
        )
    finally:
        process.kill()
        process.wait()
        os.close(leader)


def test_run_over_stdio_from_a_client_prints_nothing_of_its_own() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcpkit", "run", DEMO],
        input="",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
    )
    assert "waiting for an MCP client" not in done.stderr


class _NotFound(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "9")
        self.end_headers()
        self.wfile.write(b"not found")

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


def test_an_http_error_names_the_url_once(protected_url: str) -> None:
    done = mcpkit("tools", "--url", protected_url)  # a named server used to add " (URL)"
    assert done.stderr.count(protected_url) == 1, done.stderr
    server = HTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        done = mcpkit("tools", "--url", url)  # both transports tried: one URL, two answers
        assert done.stderr == (
            f"mcpkit: error: cannot connect to {url} with Streamable HTTP (HTTP 404 Not Found: "
            "not found) nor legacy HTTP+SSE (HTTP 404 Not Found: not found)\n"
        )
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"mcpServers": {"demo": {"comand": sys.executable}}},
            "server 'demo': unknown key 'comand'; did you mean 'command'?",
        ),
        (
            {"mcpServers": {"demo": {"command": sys.executable, "arg": ["x"]}}},
            "server 'demo': unknown key 'arg'; did you mean 'args'?",
        ),
        (
            {"mcpServer": {"demo": {"command": sys.executable}}},
            "unknown key 'mcpServer'; did you mean 'mcpServers'?",
        ),
    ],
)
def test_a_misspelled_key_in_a_config_file_is_named(
    config: dict[str, object], message: str, tmp_path: Path
) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps(config))
    done = mcpkit("tools", "--config", str(path))
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.count("\n") == 1


TASKS_SERVER = shlex.join(
    [sys.executable, "-m", "mcpkit", "run", str(REPO / "examples" / "tasks_server.py")]
)


def test_timeout_caps_the_whole_command_and_says_so() -> None:
    # Counting to 50 takes 10 s of quick polls, each well within any request timeout.
    started = time.monotonic()
    done = mcpkit("call", "slow_count", "n=50", "--stdio", TASKS_SERVER, "--timeout", "4")
    took = time.monotonic() - started
    assert done.returncode == 1 and done.stdout == ""
    last = done.stderr.splitlines()[-1]
    assert last == (
        "mcpkit: error: stopped after 4 s (--timeout, the limit of the whole command) while "
        "waiting for tool 'slow_count' to finish; give a larger --timeout to wait longer"
    ), done.stderr
    assert took < 9


def test_timeout_while_starting_a_server_says_what_it_waited_for() -> None:
    silent = shlex.join([sys.executable, "-c", "import time; time.sleep(30)"])
    done = mcpkit("tools", "--stdio", silent, "--timeout", "1.5")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "mcpkit: error: stopped after 1.5 s (--timeout, the limit of the whole command) while "
        f"starting and connecting to server \"{Path(sys.executable).name} -c 'import time; "
        "time.sleep(30)'\"; give "
        "a larger --timeout to wait longer\n"
    )


async def test_an_oauth_sign_in_nobody_finishes_ends_with_the_authorizers_message(
    tmp_path: Path,
) -> None:
    from tests.auth.client.world import world

    env = {**os.environ, "BROWSER": "false", "XDG_CONFIG_HOME": str(tmp_path)}  # no browser
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    async with world() as w:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "mcpkit", "tools", "--url", w.url, "--auth", "oauth",
            "--timeout", "5",
            env=env, cwd=REPO, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, err_bytes = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    err = err_bytes.decode()
    assert proc.returncode == 1
    assert "Open this URL in a browser to authorize:" in err  # the URL was printed
    last = err.splitlines()[-1]
    assert re.fullmatch(
        r"mcpkit: error: no authorization response within [1-4] s \(the sign-in has to "
        r"finish within --timeout 5 s, the limit of the whole command: open the URL in a "
        r"browser on this machine, or give a larger --timeout\)",
        last,
    ), err
    assert "did not answer" not in err
