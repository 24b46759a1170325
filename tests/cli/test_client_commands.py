"""``mcpkit tools / call / resources / read / prompts / prompt``, as real subprocesses.

The servers are mcpkit's demo server, run by ``mcpkit run`` over stdio
(started by the command under test), Streamable HTTP and legacy SSE
(started once for the module).
"""

from __future__ import annotations

import json
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO = str(REPO / "examples" / "demo_server.py")
TIMEOUT = 30.0
STDIO = shlex.join([sys.executable, "-m", "mcpkit", "run", DEMO])
CRASH = {
    "command": sys.executable,
    "args": ["-c", "import sys; sys.stderr.write('no API key\\n'); sys.exit(4)"],
}


def mcpkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpkit", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("mcpkit: error: "), lines[0]
    return lines[0]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited early"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listened on port {port}")


@pytest.fixture(scope="module")
def http_servers() -> Iterator[dict[str, str]]:
    """The demo server over Streamable HTTP and over legacy SSE, in subprocesses."""
    procs: list[subprocess.Popen[bytes]] = []
    urls: dict[str, str] = {}
    try:
        for kind, path in (("http", "/mcp"), ("sse", "/sse")):
            port = free_port()
            proc = subprocess.Popen(
                [sys.executable, "-m", "mcpkit", "run", DEMO, "-t", kind, "--port", str(port)],
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            procs.append(proc)
            wait_listening(port, proc)
            urls[kind] = f"http://127.0.0.1:{port}{path}"
        yield urls
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(TIMEOUT)


def write_config(tmp_path: Path, servers: dict[str, Any]) -> str:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def demo_stdio() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "mcpkit", "run", DEMO]}


# -- tools and call, over stdio ------------------------------------------------------------------------


def test_tools_lists_every_tool_with_its_schemas() -> None:
    proc = mcpkit("tools", "--stdio", STDIO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    assert "add(a: integer, b: integer)\n    Add two integers.\n" in out
    assert "forecast(city: string, days?: integer)" in out
    assert '    input schema: {"properties": {"a": {"title": "A", "type": "integer"}' in out
    assert '    output schema: {"properties": {"city"' in out
    assert '    annotations: {"readOnlyHint": true, "idempotentHint": true}' in out


def test_protocol_version_asks_for_the_stateless_revision() -> None:
    proc = mcpkit(
        "call",
        "add",
        "--stdio",
        STDIO,
        "--protocol-version",
        "2026-07-28",
        "-v",
        "--args",
        '{"a": 2, "b": 3}',
    )
    assert proc.returncode == 0, proc.stderr
    assert "5" in proc.stdout


def test_tools_as_json() -> None:
    proc = mcpkit("tools", "--stdio", STDIO, "--json")
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)
    tools = {t["name"]: t for t in listing["server"]}
    assert set(tools) == {"add", "forecast", "count_slowly"}
    assert tools["forecast"]["inputSchema"]["required"] == ["city"]


def test_call_prints_structured_content_and_text() -> None:
    proc = mcpkit("call", "forecast", "--stdio", STDIO, "--args", '{"city": "Tokyo"}')
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "city": "Tokyo",
        "temperature_c": 19.5,
        "conditions": "sunny",
    }
    proc = mcpkit("call", "add", "--stdio", STDIO, "-a", '{"a": 2, "b": 40}')
    assert (proc.returncode, proc.stdout) == (0, "42\n")
    proc = mcpkit("call", "add", "--stdio", STDIO, "-a", '{"a": 2, "b": 40}', "--json")
    assert json.loads(proc.stdout)["content"] == [{"type": "text", "text": "42"}]


def test_verbose_shows_the_server_logs() -> None:
    args = ("call", "count_slowly", "--stdio", STDIO, "--args", '{"to": 2}')
    quiet = mcpkit(*args)
    # Without -v, stderr shows only the call's progress.
    assert (quiet.returncode, quiet.stdout) == (0, "counted to 2\n")
    assert quiet.stderr.splitlines() == [
        "mcpkit: progress 1/2 (50%): counted 1",
        "mcpkit: progress 2/2 (100%): counted 2",
    ]
    loud = mcpkit(*args, "-v")
    assert loud.returncode == 0
    label = f"[{Path(sys.executable).name} -m mcpkit run demo_server.py]"
    assert f"{label} counted 1" in loud.stderr and f"{label} counted 2" in loud.stderr


