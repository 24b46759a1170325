"""The curated public surface: pinned exports, a cheap and side-effect-free import."""

from __future__ import annotations

import importlib
import importlib.util
import json
import pkgutil
import subprocess
import sys
import textwrap

import pytest

import mcpkit
from mcpkit.errors import MissingExtra

EXPECTED_ALL = [
    "AgentResponse",
    "Audio",
    "CacheHint",
    "CacheOptions",
    "CallNext",
    "CapabilityError",
    "Client",
    "ClientSession",
    "ConfigurationError",
    "ConnectionClosed",
    "Context",
    "Depends",
    "ElicitResult",
    "ElicitationValidationError",
    "EmbeddedResource",
    "Extension",
    "Forbidden",
    "Image",
    "InputRoundOptions",
    "InputRoundStore",
    "InvalidParams",
    "LifespanError",
    "MCPClient",
    "MCPError",
    "MCPKitError",
    "MCPServer",
    "McpHeader",
    "MemoryInputRoundStore",
    "Middleware",
    "MiddlewareContext",
    "MCPServerPrompts",
    "MCPServerResources",
    "Package",
    "PeerTimeout",
    "PromptArg",
    "PromptMessage",
    "RegistrationError",
    "Remote",
    "RemoteError",
    "Repository",
    "ResourceLink",
    "ResourceNotFound",
    "Root",
    "ServerJsonError",
    "ServerLimits",
    "ServerMetadata",
    "Step",
    "StepContext",
    "Text",
    "ToolAnnotations",
    "ToolCallError",
    "ToolDefinition",
    "ToolError",
    "ToolParam",
    "ToolResult",
    "URLElicitation",
    "URLElicitationRequiredError",
    "UriTemplate",
    "Workflow",
    "__version__",
    "as_agent",
    "create_tool",
    "current_context",
    "mcp_complete",
    "mcp_prompt",
    "mcp_resource",
    "mcp_tool",
    "step",
]


def test_all_is_pinned() -> None:
    assert sorted(mcpkit.__all__) == sorted(EXPECTED_ALL)


def test_every_export_resolves() -> None:
    for name in mcpkit.__all__:
        assert getattr(mcpkit, name) is not None, name
    assert dir(mcpkit) == mcpkit.__all__


def test_version_is_the_installed_distributions() -> None:
    import importlib.metadata

    assert mcpkit.__version__ == importlib.metadata.version("mcpkit")


def test_unknown_attribute_raises_attribute_error() -> None:
    try:
        mcpkit.DoesNotExist  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "DoesNotExist" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_exceptions_form_one_hierarchy() -> None:
    for name in mcpkit.__all__:
        value = getattr(mcpkit, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert issubclass(value, mcpkit.MCPKitError), name


HEAVY = [
    "pydantic",
    "orjson",
    "uvicorn",
    "httpx",
    "starlette",
    "anyio",
    "jsonschema",
    "mcp",
    "redis",
    # and every other optional dependency (pyproject's extras)
    "joserfc",
    "cryptography",
    "pydantic_ai",
    "langchain_core",
    "uvloop",
]


def _run(code: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_import_is_light_and_has_no_side_effects() -> None:
    result = _run(
        f"""
        import json, logging, sys, threading
        before_threads = threading.active_count()
        before_handlers = list(logging.getLogger().handlers)
        import mcpkit
        print(json.dumps({{
            "heavy": [m for m in {HEAVY!r} if m in sys.modules],
            "threads": threading.active_count() - before_threads,
            "handlers": len(logging.getLogger().handlers) - len(before_handlers),
            "mcpkit_modules": sorted(m for m in sys.modules if m.startswith("mcpkit")),
        }}))
        """
    )
    assert result["heavy"] == []
    assert result["threads"] == 0
    assert result["handlers"] == 0
    # The lazy-export helper is the one module ``import mcpkit`` loads besides itself.
    assert result["mcpkit_modules"] == ["mcpkit", "mcpkit._lazy"]


def _modules() -> list[str]:
    """Every module and package of mcpkit but ``__main__`` (importing it runs the CLI)."""
    found = ["mcpkit"]
    for info in pkgutil.walk_packages(mcpkit.__path__, "mcpkit.", onerror=_raise):
        if info.name.rpartition(".")[2] != "__main__":
            found.append(info.name)
    return found


def _raise(name: str) -> None:
    raise AssertionError(f"cannot walk {name}")


MODULES = _modules()


def _only_a_missing_extra(exc: MissingExtra, where: str) -> None:
    """A name may stay unresolved only when its extra is really not installed."""
    assert importlib.util.find_spec(exc.package) is None, (
        f"{where} raised MissingExtra for {exc.package}, which is installed: {exc}"
    )


def test_the_walk_sees_every_package() -> None:
    assert len(MODULES) > 100
    for package in ("mcpkit.client", "mcpkit.auth", "mcpkit.auth.client", "mcpkit.stores"):
        assert package in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_every_name_in_all_resolves(name: str) -> None:
    """Each module's ``__all__`` names what it has, lazy exports included; the only
    failure allowed is a MissingExtra for a package that is not installed."""
    try:
        module = importlib.import_module(name)
    except MissingExtra as exc:
        _only_a_missing_extra(exc, name)
        return
    public = getattr(module, "__all__", None)
    if public is None:  # nothing curated (a package that is only a docstring)
        return
    assert len(set(public)) == len(public), f"{name}.__all__ repeats a name"
    for attr in public:
        try:
            value = getattr(module, attr)
        except MissingExtra as exc:
            _only_a_missing_extra(exc, f"{name}.{attr}")
            continue
        assert value is not None or attr.isupper(), f"{name}.{attr} is None"
    if callable(module.__dict__.get("__dir__")):  # a lazy package lists its public names
        assert dir(module) == sorted(public)


def test_importtime_shows_no_heavy_module() -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import mcpkit"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in out.stderr.splitlines()
        if "|" in line
    }
    assert not imported & set(HEAVY)


def test_names_load_on_first_use() -> None:
    result = _run(
        """
        import json, sys
        import mcpkit
        mcpkit.ToolError
        light = "pydantic" not in sys.modules
        mcpkit.MCPServer
        print(json.dumps({"errors_only_light": light, "server_loaded": "mcpkit.server.server" in sys.modules}))
        """
    )
    assert result == {"errors_only_light": True, "server_loaded": True}
