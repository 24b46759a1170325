"""lazy_exports: a package's names load on first use, once; unknown names say so.

Each test writes a small package of its own to a temporary directory, so what is
loaded, and when, is the helper's doing alone.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from mcpkit.errors import MissingExtra

PACKAGE = "lazy_probe_pkg"

FILES = {
    "__init__.py": """
        from mcpkit._lazy import lazy_exports

        EAGER = "here from the start"
        __all__ = ["EAGER", "Far", "Near", "Needy"]
        __getattr__, __dir__ = lazy_exports(
            __name__,
            {"Near": ".near", "Far": "lazy_probe_pkg.sub.far", "Needy": ".needy"},
            __all__,
        )
        """,
    "near.py": "class Near:\n    pass\n",
    "sub/__init__.py": "",
    "sub/far.py": "Far = ('far', 'away')\n",
    "needy.py": """
        from mcpkit._extras import require_extra

        with require_extra("redis", feature="the probe's needy part"):
            import redis

        Needy = redis
        """,
}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    for name, text in FILES.items():
        path = tmp_path / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_a_name_loads_its_module_on_first_use_only(package: ModuleType) -> None:
    assert f"{PACKAGE}.near" not in sys.modules
    near = package.Near
    assert near is sys.modules[f"{PACKAGE}.near"].Near
    assert vars(package)["Near"] is near  # stored: later uses are plain attribute lookups
    assert package.Near is near
    assert f"{PACKAGE}.sub.far" not in sys.modules  # the other names are still unloaded


def test_a_module_may_be_named_in_full(package: ModuleType) -> None:
    assert package.Far == ("far", "away")


def test_from_import_works_for_lazy_names(package: ModuleType) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {PACKAGE} import Near, EAGER", namespace)
    assert namespace["Near"] is package.Near
    assert namespace["EAGER"] == "here from the start"


def test_an_unknown_name_is_an_attribute_error_naming_it(package: ModuleType) -> None:
    with pytest.raises(AttributeError) as caught:
        package.Nera  # noqa: B018
    error = caught.value
    assert str(error) == f"module '{PACKAGE}' has no attribute 'Nera'"
    assert error.name == "Nera"
    assert error.obj is package  # what Python's "Did you mean: 'Near'?" reads
    with pytest.raises(ImportError, match="cannot import name 'Nera'"):
        exec(f"from {PACKAGE} import Nera", {})
    assert not hasattr(package, "Nera")


def test_dir_lists_the_public_names(package: ModuleType) -> None:
    assert dir(package) == ["EAGER", "Far", "Near", "Needy"]


def test_a_missing_extra_passes_through_and_is_not_remembered(
    package: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m == "redis" or m.startswith("redis.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "redis", None)
    message = (
        "the probe's needy part needs redis, which is not installed: pip install 'mcpkit[redis]'"
    )
    for _ in range(2):  # not cached as a failure: installing the extra later would work
        with pytest.raises(MissingExtra) as caught:
            package.Needy  # noqa: B018
        assert str(caught.value) == message
    assert "Needy" not in vars(package)