def test_a_tool_error_is_one_line_and_status_1() -> None:
    proc = mcpkit("call", "add", "--stdio", STDIO, "--args", '{"a": "x", "b": 1}')
    assert proc.returncode == 1
    assert proc.stdout == ""
    line = one_error_line(proc)
    assert line.startswith("mcpkit: error: tool 'add' failed: Invalid arguments for tool 'add'")
    # With --json the error result is printed, and the status still says it failed.
    proc = mcpkit("call", "add", "--stdio", STDIO, "--args", '{"a": "x", "b": 1}', "--json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["isError"] is True


def test_an_unknown_tool_is_a_usage_error_naming_the_server_by_its_command() -> None:
    proc = mcpkit("call", "nope", "--stdio", STDIO)
    assert proc.returncode == 2
    exe = Path(sys.executable).name
    assert one_error_line(proc) == (
        f"mcpkit: error: no tool 'nope' on server '{exe} -m mcpkit run demo_server.py'; "
        "see 'mcpkit tools'"
    )


def test_a_url_server_is_named_by_its_url(http_servers: dict[str, str]) -> None:
    url = http_servers["http"]
    proc = mcpkit("call", "nope", "--url", url)
    assert proc.returncode == 2
    assert one_error_line(proc) == (
        f"mcpkit: error: no tool 'nope' on server '{url}'; see 'mcpkit tools'"
    )


# -- a configuration file with several servers -------------------------------------------------------------


def test_config_names_tools_server_tool_and_reports_a_failed_server(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"demo": demo_stdio(), "broken": CRASH})
    proc = mcpkit("tools", "--config", config)
    assert proc.returncode == 1  # a server failed...
    assert "demo_add(a: integer, b: integer)" in proc.stdout  # ...the other one is listed
    line = one_error_line(proc)
    assert line.startswith("mcpkit: error: server 'broken': ")
    assert "exited with status 4" in line and "no API key" in line


def test_call_starts_only_the_server_that_owns_the_tool(tmp_path: Path) -> None:
    broken = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(4)"]}
    config = write_config(tmp_path, {"demo": demo_stdio(), "broken": broken})
    proc = mcpkit("call", "demo_add", "--config", config, "--args", '{"a": 1, "b": 2}')
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "3\n", "")
    proc = mcpkit("call", "broken_add", "--config", config)
    assert proc.returncode == 1
    assert "MCP server 'broken' failed to start" in one_error_line(proc)


def test_call_finds_the_owner_when_server_names_share_a_prefix(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"d": demo_stdio(), "d_x": demo_stdio()})
    # "d_x_add" could be d's "x_add" or d_x's "add": only d_x has it.
    proc = mcpkit("call", "d_x_add", "--config", config, "--args", '{"a": 1, "b": 1}')
    assert (proc.returncode, proc.stdout) == (0, "2\n"), proc.stderr
    proc = mcpkit("call", "d_x_nothing", "--config", config)
    assert proc.returncode == 2
    assert one_error_line(proc) == (
        "mcpkit: error: no tool 'd_x_nothing' on server(s) d_x, d; see 'mcpkit tools'"
    )


def test_resources_read_prompts_and_prompt(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"demo": demo_stdio()})
    proc = mcpkit("resources", "--config", config)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "demo: config://app  (app_config, application/json)  The app's configuration.",
        "demo: notes://{name}  (note, text/plain, template)  A note by name.",
    ]
    proc = mcpkit("read", "notes://welcome", "--config", config)
    assert (proc.returncode, proc.stdout) == (0, "Hello from mcpkit!\n")
    proc = mcpkit("read", "config://app", "--config", config, "--json")
    contents = json.loads(proc.stdout)["contents"]
    assert json.loads(contents[0]["text"]) == {"theme": "dark", "language": "en"}
    proc = mcpkit("prompts", "--config", config)
    assert proc.stdout == "demo_greeting(name, style?)\n    A greeting prompt.\n"
    proc = mcpkit("prompt", "demo_greeting", "--config", config, "--args", '{"name": "Ada"}')
    assert (proc.returncode, proc.stdout) == (0, "user: Write a friendly greeting for Ada.\n")


