"""No module reads or sets an underscored attribute of an object it does not own.

Rule 2 of the capability rules (CAPABILITIES.md, issue 25): a module reaches the
state of another module's objects through their public hooks (``server.add_session``,
``session.is_running(request_id)``, ``app.sessions``, ...), never through ``x._name``.
This test reads the source with :mod:`ast` (nothing is imported), like
``tests/test_layers.py``, so it runs in milliseconds.

What counts as a reach-in: an attribute ``x._name`` (read, written or deleted; not a
dunder) where ``x`` is anything but ``self`` or ``cls`` (``self._a._b`` is one: ``_b``
belongs to the object in ``self._a``), and ``getattr``/``setattr``/``hasattr``/
``delattr`` with a constant underscored name. Two levels:

- **Strict** (:data:`STRICT_MODULES`, :data:`STRICT_PACKAGES`: the cluster node, the
  stateless-era serving and every capability package, whether or not it exists yet):
  no reach-in at all, and no ``from module import _private`` either.
- **Everywhere else**: a module may still use the private attributes of the classes
  it defines itself (Python's module-private convention: ``tool._validate`` in
  ``server/tools.py``, which defines ``ToolDefinition``); a private name the module
  does not define is a reach-in into another module's object.

:data:`ALLOWED` lists the reach-ins that remain, each with its reason; an entry that
is no longer needed fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "mcpkit"

# Modules held to the strict rule (paths below src/mcpkit).
STRICT_MODULES = ("transports/cluster.py",)
# Packages held to it, every module inside (they may not exist yet: the rule holds as
# soon as they do). server/stateless/ holds the stateless-era modules (issue 25).
STRICT_PACKAGES = (
    "server/stateless/",
    "extensions/",
    "compose/",
    "observability/",
    "middleware/",
    "auth/server/",
)

# (module, attribute) -> why the reach-in stays. Only outside the strict modules.
ALLOWED: dict[tuple[str, str], str] = {
    # The shared API of ClientSession and Client reads the session's cache key and
    # closed state; client-side hooks are outside issue 25 item 2 (the server core's
    # seams), and session_api is the session class's own API, split off for Client.
    ("client/session_api.py", "_origin"): "ClientSession's API, split off for Client to share",
    ("client/session_api.py", "_closed"): "ClientSession's API, split off for Client to share",
    # set_defaults(_module=...) on the argparse Namespace the CLI itself parsed.
    ("cli/__init__.py", "_module"): "the CLI's own argparse default, not another object's",
}

_REFLECTION = {"getattr", "setattr", "hasattr", "delattr"}


@dataclass(frozen=True)
class ReachIn:
    module: str
    line: int
    attribute: str
    code: str

    def __str__(self) -> str:
        return f"src/mcpkit/{self.module}:{self.line}: {self.code}"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_own(node: ast.expr) -> bool:
    """``self``, ``cls``, ``super()`` or ``type(self)``: the object the code belongs to."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "super":
            return True
        if node.func.id == "type" and len(node.args) == 1:
            return _is_own(node.args[0])
    return False


def _defined_here(tree: ast.Module) -> set[str]:
    """The private attribute names the module's own classes define: set on ``self``/``cls``,
    named in a class body (methods, class attributes, annotations) or in ``__slots__``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if _is_own(node.value):
                names.add(node.attr)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    for target in item.targets:
                        if isinstance(target, ast.Name):
                            names.add(target.id)
                            if target.id == "__slots__":
                                names.update(_strings(item.value))
    return {name for name in names if _private(name)}


def _strings(node: ast.expr) -> set[str]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and type(e.value) is str}
    return set()


def reach_ins(module: str, source: str, *, strict: bool) -> list[ReachIn]:
    """The reach-ins of one module's ``source`` (``module``: its path below src/mcpkit)."""
    tree = ast.parse(source)
    own = set() if strict else _defined_here(tree)
    found: list[ReachIn] = []

    def add(node: ast.AST, attribute: str) -> None:
        if attribute not in own:
            found.append(ReachIn(module, node.lineno, attribute, ast.unparse(node)))  # type: ignore[attr-defined]

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if _private(node.attr) and not _is_own(node.value):
                add(node, node.attr)
        elif isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Name)
                and func.id in _REFLECTION
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and type(node.args[1].value) is str
                and _private(node.args[1].value)
                and not _is_own(node.args[0])
            ):
                add(node, node.args[1].value)
        elif strict and isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if _private(alias.name):
                    found.append(ReachIn(module, node.lineno, alias.name, ast.unparse(node)))
    return found


