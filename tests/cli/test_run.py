"""``mcpkit run``: finding the server object, reporting mistakes, and serving it."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpkit.cli import main
from mcpkit.cli.loader import LoadError, UserCodeError, load_server, split_target
from tests.transports.stdio_peer import FIXTURES, REPO, TIMEOUT, StdioPeer

TARGETS = FIXTURES / "cli_targets.py"
ONLY_ONE = FIXTURES / "cli_only_one.py"
BROKEN = FIXTURES / "cli_broken.py"
STDIO_SERVER = FIXTURES / "stdio_server.py"


@pytest.fixture(autouse=True)
def _isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Loading user modules edits sys.path and sys.modules; undo that after each test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("cli_", "_mcpkit_target_", "tests.fixtures")):
            del sys.modules[name]


def mcpkit(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpkit", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        **kwargs,
    )


# -- targets ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("server.py", ("server.py", None)),
        ("server.py:app", ("server.py", "app")),
        ("pkg.module:obj.attr", ("pkg.module", "obj.attr")),
        ("pkg.module", ("pkg.module", None)),
        (r"C:\apps\server.py", (r"C:\apps\server.py", None)),
        (r"C:\apps\server.py:app", (r"C:\apps\server.py", "app")),
        ("dir/server.py:not-an-identifier", ("dir/server.py:not-an-identifier", None)),
    ],
)
def test_split_target(target: str, expected: tuple[str, str | None]) -> None:
    assert split_target(target) == expected


def test_file_with_default_object() -> None:
    assert load_server(str(STDIO_SERVER)).name == "stdio-fixture"


def test_file_with_named_object() -> None:
    assert load_server(f"{TARGETS}:other").name == "other"


def test_file_with_dotted_object() -> None:
    assert load_server(f"{TARGETS}:Holder.inner").name == "inner"


def test_the_only_server_in_a_file_is_found_without_a_name() -> None:
    assert load_server(str(ONLY_ONE)).name == "the-only-one"


def test_module_and_object(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert load_server("tests.fixtures.cli_targets:primary").name == "primary"


def test_factory_function() -> None:
    assert load_server(f"{TARGETS}:make_server").name == "made-by-factory"


def test_async_factory_function() -> None:
    assert load_server(f"{TARGETS}:make_server_async").name == "made-by-async-factory"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing.py", "file not found: missing.py"),
        ("missing/dir/app.py:server", "file not found: missing/dir/app.py"),
        ("no_such_module_anywhere:server", "no file or module named 'no_such_module_anywhere'"),
        (f"{TARGETS}:nope", f"{TARGETS} has no object named 'nope'"),
        (f"{TARGETS}:Holder.nope", f"{TARGETS} has no object named 'Holder.nope'"),
        (str(TARGETS), f"{TARGETS} has no server named mcp, server or app (it has other, primary)"),
        (f"{TARGETS}:not_a_server", f"{TARGETS}:not_a_server is an int, not an MCPServer"),
        (f"{TARGETS}:make_wrong", f"{TARGETS}:make_wrong() returned an int, not an MCPServer"),
        (f"{TARGETS}:needs_arguments", "as a factory it needs arguments (name)"),
    ],
)
def test_load_errors(target: str, message: str) -> None:
    with pytest.raises(LoadError) as info:
        load_server(target)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_errors_raised_by_user_code_keep_their_traceback() -> None:
    with pytest.raises(UserCodeError) as info:
        load_server(str(BROKEN))
    report = info.value.report()
    assert report.startswith("Traceback")
    assert "cli_broken.py" in report and "_fail()" in report
    assert report.endswith("ValueError: broken at import time")
    assert "loader.py" not in report  # mcpkit's own frames are left out

    with pytest.raises(UserCodeError) as info:
        load_server(f"{TARGETS}:exploding_factory")
    assert "RuntimeError: the factory exploded" in info.value.report()


# -- the command line ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "missing.py"], "mcpkit: error: file not found: missing.py"),
        (
            ["run", f"{TARGETS}:nope"],
            f"mcpkit: error: {TARGETS} has no object named 'nope'",
        ),
        (
            ["run", f"{TARGETS}:not_a_server"],
            f"mcpkit: error: {TARGETS}:not_a_server is an int, not an MCPServer",
        ),
        (
            ["run", "no_such_module_anywhere:app"],
            "mcpkit: error: no file or module named 'no_such_module_anywhere'",
        ),
        (
            ["run", str(STDIO_SERVER), "--port", "9"],
            "mcpkit: error: --port cannot be used with --transport stdio",
        ),
        (
            ["run", str(STDIO_SERVER), "-t", "sse", "--stateless"],
            "mcpkit: error: --stateless cannot be used with --transport sse",
        ),
        (
            ["run", str(STDIO_SERVER), "--allowed-host", "x.example"],
            "mcpkit: error: --allowed-host cannot be used with --transport stdio",
        ),
        (
            ["run", str(STDIO_SERVER), "-t", "http", "--port", "99999"],
            "mcpkit: error: --port 99999 is not a port number: use 0 to 65535 "
            "(0 picks a free port)",
        ),
        (
            ["run", str(STDIO_SERVER), "-t", "sse", "--port", "-1"],
            "mcpkit: error: --port -1 is not a port number: use 0 to 65535 (0 picks a free port)",
        ),
        (
            ["run", str(STDIO_SERVER), "-t", "http", "--host", "0.0.0.0"],
            "mcpkit: error: --host 0.0.0.0 makes the server reachable from other machines, so "
            "DNS-rebinding protection needs the host names clients use: add --allowed-host NAME "
            "for each (NAME:PORT or NAME:* for ports, *.example.com for subdomains), or "
            "--allowed-host '*' to turn the Host check off deliberately",
        ),
        (
            ["run", str(STDIO_SERVER), "-t", "sse", "--host", "::", "--allowed-origin", "*"],
            "mcpkit: error: --host :: makes the server reachable from other machines, so "
            "DNS-rebinding protection needs the host names clients use: add --allowed-host NAME "
            "for each (NAME:PORT or NAME:* for ports, *.example.com for subdomains), or "
            "--allowed-host '*' to turn the Host check off deliberately",
        ),
        (
            ["run", str(STDIO_SERVER), "-t", "http", "--header-timeout", "0"],
            "mcpkit: error: --header-timeout must be positive, got 0.0",
        ),
        (
            ["run", str(STDIO_SERVER), "--max-connections", "5"],
            "mcpkit: error: --max-connections cannot be used with --transport stdio",
        ),
        (
            ["run", str(STDIO_SERVER), "-t", "http", "--allowed-host", "https://x.example"],
            "mcpkit: error: --allowed-host 'https://x.example' must look like 'host', "
            "'host:port', 'host:*' or '*.domain[:port]'",
        ),
    ],
)
def test_mistakes_are_one_line_with_status_2(args: list[str], message: str) -> None:
    proc = mcpkit(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = [line for line in proc.stderr.splitlines() if line != "printed at import time"]
    assert lines == [message]


def test_a_failing_user_module_shows_its_traceback_and_status_1() -> None:
    proc = mcpkit("run", str(BROKEN))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "ValueError: broken at import time" in proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1] == (
        "mcpkit: error: importing cli_broken.py failed: ValueError: broken at import time"
    )


def test_a_registration_error_is_said_once_without_pydantic_internals(tmp_path: Path) -> None:
    bad = tmp_path / "unsupported.py"
    bad.write_text(
        "import socket\n"
        "from mcpkit import MCPServer\n"
        "server = MCPServer(name='s', version='1')\n"
        "@server.tool\n"
        "def send(sock: socket.socket) -> str:\n"
        "    return ''\n"
    )
    proc = mcpkit("run", str(bad))
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "mcpkit: error: importing unsupported.py failed: tool 'send': parameter 'sock': type "
        "socket cannot be described as JSON Schema; use JSON types (str, int, float, bool, "
        "list, dict), a pydantic model, a dataclass or a TypedDict"
    ]


def test_syntax_error_in_user_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("server = (\n")
    proc = mcpkit("run", str(bad))
    assert proc.returncode == 1
    assert "SyntaxError" in proc.stderr
    assert "bad.py" in proc.stderr


def test_unknown_transport_is_a_usage_error() -> None:
    proc = mcpkit("run", str(STDIO_SERVER), "--transport", "carrier-pigeon")
    assert proc.returncode == 2
    assert "invalid choice: 'carrier-pigeon'" in proc.stderr


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from mcpkit import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"mcpkit {__version__}\n"


def test_no_command_prints_help_with_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "usage: mcpkit" in err and "run" in err


def test_console_script_and_module_agree() -> None:
    scripts = Path(sys.executable).parent
    script = scripts / "mcpkit"
    if not script.exists():  # installed elsewhere (a shim): ask the PATH
        import shutil

        found = shutil.which("mcpkit")
        assert found is not None, "the mcpkit console script is not installed"
        script = Path(found)
    proc = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert proc.returncode == 0
    assert proc.stdout == mcpkit("--version").stdout


# -- serving ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "name"),
    [
        (str(STDIO_SERVER), "stdio-fixture"),
        (f"{TARGETS}:other", "other"),
        ("tests.fixtures.cli_targets:Holder.inner", "inner"),
        (f"{TARGETS}:make_server", "made-by-factory"),
        (str(ONLY_ONE), "the-only-one"),
    ],
)
async def test_run_serves_the_target_on_stdio(target: str, name: str) -> None:
    peer = await StdioPeer.spawn([sys.executable, "-m", "mcpkit", "run", target])
    try:
        result = await peer.initialize()
        assert result["serverInfo"]["name"] == name
        await peer.close_stdin()
        assert await peer.read_rest() == []
        assert await peer.wait() == 0
    finally:
        await peer.kill()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def _running(*args: str) -> AsyncIterator[asyncio.subprocess.Process]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mcpkit",
        "run",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(REPO),
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), TIMEOUT)
            except TimeoutError:
                proc.kill()
                await asyncio.wait_for(proc.wait(), TIMEOUT)


async def _until_listening(port: int, proc: asyncio.subprocess.Process) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while loop.time() < deadline:
        assert proc.returncode is None, "the server exited early"
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return
    raise AssertionError(f"nothing listened on port {port}")


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "cli-test", "version": "0"},
    },
}


@pytest.mark.parametrize("extra", [[], ["--stateless", "--json-response"]])
async def test_run_serves_streamable_http(extra: list[str]) -> None:
    port = _free_port()
    args = [f"{TARGETS}:other", "-t", "http", "--port", str(port), "--path", "/custom", *extra]
    async with _running(*args) as proc:
        await _until_listening(port, proc)
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            response = await client.post(
                f"http://127.0.0.1:{port}/custom",
                json=INIT,
                headers={"Accept": "application/json, text/event-stream"},
            )
        assert response.status_code == 200
        if extra:
            assert response.headers["content-type"].startswith("application/json")
            assert "mcp-session-id" not in response.headers
        else:
            assert "mcp-session-id" in response.headers
        assert '"name":"other"' in response.text.replace(" ", "")
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
        assert proc.stderr is not None
        banner = (await proc.stderr.read()).decode()
        assert f"serving 'other' on http://127.0.0.1:{port}/custom (Streamable HTTP)" in banner


async def test_run_serves_legacy_sse() -> None:
    port = _free_port()
    async with _running(f"{TARGETS}:other", "-t", "sse", "--port", str(port)) as proc:
        await _until_listening(port, proc)
        async with (
            httpx.AsyncClient(timeout=TIMEOUT) as client,
            client.stream("GET", f"http://127.0.0.1:{port}/sse") as stream,
        ):
            assert stream.status_code == 200
            lines = stream.aiter_lines()
            first = await asyncio.wait_for(anext(lines), TIMEOUT)
            second = await asyncio.wait_for(anext(lines), TIMEOUT)
        assert first == "event: endpoint"
        assert second.startswith("data: /message")
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0


async def test_the_banner_comes_once_the_port_is_bound() -> None:
    # --port 0: only a banner printed after the bind can name the real port.
    async with _running(f"{TARGETS}:other", "-t", "http", "--port", "0") as proc:
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), TIMEOUT)).decode()
        prefix = "mcpkit: serving 'other' on http://127.0.0.1:"
        assert line.startswith(prefix), line
        port = int(line[len(prefix) :].split("/")[0])
        assert port != 0
        _, writer = await asyncio.open_connection("127.0.0.1", port)  # no retry: it listens
        writer.close()


def test_a_port_in_use_is_an_error_without_a_banner() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        for transport in ("http", "sse"):
            proc = mcpkit("run", f"{TARGETS}:other", "-t", transport, "--port", str(port))
            assert proc.returncode == 1
            assert proc.stderr.splitlines() == [
                f"mcpkit: error: cannot listen on 127.0.0.1:{port}: the address is already "
                "in use (is another server running?)"
            ]


def test_a_missing_uvicorn_is_an_error_without_a_banner() -> None:
    script = (
        "import sys; sys.modules['uvicorn'] = None; from mcpkit.cli import main; "
        f"sys.exit(main(['run', {str(TARGETS) + ':other'!r}, '-t', 'http', '--port', '0']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "mcpkit: error: serving over HTTP (mcpkit.transports.serve) needs uvicorn, which is "
        "not installed: pip install 'mcpkit[http]'"
    ]


async def test_allowed_hosts_on_all_interfaces() -> None:
    port = _free_port()
    args = [f"{TARGETS}:other", "-t", "http", "--host", "0.0.0.0", "--port", str(port)]
    args += ["--allowed-host", "mcp.example.com:*", "--allowed-origin", "https://app.example.com"]
    async with _running(*args) as proc:
        await _until_listening(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            evil = {"Host": "evil.example", "Origin": "http://evil.example"}
            assert (
                await client.post(url, json=INIT, headers={**headers, **evil})
            ).status_code == 421
            good = {"Host": f"mcp.example.com:{port}", "Origin": "https://app.example.com"}
            ok = await client.post(url, json=INIT, headers={**headers, **good})
            assert ok.status_code == 200
            foreign = {**good, "Origin": "https://evil.example"}
            assert (
                await client.post(url, json=INIT, headers={**headers, **foreign})
            ).status_code == 403
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
        assert proc.stderr is not None
        banner = (await proc.stderr.read()).decode()
        assert f"serving 'other' on http://0.0.0.0:{port}/mcp (Streamable HTTP)" in banner


def test_retry_ms_needs_resumable() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpkit",
            "run",
            "examples/demo_server.py",
            "--transport",
            "http",
            "--retry-ms",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 2
    assert "--retry-ms needs --resumable" in proc.stderr


def test_resumable_is_http_only() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpkit", "run", "examples/demo_server.py", "--resumable"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 2
    assert "--resumable cannot be used with --transport stdio" in proc.stderr


async def test_resumable_streams_start_with_a_priming_event_and_retry() -> None:
    port = _free_port()
    args = [
        f"{TARGETS}:other",
        "-t",
        "http",
        "--port",
        str(port),
        "--resumable",
        "--retry-ms",
        "250",
    ]
    async with _running(*args) as proc:
        await _until_listening(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            init = await client.post(url, json=INIT, headers=headers)
            headers["Mcp-Session-Id"] = init.headers["mcp-session-id"]
            headers["MCP-Protocol-Version"] = "2025-11-25"
            await client.post(
                url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
            )
            listed = await client.post(
                url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
            )
        events = [e for e in listed.text.split("\n\n") if e.strip()]
        first = dict(line.split(":", 1) for line in events[0].splitlines())
        assert "id" in first and first.get("retry", "").strip() == "250"
        assert first.get("data", "").strip() == ""
        assert any('"tools"' in e and "id:" in e for e in events[1:])
