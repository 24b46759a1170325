"""Dependencies inside mcpkit point one way, and the module-level import graph has no cycles.

The rule (``docs/architecture.md``): a module imports its own layer and the layers
below it, never one above; the server core and the client core are siblings that do
not know each other; agent adapters and the workflow engine build on the server and
register themselves with it, so the core never names them. This test reads the source
with :mod:`ast` (nothing is imported), so it runs in milliseconds and sees imports that
a given code path would not execute.

What counts:

- a *module-level* import is one that runs when the module is imported: at the top,
  in a class body, or under ``try``/``if`` at module level, but not under
  ``if TYPE_CHECKING:`` (never runs) and not inside a function (runs on call);
- ``from mcpkit.pkg import name`` points at ``mcpkit.pkg.name`` when that is a module
  of its own, otherwise at the package ``mcpkit.pkg`` (its ``__init__``); the parent
  packages Python also executes on the way are not counted (they are edges of their
  own, checked where they are written);
- a module named in a string (``"mcpkit.adapters.langchain"``, for ``import_module``)
  is a lazy import too; loggers' names and docstrings are not;
- a function-level (lazy) or by-name import, and a ``TYPE_CHECKING`` one, may point
  against the layer order only when it is in :data:`LAZY_ALLOWED` below, with the
  reason it is there.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "mcpkit"

# Lowest first. Each inner tuple is one layer; the names in it are *siblings*: a
# module may import its own group (the first part of its name below ``mcpkit``) and any
# group of a lower layer, never a sibling group of the same layer or a higher layer.
# ``errors`` and ``loops`` are tiny leaves that anything may use, as are the private
# helpers every package may need: ``_lazy`` (lazy exports) and ``_extras`` (a missing
# extra's error). The capability packages (docs/architecture.md, "Where new capabilities
# go") sit beside ``adapters`` and ``workflow``: they build on the server and client
# through their public seams (the Extension contract, middleware, the client session) and
# the core never names them. ``compose``, ``observability`` and ``middleware`` are listed
# before they exist, so the rule holds from their first module.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "loops", "stdio_process", "framing", "_version", "_lazy", "_extras", "_buckets"),
    ("protocol",),
    ("stores", "auth"),
    ("server", "client"),
    ("adapters", "workflow", "extensions", "compose", "observability", "middleware", "frameworks"),
    ("transports",),
    ("cli", "testing", "__main__"),
)

# Groups that count as one: the leaf modules may import each other, and ``python -m
# mcpkit`` is the CLI.
SAME_GROUP = {
    "errors": "leaf",
    "loops": "leaf",
    "stdio_process": "leaf",
    "framing": "leaf",
    "_version": "leaf",
    "_lazy": "leaf",
    "_extras": "leaf",
    "_buckets": "leaf",
    "__main__": "cli",
}

# Lazy (function-level or by-name) and TYPE_CHECKING imports that point against the
# layer order, each with its reason. Keep this short: an entry is a convenience for the
# user, never a way around a cycle. (importer, imported, kind of import): reason
LAZY_ALLOWED: dict[tuple[str, str, str], str] = {
    ("mcpkit.server.running", "mcpkit.transports.stdio", "function"): (
        "MCPServer.run_stdio()/serve_stdio() are conveniences over the stdio transport"
    ),
    ("mcpkit.server.running", "mcpkit.transports.serve", "function"): (
        "MCPServer.run_http()/run_sse() are conveniences over the embedded uvicorn"
    ),
    ("mcpkit.server.running", "mcpkit.transports.serve", "type"): (
        "run_http()/run_sse() take the embedded server's ServeOptions"
    ),
    ("mcpkit.server.running", "mcpkit.transports.streamable_http", "function"): (
        "MCPServer.http_app() is a convenience that builds the Streamable HTTP ASGI app"
    ),
    ("mcpkit.server.running", "mcpkit.transports.sse_legacy", "function"): (
        "MCPServer.sse_app() is a convenience that builds the legacy HTTP+SSE ASGI app"
    ),
    ("mcpkit.server.running", "mcpkit.transports.asgi", "type"): (
        "http_app()/sse_app() return the ASGI app type"
    ),
    ("mcpkit.server.running", "mcpkit.transports.stdio", "type"): (
        "server.stdio_transport is the StdioConnection serving it"
    ),
    ("mcpkit.server.running", "mcpkit.transports.sse_legacy", "type"): (
        "server.sse_transport is the SSEApp serving it"
    ),
    ("mcpkit.server.running", "mcpkit.transports.streamable_http", "type"): (
        "server.streamable_http_transport is the StreamableHTTPApp serving it"
    ),
    ("mcpkit.server.running", "mcpkit.transports.http_routes", "function"): (
        "MCPServer.custom_route() declares an extra route of the HTTP apps"
    ),
    ("mcpkit.server.running", "mcpkit.transports.http_routes", "type"): (
        "custom_route() takes and keeps the HTTP apps' route handler and Route types"
    ),
    # The agents and workflows of MCPServer(agents=..., workflows=...) become tools built
    # beside their adapters and engine; the core imports the builder on first use, so
    # that the option works with no import by the user.
    ("mcpkit.server.registration", "mcpkit.adapters.agents", "function"): (
        "MCPServer(agents=...) builds ask_* tools with mcpkit.adapters.agents"
    ),
    ("mcpkit.server.registration", "mcpkit.workflow.tool", "function"): (
        "MCPServer(workflows=...) builds run_* tools with mcpkit.workflow.tool"
    ),
    # server.mount(other, namespace=...) is the method users look for; the link itself
    # lives in compose/ and is imported only when a server is mounted.
    ("mcpkit.server.server", "mcpkit.compose.mount", "function"): (
        "MCPServer.mount() is a convenience over mcpkit.compose.mount"
    ),
    ("mcpkit.server.server", "mcpkit.compose.mount", "type"): (
        "MCPServer.mount() returns the compose Mount it made"
    ),
    # MCPServer.proxy(target) likewise: the proxy lives in compose/, imported when called.
    ("mcpkit.server.sources", "mcpkit.compose.proxy", "function"): (
        "MCPServer.proxy() is a convenience over mcpkit.compose.proxy"
    ),
    ("mcpkit.server.sources", "mcpkit.compose.proxy", "type"): (
        "MCPServer.proxy() takes the compose ProxyTarget"
    ),
    # Telemetry on by itself once OpenTelemetry is configured (issue 19): the core names
    # the observability module only when opentelemetry is already imported.
    ("mcpkit.protocol.observe", "mcpkit.observability.auto", "by-name"): (
        "servers and clients trace themselves when the application configured OpenTelemetry"
    ),
    ("mcpkit.protocol.observe", "mcpkit.observability.auto", "function"): (
        "the same import_module call, seen as a function-level import"
    ),
    ("mcpkit.observability.prometheus", "mcpkit.transports.http_routes", "function"): (
        "serve_metrics() answers its custom route with the HTTP layer's HTTPResponse"
    ),
    ("mcpkit.observability.prometheus", "mcpkit.transports.http_routes", "type"): (
        "serve_metrics()'s route handler takes an HTTPRequest"
    ),
    # MCPServer.from_config(path) likewise: the gateway lives in compose/.
    ("mcpkit.server.sources", "mcpkit.compose.gateway", "function"): (
        "MCPServer.from_config() is a convenience over mcpkit.compose.gateway"
    ),
    # MCPServer.from_openapi / from_fastapi likewise: built by compose/openapi when called.
    ("mcpkit.server.sources", "mcpkit.compose.openapi", "function"): (
        "MCPServer.from_openapi() and from_fastapi() are conveniences over mcpkit.compose.openapi"
    ),
}


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    kind: str  # "module", "function", "by-name" (a module's name in a string) or "type"

    def __str__(self) -> str:
        return f"{self.importer} -> {self.imported} (line {self.line}, {self.kind})"

    @property
    def allowed(self) -> bool:
        return (self.importer, self.imported, self.kind) in LAZY_ALLOWED


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _all_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, modules: dict[str, Path]) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.modules = modules
        self.kind = "module"
        self.edges: list[Edge] = []

    def _add(self, target: str, line: int) -> None:
        if target == PACKAGE or target.startswith(PACKAGE + "."):
            if target not in self.modules:
                # A name imported from a module resolves to the module itself.
                while target not in self.modules and "." in target:
                    target = target.rpartition(".")[0]
            edge = Edge(self.module, target, line, self.kind)
            if target != self.module and edge not in self.edges:
                self.edges.append(edge)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name == "getLogger":  # a logger's name is not an import
            return
        if name == "import_module" and node.args:  # import_module("mcpkit.x") imports it now
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self._add(arg.value, node.lineno)
        self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            self.generic_visit(node)  # docstrings name modules without importing them

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        # ``KEY: Final = "mcpkit.auth"`` names an ASGI scope key, not a module to import.
        target = node.target
        if isinstance(target, ast.Name) and target.id.endswith("_SCOPE_KEY"):
            return
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # "mcpkit.x" as a string is a module imported by name later (import_module(name)).
        if isinstance(node.value, str) and node.value in self.modules and "." in node.value:
            outer = self.kind
            self.kind = "type" if outer == "type" else "by-name"
            self._add(node.value, node.lineno)
            self.kind = outer

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            if node.level > 1:
                base = base[: -(node.level - 1)]
            base_name = ".".join(base + ([node.module] if node.module else []))
        else:
            base_name = node.module or ""
        for alias in node.names:
            sub = f"{base_name}.{alias.name}"
            self._add(sub if sub in self.modules else base_name, node.lineno)

    def _nested(self, node: ast.AST, kind: str) -> None:
        outer = self.kind
        # A type-only import stays type-only even inside a function.
        self.kind = outer if outer == "type" else kind
        self.generic_visit(node)
        self.kind = outer

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._nested(node, "function")

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._nested(node, "function")

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._nested(node, "function")

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.body:
                self._visit_type_only(child)
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def _visit_type_only(self, node: ast.stmt) -> None:
        outer = self.kind
        self.kind = "type"
        self.visit(node)
        self.kind = outer


def collect_edges() -> list[Edge]:
    modules = _all_modules()
    edges: list[Edge] = []
    for name, path in modules.items():
        collector = _Collector(name, path.name == "__init__.py", modules)
        collector.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        edges.extend(collector.edges)
    return edges


def _group(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _rank(group: str) -> int:
    for rank, layer in enumerate(LAYERS):
        if group in layer:
            return rank
    raise AssertionError(
        f"mcpkit.{group} is in no layer: add it to LAYERS in tests/test_layers.py "
        "(and to the layer table of docs/architecture.md)"
    )


def against_order(edge: Edge) -> bool:
    """Whether ``edge`` points up the layers or across to a sibling group."""
    src, dst = _group(edge.importer), _group(edge.imported)
    if src == "":  # the top package's __init__ curates the public API: anything goes
        return False
    if dst == "":  # the public API sits above everything but the top layer (the CLI's --version)
        return _rank(src) != len(LAYERS) - 1
    if SAME_GROUP.get(src, src) == SAME_GROUP.get(dst, dst):
        return False
    return _rank(dst) >= _rank(src)


def find_cycle(edges: list[Edge]) -> list[Edge] | None:
    """One cycle of ``edges`` (as the edges that close it), or None."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.importer, []).append(edge)
    white, grey, black = 0, 1, 2
    color: dict[str, int] = {}
    path: list[Edge] = []

    def visit(node: str) -> list[Edge] | None:
        color[node] = grey
        for edge in graph.get(node, []):
            state = color.get(edge.imported, white)
            if state == grey:
                start = next(
                    (i for i, e in enumerate(path) if e.importer == edge.imported), len(path)
                )
                return [*path[start:], edge]
            if state == white:
                path.append(edge)
                found = visit(edge.imported)
                if found:
                    return found
                path.pop()
        color[node] = black
        return None

    for node in sorted(graph):
        if color.get(node, white) == white:
            found = visit(node)
            if found:
                return found
    return None


