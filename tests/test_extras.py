"""Each extra, hidden: the modules that need it fail at import with one message naming it.

The dependency is hidden the way a plain ``pip install mcpkit`` leaves it: ``import``
of it (and of its submodules) fails, while the rest of mcpkit is already loaded. The
mcpkit module under test is then imported afresh. ``GUARDED`` has one row per module
that needs an extra, and a test keeps it in step with the source.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import pickle
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import mcpkit.auth
from mcpkit import Client
from mcpkit._extras import EXTRAS, require_extra
from mcpkit.client.config import load_config
from mcpkit.errors import ConfigurationError, MissingExtra

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "mcpkit"

Hide = Callable[..., None]


@pytest.fixture
def hide(monkeypatch: pytest.MonkeyPatch) -> Hide:
    """``hide("redis")``: importing redis (or redis.anything) fails until the test ends."""

    def hide(*packages: str) -> None:
        for package in packages:
            for name in [m for m in sys.modules if m == package or m.startswith(package + ".")]:
                monkeypatch.setitem(sys.modules, name, None)
            monkeypatch.setitem(sys.modules, package, None)  # None: "import halted"

    return hide


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], object]:
    """Import a module anew (the loaded one is put back when the test ends)."""

    def fresh(name: str) -> object:
        monkeypatch.delitem(sys.modules, name, raising=False)
        return importlib.import_module(name)

    return fresh


def _message(feature: str, package: str, extra: str) -> str:
    return f"{feature} needs {package}, which is not installed: pip install 'mcpkit[{extra}]'"


# module, extra, the package hidden, the whole message.
GUARDED: list[tuple[str, str, str, str]] = [
    (
        "mcpkit.transports.serve",
        "http",
        "uvicorn",
        "serving over HTTP (mcpkit.transports.serve) needs uvicorn, which is not installed: "
        "pip install 'mcpkit[http]'",
    ),
    (
        "mcpkit.client.transports.streamable_http",
        "client",
        "httpx",
        "the Streamable HTTP client transport (mcpkit.client.transports.streamable_http) "
        "needs httpx, which is not installed: pip install 'mcpkit[client]'",
    ),
    (
        "mcpkit.client.transports.sse",
        "client",
        "httpx",
        "the legacy HTTP+SSE client transport (mcpkit.client.transports.sse) needs httpx, "
        "which is not installed: pip install 'mcpkit[client]'",
    ),
    (
        "mcpkit.client.transports.http_responses",
        "client",
        "httpx",
        "the HTTP client transports (mcpkit.client.transports.http_responses) needs httpx, "
        "which is not installed: pip install 'mcpkit[client]'",
    ),
    (
        "mcpkit.client.transports.http11",
        "client",
        "httpx",
        "the lean HTTP/1.1 client (mcpkit.client.transports.http11) needs httpx, "
        "which is not installed: pip install 'mcpkit[client]'",
    ),
    (
        "mcpkit.client.transports.http11_codecs",
        "client",
        "h11",
        "the lean HTTP/1.1 client (mcpkit.client.transports.http11) needs h11, "
        "which is not installed: pip install 'mcpkit[client]'",
    ),
    (
        "mcpkit.auth.jwt",
        "auth",
        "joserfc",
        "JWT access token verification (mcpkit.auth.jwt) needs joserfc, which is not "
        "installed: pip install 'mcpkit[auth]'",
    ),
    (
        "mcpkit.auth.introspection",
        "auth",
        "httpx",
        "token introspection (mcpkit.auth.introspection) needs httpx, which is not "
        "installed: pip install 'mcpkit[auth]'",
    ),
    (
        "mcpkit.auth.endpoints",
        "auth",
        "httpx",
        "the token verifiers' HTTP calls (mcpkit.auth.endpoints) needs httpx, which is not "
        "installed: pip install 'mcpkit[auth]'",
    ),
    *(
        (
            f"mcpkit.auth.client.{name}",
            "auth",
            package,
            f"the OAuth client (mcpkit.auth.client.{name}) needs {package}, which is not "
            "installed: pip install 'mcpkit[auth]'",
        )
        for name, package in (
            ("assertions", "joserfc"),
            ("authorizers", "httpx"),
            ("discovery", "httpx"),
            ("dpop", "joserfc"),
            ("exchange", "httpx"),
            ("grants", "httpx"),
            ("grants_ext", "httpx"),
            ("hooks", "httpx"),
            ("machine", "httpx"),
            ("oauth", "httpx"),
            ("registration", "httpx"),
            ("token_endpoint", "httpx"),
        )
    ),
    (
        "mcpkit.auth.server.signing",
        "auth",
        "joserfc",
        "the MCP authorization server's tokens (mcpkit.auth.server.signing) needs joserfc, "
        "which is not installed: pip install 'mcpkit[auth]'",
    ),
    *(
        (
            f"mcpkit.auth.server.presets.{name}",
            "auth",
            "httpx",
            "identity provider support (mcpkit.auth.server.presets) needs httpx, which is "
            "not installed: pip install 'mcpkit[auth]'",
        )
        for name in ("oidc", "github")
    ),
    (
        "mcpkit.auth.server.client_documents",
        "auth",
        "httpx",
        "the authorization server's client metadata documents needs httpx, which is not "
        "installed: pip install 'mcpkit[auth]'",
    ),
    (
        "mcpkit.auth.server.encryption",
        "auth",
        "cryptography",
        "the authorization server's encryption at rest needs cryptography, which is not "
        "installed: pip install 'mcpkit[auth]'",
    ),
    (
        "mcpkit.auth.server.redis_storage",
        "redis",
        "redis",
        "the authorization server's Redis storage needs redis, which is not installed: "
        "pip install 'mcpkit[redis]'",
    ),
    (
        "mcpkit.stores.redis",
        "redis",
        "redis",
        "the Redis store (mcpkit.stores.redis) needs redis, which is not installed: "
        "pip install 'mcpkit[redis]'",
    ),
    (
        "mcpkit.middleware.redis",
        "redis",
        "redis",
        "the built-in middleware on Redis (mcpkit.middleware.redis) needs redis, which is not "
        "installed: pip install 'mcpkit[redis]'",
    ),
    (
        "mcpkit.stores.redis_bus",
        "redis",
        "redis",
        "the Redis message bus (mcpkit.stores.redis_bus) needs redis, which is not installed: "
        "pip install 'mcpkit[redis]'",
    ),
    (
        "mcpkit.stores.redis_connection",
        "redis",
        "redis",
        "the Redis store's connections (mcpkit.stores.redis_connection) needs redis, which is "
        "not installed: pip install 'mcpkit[redis]'",
    ),
    (
        "mcpkit.extensions.tasks.redis",
        "redis",
        "redis",
        "the Redis task store (mcpkit.extensions.tasks.redis) needs redis, which is not "
        "installed: pip install 'mcpkit[redis]'",
    ),
    (
        "mcpkit.extensions.tasks.queue",
        "tasks-queue",
        "docket",
        "the tasks job queue (mcpkit.extensions.tasks.queue) needs docket, which is not "
        "installed: pip install 'mcpkit[tasks-queue]'",
    ),
    (
        "mcpkit.adapters.pydantic_ai",
        "pydantic-ai",
        "pydantic_ai",
        "the pydantic-ai adapter (mcpkit.adapters.pydantic_ai) needs pydantic_ai, which is "
        "not installed: pip install 'mcpkit[pydantic-ai]'",
    ),
    (
        "mcpkit.frameworks.pydantic_ai",
        "pydantic-ai",
        "pydantic_ai",
        "the pydantic-ai toolset (mcpkit.frameworks.pydantic_ai) needs pydantic_ai, which is "
        "not installed: pip install 'mcpkit[pydantic-ai]'",
    ),
    (
        "mcpkit.frameworks.langchain",
        "langchain",
        "langchain_core",
        "the LangChain tools (mcpkit.frameworks.langchain) needs langchain_core, which is "
        "not installed: pip install 'mcpkit[langchain]'",
    ),
    *(
        (
            f"mcpkit.observability.{name}",
            "otel",
            "opentelemetry",
            f"OpenTelemetry tracing (mcpkit.observability.{name}) needs opentelemetry, which "
            "is not installed: pip install 'mcpkit[otel]'",
        )
        for name in ("auto", "conventions", "exchanges", "otel", "propagation")
    ),
    (
        "mcpkit.observability.prometheus",
        "prometheus",
        "prometheus_client",
        "the Prometheus endpoint (mcpkit.observability.prometheus) needs prometheus_client, "
        "which is not installed: pip install 'mcpkit[prometheus]'",
    ),
    *(
        (
            f"mcpkit.compose.openapi.{name}",
            "openapi",
            package,
            f"OpenAPI import (mcpkit.compose.openapi.{name}) needs {package}, which is not "
            "installed: pip install 'mcpkit[openapi]'",
        )
        for name, package in (("parse", "openapi_pydantic"), ("call", "httpx"), ("build", "httpx"))
    ),
]


@pytest.mark.parametrize(
    ("module", "extra", "package", "message"), GUARDED, ids=[row[0] for row in GUARDED]
)
def test_a_module_needing_an_extra_names_it_at_import(
    hide: Hide, fresh: Callable[[str], object], module: str, extra: str, package: str, message: str
) -> None:
    hide(package)
    with pytest.raises(MissingExtra) as caught:
        fresh(module)
    error = caught.value
    assert str(error) == message
    assert (error.extra, error.package, error.name) == (extra, package, package)
    assert error.__cause__ is None and error.__suppress_context__  # no importlib traceback
    # Whoever caught the ImportError or the ConfigurationError before still catches it.
    assert isinstance(error, ModuleNotFoundError) and isinstance(error, ConfigurationError)


def _guarded_modules() -> set[str]:
    """The modules whose top level has ``with require_extra(...)``."""
    found = set()
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.With) and "require_extra(" in ast.unparse(node.items[0]):
                parts = path.relative_to(SRC.parent).with_suffix("").parts
                found.add(".".join(parts))
    return found


def test_every_guarded_module_has_its_row() -> None:
    assert _guarded_modules() == {row[0] for row in GUARDED}


def _runs_at_import(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of ``body`` that run when the module is imported, nested ones too,
    except those in ``if TYPE_CHECKING:`` and in a ``require_extra`` block."""
    for node in body:
        if isinstance(node, ast.If):
            if ast.unparse(node.test).endswith("TYPE_CHECKING"):
                yield from _runs_at_import(node.orelse)
                continue
            yield from _runs_at_import(node.body + node.orelse)
        elif isinstance(node, ast.With):
            if "require_extra(" not in ast.unparse(node.items[0]):
                yield from _runs_at_import(node.body)
        elif isinstance(node, ast.Try):
            handlers = [stmt for handler in node.handlers for stmt in handler.body]
            yield from _runs_at_import(node.body + handlers + node.orelse + node.finalbody)
        else:
            yield node