# -- HTTP and SSE -----------------------------------------------------------------------------------------------


def test_commands_over_streamable_http_and_sse(
    http_servers: dict[str, str], tmp_path: Path
) -> None:
    for kind, url in http_servers.items():
        proc = mcpkit("call", "add", "--url", url, "--args", '{"a": 20, "b": 22}')
        assert (proc.returncode, proc.stdout) == (0, "42\n"), (kind, proc.stderr)
        proc = mcpkit("read", "notes://welcome", "--url", url)
        assert proc.stdout == "Hello from mcpkit!\n", (kind, proc.stderr)
    proc = mcpkit("tools", "--url", http_servers["sse"], "--transport", "streamable-http")
    assert proc.returncode == 1
    assert "HTTP 405" in one_error_line(proc)
    servers = {
        "remote": {"url": http_servers["http"]},
        "legacy": {"type": "sse", "url": http_servers["sse"]},
    }
    proc = mcpkit("tools", "--config", write_config(tmp_path, servers), "--json")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) == {"remote", "legacy"}


def test_an_unreachable_url_is_one_line() -> None:
    proc = mcpkit("tools", "--url", f"http://127.0.0.1:{free_port()}/mcp", "--timeout", "5")
    assert proc.returncode == 1
    line = one_error_line(proc)
    assert "ConnectError" in line and "tried Streamable HTTP, then legacy HTTP+SSE" in line


# -- usage mistakes: one line, status 2 -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["call", "add", "--stdio", "x", "--args", "[1"], "--args is not valid JSON"),
        (["call", "add", "--stdio", "x", "--args", "[1]"], "--args must be a JSON object"),
        (["tools", "--config", "/nonexistent/mcp.json"], "configuration file not found"),
        (["tools", "--stdio", "x", "--header", "A: b"], "--header only applies with --url"),
        (["tools", "--stdio", "x", "--server", "a"], "--server only applies with --config"),
        (["tools", "--url", "http://h/mcp", "--header", "nocolon"], "use 'Name: value'"),
        (["tools", "--stdio", "'unclosed"], "--stdio: No closing quotation"),
        (["tools", "--stdio", "x", "--protocol-version", "1999-01-01"], "use one of"),
        (["tools", "--stdio", "x", "--timeout", "nan"], "--timeout must be a positive, finite"),
        (["tools", "--stdio", "x", "--timeout", "inf"], "--timeout must be a positive, finite"),
        (["tools", "--stdio", "x", "--timeout", "0"], "--timeout must be a positive, finite"),
        (
            ["tools", "--config", "/x.json", "--protocol-version", "2026-07-28"],
            "--protocol-version only applies with --url or --stdio",
        ),
    ],
)
def test_usage_mistakes(args: list[str], message: str) -> None:
    proc = mcpkit(*args)
    assert proc.returncode == 2
    assert message in one_error_line(proc)


def test_config_mistakes(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": demo_stdio(), "b": demo_stdio()})
    proc = mcpkit("read", "notes://x", "--config", config)
    assert proc.returncode == 2
    assert "choose the server to read from with --server" in one_error_line(proc)
    proc = mcpkit("tools", "--config", config, "--server", "c")
    assert proc.returncode == 2
    assert "no server 'c' in" in one_error_line(proc)
    proc = mcpkit("call", "zzz_add", "--config", config)
    assert proc.returncode == 2
    assert "no configured server owns 'zzz_add': names are SERVER_TOOL" in one_error_line(proc)
    proc = mcpkit("prompt", "zzz_greeting", "--config", config)
    assert proc.returncode == 2
    assert "owns 'zzz_greeting': names are SERVER_PROMPT" in one_error_line(proc)
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"a": {"url": "http://h", "command": "x"}}}')
    proc = mcpkit("tools", "--config", str(bad))
    assert proc.returncode == 2
    assert "server 'a' needs exactly one of" in proc.stderr


def test_a_server_is_required() -> None:
    proc = mcpkit("tools")
    assert proc.returncode == 2
    assert "one of the arguments --config/-c --url --stdio is required" in proc.stderr
