"""``mcpkit run`` settings from ``MCPKIT_*`` variables and a ``.env`` file (issue 19)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from mcpkit import MCPServer, ServerLimits
from mcpkit.cli import main
from mcpkit.cli import run as run_command
from mcpkit.cli.settings import (
    RUN_OPTIONS,
    SERVER_SETTINGS,
    SettingError,
    apply_run_settings,
    apply_server_settings,
    parse_env_file,
)
from mcpkit.server.context import LOG_LEVELS
from tests.cli.test_run import INIT, _free_port, _until_listening
from tests.transports.stdio_peer import TIMEOUT, StdioPeer

# A server whose instructions come from the environment: the .env file reaches the code.
APP = """
import os
from mcpkit import MCPServer

server = MCPServer(name="env-app", version="1", instructions=os.environ.get("GREETING"))

@server.tool
async def one() -> str:
    "One."
    return "1"

@server.tool
async def two() -> str:
    "Two."
    return "2"
"""

ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "env_app.py"
    path.write_text(APP)
    return path


def _clean_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MCPKIT_")}
    env.pop("GREETING", None)
    return {**env, **extra}


@asynccontextmanager
async def _serving(
    argv: list[str], *, cwd: Path, env: dict[str, str]
) -> AsyncIterator[asyncio.subprocess.Process]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mcpkit",
        "run",
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(cwd),
        env=env,
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
                await proc.wait()


async def _initialize(url: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        return await client.post(url, json=INIT, headers=ACCEPT)


# -- the run options, end to end -------------------------------------------------------------------


async def test_run_takes_its_options_from_mcpkit_variables(app: Path) -> None:
    port = _free_port()
    env = _clean_env(
        MCPKIT_TRANSPORT="http",
        MCPKIT_PORT=str(port),
        MCPKIT_PATH="/from-env",
        MCPKIT_STATELESS="1",
        MCPKIT_JSON_RESPONSE="true",
        MCPKIT_ALLOWED_HOST="127.0.0.1:*, localhost:*",
    )
    async with _serving([str(app)], cwd=app.parent, env=env) as proc:
        await _until_listening(port, proc)
        response = await _initialize(f"http://127.0.0.1:{port}/from-env")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/json")  # json_response
        assert "mcp-session-id" not in response.headers  # stateless


async def test_a_dotenv_file_loses_to_the_environment_and_both_to_flags(app: Path) -> None:
    port = _free_port()
    (app.parent / ".env").write_text(
        "# settings for the demo\n"
        "export MCPKIT_TRANSPORT=http\n"
        f"MCPKIT_PORT='{port + 1}'\n"  # the command line says otherwise
        'MCPKIT_PATH="/from-file"  \n'
        "MCPKIT_JSON_RESPONSE=1 # a comment after a value\n"
        'GREETING="hello from .env"\n'
    )
    env = _clean_env(MCPKIT_PATH="/from-environment")
    async with _serving([str(app), "--port", str(port)], cwd=app.parent, env=env) as proc:
        await _until_listening(port, proc)
        assert (await _initialize(f"http://127.0.0.1:{port}/from-file")).status_code == 404
        response = await _initialize(f"http://127.0.0.1:{port}/from-environment")
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/json")
        assert response.json()["result"]["instructions"] == "hello from .env"


async def test_env_file_chooses_the_file(app: Path, tmp_path: Path) -> None:
    chosen = tmp_path / "prod.env"
    chosen.write_text("GREETING=from the chosen file\nMCPKIT_PAGE_SIZE=1\n")
    for extra, greeting, paged in ((["--env-file", str(chosen)], "from the chosen file", True),):
        peer = await StdioPeer.spawn(
            [sys.executable, "-m", "mcpkit", "run", str(app), *extra], env=_clean_env()
        )
        try:
            result = await peer.initialize()
            assert result.get("instructions") == greeting
            listing = await peer.request("tools/list")
            assert ("nextCursor" in listing["result"]) is paged  # MCPKIT_PAGE_SIZE=1
        finally:
            await peer.kill()


def test_no_env_file_reads_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("MCPKIT_PORT=9\nOTHER=x\n")
    args = _run_parser().parse_args(["app.py", "--no-env-file"])
    environ: dict[str, str] = {}
    assert apply_run_settings(args, environ) == {}
    assert environ == {} and args.port is None
    args = _run_parser().parse_args(["app.py"])
    assert apply_run_settings(args, environ) == {"--port": "MCPKIT_PORT"}
    assert environ == {"MCPKIT_PORT": "9", "OTHER": "x"} and args.port == 9


# -- validation: one line naming the variable --------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MCPKIT_PORT": "abc"}, "MCPKIT_PORT='abc' is not an integer"),
        ({"MCPKIT_MAX_MEMORY": "lots"}, "MCPKIT_MAX_MEMORY='lots' is not a number"),
        ({"MCPKIT_TRANSPORT": "udp"}, "MCPKIT_TRANSPORT='udp' is not one of stdio, http, sse"),
        ({"MCPKIT_STATELESS": "maybe"}, "MCPKIT_STATELESS='maybe' is not a boolean"),
        (
            {"MCPKIT_TRANSPORT": "http", "MCPKIT_WORKERS": "0"},
            "MCPKIT_WORKERS must be a positive integer, got 0",
        ),
        ({"MCPKIT_PORT": "8080"}, "MCPKIT_PORT cannot be used with --transport stdio"),
        (
            {"MCPKIT_TRANSPORT": "http", "MCPKIT_HOST": "0.0.0.0"},
            "MCPKIT_HOST 0.0.0.0 makes the server reachable from other machines",
        ),
        ({"MCPKIT_REQUEST_TIMEOUT": "soon"}, "MCPKIT_REQUEST_TIMEOUT='soon' is not a number"),
        ({"MCPKIT_PAGE_SIZE": "0"}, "MCPKIT_PAGE_SIZE=0: page_size must be a positive integer"),
        ({"MCPKIT_DEFAULT_LOG_LEVEL": "loud"}, "MCPKIT_DEFAULT_LOG_LEVEL='loud' is not one of"),
    ],
)
def test_a_bad_variable_is_one_line_naming_it(
    env: dict[str, str],
    message: str,
    app: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(app.parent)  # no .env here
    for key in [key for key in os.environ if key.startswith("MCPKIT_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(["run", str(app)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mcpkit: error: {message}")
    assert err.count("\n") == 1


def test_a_flag_given_on_the_command_line_is_not_renamed(
    app: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(app.parent)
    monkeypatch.setenv("MCPKIT_WORKERS", "3")
    assert main(["run", str(app), "-t", "http", "--workers", "0"]) == 2
    assert "--workers must be a positive integer, got 0" in capsys.readouterr().err


def test_a_dotenv_line_that_does_not_read_names_the_file_and_line(
    app: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(app.parent)
    (app.parent / ".env").write_text("# ok\nMCPKIT_PORT=1\nnot a setting\n")
    assert main(["run", str(app)]) == 2
    assert "mcpkit: error: .env:3: expected KEY=VALUE, got 'not a setting'" in (
        capsys.readouterr().err
    )
    assert main(["run", str(app), "--env-file", "missing.env"]) == 2
    assert "cannot read --env-file missing.env" in capsys.readouterr().err


# -- the tables -----------------------------------------------------------------------------------


def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    run_command.configure(parser)
    return parser


def test_every_run_option_has_a_variable() -> None:
    actions = {a.dest: a for a in _run_parser()._actions if a.option_strings}
    # --redis and --redis-prefix keep MCPKIT_REDIS_URL and MCPKIT_REDIS_PREFIX; the env file
    # options choose where variables come from.
    own = {"help", "redis", "redis_prefix", "env_file", "no_env_file"}
    assert set(RUN_OPTIONS) == set(actions) - own
    for dest, kind in RUN_OPTIONS.items():
        action = actions[dest]
        if action.choices is not None:
            assert kind == tuple(action.choices)
        elif isinstance(action, argparse._AppendAction):
            assert kind == "list"
        elif isinstance(action, argparse._StoreTrueAction):
            assert kind == "flag"
        else:
            assert kind is (action.type or str)


def test_the_log_levels_are_the_servers() -> None:
    assert SERVER_SETTINGS["default_log_level"] == tuple(LOG_LEVELS)


def test_repeatable_options_split_on_commas_and_flags_win() -> None:
    args = _run_parser().parse_args(["app.py", "--allowed-origin", "https://a.example"])
    environ = {
        "MCPKIT_ALLOWED_HOST": " a.example , b.example:*,",
        "MCPKIT_ALLOWED_ORIGIN": "https://b.example",
        "MCPKIT_STATELESS": "off",
        "MCPKIT_PORT": "",  # empty counts as unset
    }
    taken = apply_run_settings(args, environ | {"no": ""})
    assert args.allowed_host == ["a.example", "b.example:*"]
    assert args.allowed_origin == ["https://a.example"]
    assert args.stateless is False and args.port is None and args.transport == "stdio"
    assert taken == {"--allowed-host": "MCPKIT_ALLOWED_HOST"}


def test_parse_env_file_reads_dotenv_lines() -> None:
    text = "export A=1\nB = 'two words'\nC=\"x # not a comment\"\nD=v # comment\n\n# E=no\n"
    assert parse_env_file(text, "f") == {
        "A": "1",
        "B": "two words",
        "C": "x # not a comment",
        "D": "v",
    }
    with pytest.raises(SettingError, match=r"^f:1: expected KEY=VALUE"):
        parse_env_file("=value\n", "f")


# -- the server knobs ------------------------------------------------------------------------------


def test_server_knobs_apply_where_the_code_kept_the_default() -> None:
    environ = {
        "MCPKIT_REQUEST_TIMEOUT": "5",
        "MCPKIT_PAGE_SIZE": "10",
        "MCPKIT_MAX_BATCH_SIZE": "7",
        "MCPKIT_LISTEN_QUEUE_BYTES": "2048",
        "MCPKIT_DEFAULT_LOG_LEVEL": "warning",
        "MCPKIT_DEBUG": "yes",
    }
    plain = MCPServer(name="plain", version="1")
    apply_server_settings(plain, environ)
    assert plain.limits == ServerLimits(
        request_timeout=5, page_size=10, max_batch_size=7, listen_queue_bytes=2048
    )
    assert (plain.request_timeout, plain.page_size) == (5, 10)
    assert (plain.max_batch_size, plain.listen_queue_bytes) == (7, 2048)
    assert plain.input_rounds.ttl == 5 and plain.input_rounds.codec.ttl == 5
    assert plain.default_log_level == "warning" and plain.debug is True

    chosen = MCPServer(
        name="chosen",
        version="1",
        limits=ServerLimits(page_size=3, request_timeout=90),
        default_log_level="error",
    )
    apply_server_settings(chosen, environ)
    assert (chosen.page_size, chosen.request_timeout) == (3, 90)  # the code's values win
    assert chosen.max_batch_size == 7  # left at the default by the code
    assert chosen.default_log_level == "error"


def test_a_negative_request_timeout_is_refused() -> None:
    server = MCPServer(name="s", version="1")
    with pytest.raises(SettingError, match=r"^MCPKIT_REQUEST_TIMEOUT=-1.0 must be positive"):
        apply_server_settings(server, {"MCPKIT_REQUEST_TIMEOUT": "-1"})


async def test_each_worker_applies_the_server_knobs(app: Path) -> None:
    port = _free_port()
    env = _clean_env(
        MCPKIT_TRANSPORT="http",
        MCPKIT_PORT=str(port),
        MCPKIT_WORKERS="2",
        MCPKIT_STATELESS="yes",
        MCPKIT_JSON_RESPONSE="1",
        MCPKIT_PAGE_SIZE="1",
    )
    async with _serving([str(app)], cwd=app.parent, env=env) as proc:
        await _until_listening(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            for _ in range(4):  # new connections: both workers answer at some point
                await client.post(url, json=INIT, headers=ACCEPT)
                listing = await client.post(
                    url,
                    json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                    headers={**ACCEPT, "MCP-Protocol-Version": "2025-11-25", "Connection": "close"},
                )
                assert listing.status_code == 200, listing.text
                assert len(listing.json()["result"]["tools"]) == 1
                assert "nextCursor" in listing.json()["result"]


def test_the_redis_url_can_come_from_the_dotenv_file(
    app: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(app.parent)
    # Unset now, and again after the test (the run puts the file's value in os.environ).
    monkeypatch.setenv("MCPKIT_REDIS_URL", "")
    monkeypatch.delenv("MCPKIT_REDIS_URL")
    (app.parent / ".env").write_text("MCPKIT_REDIS_URL=redis://localhost:6379/0\n")
    assert main(["run", str(app)]) == 2
    assert "MCPKIT_REDIS_URL is set, but --transport stdio" in capsys.readouterr().err