def test_no_module_imports_an_optional_package_unguarded() -> None:
    """An import of an extra's package that runs at import time sits in ``require_extra``
    (imports inside functions run on use, where the module is loaded already)."""
    optional = {name for names in EXTRAS.values() for name in names}
    bare = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _runs_at_import(tree.body):
            if isinstance(node, ast.Import):
                roots = {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = {(node.module or "").partition(".")[0]}
            else:
                continue
            if roots & optional:
                bare.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert bare == []


# -- through the public ways in ----------------------------------------------------------


async def test_a_client_for_a_url_without_httpx_names_the_client_extra(
    hide: Hide, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide("httpx")
    for name in ("streamable_http", "sse", "http_responses", "http11"):
        monkeypatch.delitem(sys.modules, f"mcpkit.client.transports.{name}", raising=False)
    with pytest.raises(MissingExtra, match=re.escape("pip install 'mcpkit[client]'")) as caught:
        async with Client(url="http://127.0.0.1:1/mcp"):
            pass
    assert "(mcpkit.client.transports.streamable_http) needs httpx" in str(caught.value)


def test_a_lazy_export_needing_an_extra_raises_missing_extra(
    hide: Hide, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide("joserfc")
    monkeypatch.delitem(sys.modules, "mcpkit.auth.jwt", raising=False)
    monkeypatch.delitem(vars(mcpkit.auth), "JWTVerifier", raising=False)  # cached by an earlier use
    with pytest.raises(MissingExtra) as caught:
        mcpkit.auth.JWTVerifier  # noqa: B018
    assert str(caught.value) == _message(
        "JWT access token verification (mcpkit.auth.jwt)", "joserfc", "auth"
    )


def test_a_configuration_with_auth_without_httpx_names_the_auth_extra(hide: Hide) -> None:
    hide("httpx")
    with pytest.raises(ConfigurationError) as caught:
        load_config({"mcpServers": {"docs": {"url": "https://example.com/mcp", "auth": "oauth"}}})
    assert str(caught.value) == (
        "invalid MCP server configuration in the configuration:\n"
        "  - server 'docs': 'auth' needs httpx, which is not installed: "
        "pip install 'mcpkit[auth]'"
    )


def test_the_langchain_adapter_needs_no_extra() -> None:
    """It recognises runnables by their methods and imports nothing of LangChain. (In a
    process of its own: importing it registers its adapter with the server core.)"""
    script = (
        "import sys\n"
        "sys.modules['langchain_core'] = sys.modules['langchain'] = None\n"
        "from mcpkit.adapters.langchain import RunnableAgent\n"
        "print(RunnableAgent.__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "RunnableAgent\n", "")


# -- the helper itself ---------------------------------------------------------------------


def test_another_missing_module_passes_through_unchanged() -> None:
    """Only a package of the named extra is translated: a typo or a bug stays visible."""
    with pytest.raises(ModuleNotFoundError) as caught:
        with require_extra("redis", feature="the Redis store"):
            import mcpkit_no_such_module  # type: ignore[import-not-found]  # noqa: F401
    assert not isinstance(caught.value, MissingExtra)
    assert caught.value.name == "mcpkit_no_such_module"


def test_a_broken_install_is_not_reported_as_missing() -> None:
    """An ImportError that is not "no such module" (a name gone from a version) passes."""
    with pytest.raises(ImportError) as caught:
        with require_extra("redis", feature="the Redis store"):
            from redis import no_such_name  # type: ignore[attr-defined]  # noqa: F401
    assert not isinstance(caught.value, MissingExtra)


def test_an_unknown_extra_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown extra 'redis-cluster'"):
        require_extra("redis-cluster", feature="x")


def test_the_extras_are_pyprojects_and_bring_their_packages() -> None:
    """Each extra named here exists in pyproject.toml and lists the distribution that
    provides each of its import names."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    providers = importlib.metadata.packages_distributions()
    for extra, packages in EXTRAS.items():
        assert extra in declared, extra
        requirements = {_distribution(req) for req in declared[extra]}
        for package in packages:
            assert {_normal(d) for d in providers[package]} & requirements, (extra, package)


def _distribution(requirement: str) -> str:
    return _normal(re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0])


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_missing_extra_pickles_whole() -> None:
    error = MissingExtra("the Redis store", "redis", "redis")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is MissingExtra
    assert str(copy) == str(error) == _message("the Redis store", "redis", "redis")
    assert (copy.feature, copy.extra, copy.package, copy.name) == (
        "the Redis store",
        "redis",
        "redis",
        "redis",
    )
