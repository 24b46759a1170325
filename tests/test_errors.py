"""The exception hierarchy and the two boundaries to the wire."""

from __future__ import annotations

import pytest

from mcpkit import errors
from mcpkit.errors import (
    CapabilityError,
    ConnectionClosed,
    InvalidParams,
    InvalidRequest,
    MCPError,
    MethodNotFound,
    PeerTimeout,
    RegistrationError,
    RemoteError,
    ResourceNotFound,
    ToolError,
)
from mcpkit.protocol.error_answers import to_jsonrpc_error, tool_error_text


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (InvalidRequest("x"), -32600),
        (MethodNotFound("x"), -32601),
        (InvalidParams("x"), -32602),
        (ResourceNotFound("a://b"), -32002),
        (CapabilityError("x"), -32600),
        (MCPError("x"), -32603),
        (MCPError("x", code=-32042, data={"k": 1}), -32042),
    ],
)
def test_mcp_errors_carry_their_code(exc: MCPError, code: int) -> None:
    assert to_jsonrpc_error(exc)["code"] == code


def test_to_jsonrpc_error_hides_internals_unless_debug() -> None:
    boom = KeyError("secret")
    assert to_jsonrpc_error(boom) == {"code": -32603, "message": "Internal error"}
    assert "secret" in to_jsonrpc_error(boom, debug=True)["message"]


def test_data_is_only_present_when_given() -> None:
    assert "data" not in to_jsonrpc_error(InvalidParams("x"))
    assert to_jsonrpc_error(ResourceNotFound("u://x"))["data"] == {"uri": "u://x"}


def test_registration_error_lists_every_problem() -> None:
    exc = RegistrationError(["tool 'a': bad", "tool 'b': worse"])
    assert exc.problems == ["tool 'a': bad", "tool 'b': worse"]
    assert str(exc) == "2 registration errors:\n  - tool 'a': bad\n  - tool 'b': worse"
    assert isinstance(exc, errors.ConfigurationError)


def test_a_single_registration_problem_is_the_whole_message() -> None:
    assert str(RegistrationError(["tool 'a': bad"])) == "tool 'a': bad"


def test_timeouts_and_closed_connections_are_also_builtin_kinds() -> None:
    assert issubclass(PeerTimeout, TimeoutError)
    assert issubclass(ConnectionClosed, ConnectionError)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ToolError("not prime"), "not prime"),
        (PeerTimeout("the client did not answer"), "the client did not answer"),
        (ConnectionClosed("gone"), "gone"),
        (CapabilityError("no sampling"), "no sampling"),
        (RemoteError("user declined", code=-1), "user declined"),
    ],
)
def test_tool_error_text_shows_messages_meant_for_the_model(exc: Exception, expected: str) -> None:
    assert tool_error_text(exc, tool="t") == expected


def test_tool_error_text_hides_other_exceptions_unless_debug() -> None:
    try:
        raise ValueError("password=hunter2")
    except ValueError as exc:
        hidden = tool_error_text(exc, tool="t")
        shown = tool_error_text(exc, tool="t", debug=True)
    assert hidden == "Error executing tool 't': an internal error occurred"
    assert shown is not None and "hunter2" in shown and "Traceback" in shown


def test_deliberate_protocol_errors_are_not_tool_results() -> None:
    assert tool_error_text(InvalidParams("x"), tool="t") is None
    assert tool_error_text(ResourceNotFound("a://b"), tool="t") is None


# -- one home for every exception -------------------------------------------------------------

# Defined outside errors.py on purpose (errors.py's docstring says why).
_ELSEWHERE = {
    "mcpkit.server.stateless.inline.Restart",  # control flow (a BaseException), not an error
    "mcpkit.server.middleware._Unanswered",  # a CancelledError: the round ended unanswered
}


def _exception_classes_defined_in_src() -> dict[str, str]:
    """``module.Class`` → its base list, for every class in src/mcpkit whose bases name an
    exception (read from the source, so optional dependencies need not be installed)."""
    import ast
    from pathlib import Path

    root = Path(errors.__file__).parent
    found: dict[str, str] = {}
    for path in root.rglob("*.py"):
        if path.parts[len(root.parts)] == "cli":
            continue  # the command's errors end as an exit status (see errors.py)
        module = ".".join(("mcpkit", *path.relative_to(root).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = ", ".join(ast.unparse(b) for b in node.bases)
                if any(word in bases for word in ("Error", "Exception", "ConnectionClosed")):
                    found[f"{module}.{node.name}"] = bases
    return found


# Capability packages beside the core (docs/architecture.md, "Where new capabilities go")
# keep their own errors next to the code that raises them, so the core's errors module
# does not grow with every extension; each must still be an MCPKitError, so that one
# ``except MCPKitError`` catches everything mcpkit raises.
_CAPABILITY_PACKAGES = (
    "mcpkit.extensions.",
    "mcpkit.compose.",
    "mcpkit.observability.",
    "mcpkit.middleware.",
    "mcpkit.auth.server.",
)


def test_every_exception_is_defined_in_errors() -> None:
    outside = {
        name
        for name in _exception_classes_defined_in_src()
        if not name.startswith(("mcpkit.errors.", *_CAPABILITY_PACKAGES)) and name not in _ELSEWHERE
    }
    assert outside == set()


def test_a_capability_package_error_is_an_mcpkit_error() -> None:
    import importlib

    names = [n for n in _exception_classes_defined_in_src() if n.startswith(_CAPABILITY_PACKAGES)]
    assert names  # the extensions define some; the rule must be seen to apply
    for name in names:
        module, _, cls = name.rpartition(".")
        assert issubclass(getattr(importlib.import_module(module), cls), errors.MCPKitError), name


def test_every_exception_in_errors_is_an_mcpkit_error() -> None:
    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type):
            assert issubclass(value, errors.MCPKitError), name


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("mcpkit.server.signature", "SignatureError"),
        ("mcpkit.server.server_json", "ServerJsonError"),
        ("mcpkit.server.metadata", "ServerJsonError"),
        ("mcpkit.server.uri_template", "UriTemplateError"),
        ("mcpkit.server.stateless.input_required", "InputReplayMismatch"),
        ("mcpkit.client.transports.base", "SessionExpired"),
        ("mcpkit.client.transports.base", "Unreachable"),
        ("mcpkit.client.transports.base", "HTTPErrorStatus"),
        ("mcpkit.client.transports.base", "MessageTooLarge"),
        ("mcpkit.client.transports", "SessionExpired"),
        ("mcpkit.client.transports.stdio", "ServerExited"),
        ("mcpkit.client.transports.eventstream", "EventTooLarge"),
    ],
)
def test_moved_exceptions_keep_their_import_paths(module: str, name: str) -> None:
    import importlib

    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


def test_moved_exceptions_keep_their_builtin_kinds() -> None:
    assert issubclass(errors.UriTemplateError, ValueError)
    assert issubclass(errors.EventTooLarge, ValueError)
    assert issubclass(errors.ServerExited, ConnectionError)
    assert issubclass(errors.HTTPErrorStatus, errors.RemoteError)
    too_large = errors.MessageTooLarge("'s'", 1 << 20, "as a line")
    assert "1 MiB" in str(too_large)
    import copy

    assert str(copy.copy(too_large)) == str(too_large)