def is_strict(module: str) -> bool:
    return module in STRICT_MODULES or module.startswith(STRICT_PACKAGES)


def _modules() -> dict[str, str]:
    return {
        path.relative_to(SRC).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(SRC.rglob("*.py"))
    }


@functools.cache
def _all_reach_ins() -> tuple[ReachIn, ...]:
    found: list[ReachIn] = []
    for module, source in _modules().items():
        found.extend(reach_ins(module, source, strict=is_strict(module)))
    return tuple(found)


def test_no_module_reaches_into_another_modules_objects() -> None:
    bad = [r for r in _all_reach_ins() if (r.module, r.attribute) not in ALLOWED]
    assert not bad, (
        "private attributes of objects these modules do not own (use or add a public, "
        "documented hook of the owner; see CAPABILITIES.md rule 2):\n" + "\n".join(map(str, bad))
    )


def test_every_allowed_reach_in_is_still_there() -> None:
    used = {(r.module, r.attribute) for r in _all_reach_ins()}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"ALLOWED entries no longer needed (remove them): {stale}"


def test_the_strict_modules_have_no_allowed_reach_in() -> None:
    assert not [key for key in ALLOWED if is_strict(key[0])]


def test_the_strict_modules_exist_where_named() -> None:
    # A strict module renamed away would silently leave the rule: its new place must be
    # a strict package (server/stateless/ for the stateless-era code).
    for module in STRICT_MODULES:
        assert (SRC / module).exists(), f"{module} is gone: update the list"
    assert (SRC / "server" / "stateless" / "dispatch.py").exists()


@pytest.mark.parametrize(
    ("code", "names"),
    [
        ("server._fanout = self._fanout", ["_fanout"]),
        ("if rid in entry.session._inflight: pass", ["_inflight"]),
        ("table = self.app._sessions", ["_sessions"]),
        ("x = getattr(server, '_methods', None)", ["_methods"]),
        ("setattr(session, '_outgoing', None)", ["_outgoing"]),
        ("del app._sessions", ["_sessions"]),
        ("self._a = 1\nself._b._a", ["_a"]),  # _a of the object in self._b, not self's
        ("from .http_sessions import _LEVEL_NAMES", ["_LEVEL_NAMES"]),
    ],
)
def test_the_strict_check_sees_each_kind_of_reach_in(code: str, names: list[str]) -> None:
    assert sorted(r.attribute for r in reach_ins("compose/x.py", code, strict=True)) == names


@pytest.mark.parametrize(
    "code",
    [
        "self._fanout = None\nself._fanout",
        "cls._registry.clear()",
        "super()._setup()",
        "type(self)._cache",
        "session.__class__",
        "server.add_session(session)",
        "getattr(server, 'name')",
    ],
)
def test_the_check_lets_own_public_and_dunder_access_through(code: str) -> None:
    assert reach_ins("compose/x.py", code, strict=True) == []


def test_outside_the_strict_modules_a_class_of_the_module_may_be_reached() -> None:
    source = (
        "class Tool:\n"
        "    __slots__ = ('_validate',)\n"
        "    def _run(self): pass\n"
        "def call(tool, server):\n"
        "    tool._validate; tool._run(); server._dispatch\n"
    )
    assert [r.attribute for r in reach_ins("server/x.py", source, strict=False)] == ["_dispatch"]
    strict = sorted(r.attribute for r in reach_ins("server/x.py", source, strict=True))
    assert strict == ["_dispatch", "_run", "_validate"]