EDGES = collect_edges()


def test_the_walk_sees_the_package() -> None:
    """A sanity check, so that an empty or blind walk cannot pass the other tests."""
    assert len(_all_modules()) > 50
    seen = {(e.importer, e.imported, e.kind) for e in EDGES}
    assert ("mcpkit.server.server", "mcpkit.server.tools", "module") in seen  # from .x import
    assert ("mcpkit.server.running", "mcpkit.transports.stdio", "function") in seen
    assert ("mcpkit.client.session", "mcpkit.client.handlers", "module") in seen
    assert ("mcpkit.server.session", "mcpkit.server.server", "type") in seen


def test_every_group_has_a_layer() -> None:
    groups = {_group(m) for m in _all_modules()} - {""}
    for group in sorted(groups):
        _rank(group)


LAZY = ("function", "by-name")


def test_module_level_imports_have_no_cycle() -> None:
    cycle = find_cycle([e for e in EDGES if e.kind == "module"])
    assert cycle is None, "import cycle at module level:\n  " + "\n  ".join(map(str, cycle or []))


def test_runtime_imports_have_no_cycle() -> None:
    """Lazy imports included: only the allowed conveniences may close a loop."""
    edges = [e for e in EDGES if e.kind in ("module", *LAZY) and not e.allowed]
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle:\n  " + "\n  ".join(map(str, cycle or []))


def test_module_level_imports_follow_the_layers() -> None:
    bad = [e for e in EDGES if e.kind == "module" and against_order(e)]
    assert not bad, "module-level imports against the layer order:\n  " + "\n  ".join(map(str, bad))


def test_lazy_and_type_imports_against_the_layers_are_listed() -> None:
    bad = [e for e in EDGES if e.kind != "module" and against_order(e) and not e.allowed]
    assert not bad, (
        "lazy or TYPE_CHECKING imports against the layer order (move the code, or add the "
        "pair to LAZY_ALLOWED with its reason):\n  " + "\n  ".join(map(str, bad))
    )


def test_the_allow_list_has_no_stale_entries() -> None:
    used = {(e.importer, e.imported, e.kind) for e in EDGES if against_order(e)}
    stale = sorted(set(LAZY_ALLOWED) - used)
    assert not stale, f"LAZY_ALLOWED entries no import needs any more: {stale}"


# TYPE_CHECKING imports that close a loop inside one package: a part annotates the object
# that owns it (a session's helpers name the session, the server's parts name MCPServer).
# They cost nothing at run time, but they are the coupling the one protocol engine of
# issue 11 removes (the parts will see a small protocol, not their owner). The list may
# only shrink: a new loop, even a type-only one, fails below.
TYPE_BACK_REFERENCES: dict[tuple[str, str], str] = {
    ("mcpkit.server.context", "mcpkit.server.session"): "Context.session",
    ("mcpkit.server.client_requests", "mcpkit.server.session"): (
        "Context.session (the client-requests mixin)"
    ),
    ("mcpkit.server.state", "mcpkit.server.context"): "ctx.state's scope is read from its Context",
    ("mcpkit.server.state", "mcpkit.server.server"): "ctx.state's options are kept per server",
    ("mcpkit.server.state", "mcpkit.server.session"): "sessions without an id are named here",
    (
        "mcpkit.server.stateless.input_required",
        "mcpkit.server.session",
    ): "input rounds run on a session",
    ("mcpkit.server.stateless.dispatch", "mcpkit.server.session"): "2026 requests run on a session",
    (
        "mcpkit.server.stateless.inline",
        "mcpkit.server.session",
    ): "a plain tool runs inline on a session",
    ("mcpkit.server.session", "mcpkit.server.server"): "ServerSession.server",
    ("mcpkit.server.outbound", "mcpkit.server.server"): "ServerSession.server (the outbound mixin)",
    ("mcpkit.server.request", "mcpkit.server.session"): "Request.session",
    (
        "mcpkit.server.stateless.listen",
        "mcpkit.server.session",
    ): "a listener forwards a session's notices",
    (
        "mcpkit.server.stateless.listen",
        "mcpkit.server.server",
    ): "open listeners are kept per server",
    ("mcpkit.server.declarative", "mcpkit.server.server"): "collect() fills a server",
    ("mcpkit.server.registration", "mcpkit.server.server"): "register_given() fills a server",
    ("mcpkit.server.visibility", "mcpkit.server.request"): "a caller's rules, from its request",
    ("mcpkit.server.visibility", "mcpkit.server.session"): "a session's own rules",
    ("mcpkit.server.visibility", "mcpkit.server.server"): "the server whose components it hides",
    ("mcpkit.server.prompts", "mcpkit.server.server"): "PromptManager's server",
    ("mcpkit.server.resources", "mcpkit.server.server"): "ResourceManager's server",
    ("mcpkit.server.tool_manager", "mcpkit.server.server"): "ToolManager's server",
    ("mcpkit.server.sources", "mcpkit.server.server"): "MCPServer.proxy() makes a server",
    ("mcpkit.server.scopes", "mcpkit.server.server"): "scopes are looked up on a server",
    ("mcpkit.client.handlers", "mcpkit.client.session"): "ServerHandlers' session",
    ("mcpkit.transports.cluster", "mcpkit.transports.streamable_http"): (
        "a cluster node serves one Streamable HTTP app"
    ),
    ("mcpkit.transports.http_request_streams", "mcpkit.transports.cluster"): (
        "a session's streams reach its app's cluster node"
    ),
    ("mcpkit.client.stateless.listen", "mcpkit.client.session"): "Listener's session",
    (
        "mcpkit.client.stateless.discover",
        "mcpkit.client.session",
    ): "the era probe runs on a session",
    (
        "mcpkit.client.stateless.input_required",
        "mcpkit.client.session",
    ): "input rounds run on a session",
    ("mcpkit.server.middleware", "mcpkit.server.server"): (
        "MiddlewareContext.server: the server a request reached"
    ),
    ("mcpkit.server.middleware", "mcpkit.server.session"): (
        "MiddlewareContext.session and method handlers take the ServerSession"
    ),
    ("mcpkit.server.lifespan", "mcpkit.server.server"): (
        "the lifespan factory is called with the server it belongs to"
    ),
    ("mcpkit.client.session_api", "mcpkit.client.session"): (
        "SessionAPI's methods are typed for the ClientSession (or Client) they run on"
    ),
    ("mcpkit.client.results", "mcpkit.client.session"): (
        "a result-type handler gets the session its result came on"
    ),
}


def test_no_other_type_only_cycle() -> None:
    edges = [
        e
        for e in EDGES
        if not e.allowed
        and not (e.kind == "type" and (e.importer, e.imported) in TYPE_BACK_REFERENCES)
    ]
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle (TYPE_CHECKING imports included):\n  " + "\n  ".join(
        map(str, cycle or [])
    )


def test_type_back_references_are_still_needed() -> None:
    used = {(e.importer, e.imported) for e in EDGES if e.kind == "type"}
    stale = sorted(set(TYPE_BACK_REFERENCES) - used)
    assert not stale, f"TYPE_BACK_REFERENCES entries no import needs any more: {stale}"
