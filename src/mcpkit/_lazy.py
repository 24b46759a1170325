"""Lazy exports: a package's public names, each imported from its module on first use.

A package that must stay cheap to import (``mcpkit`` itself, ``mcpkit.client``,
``mcpkit.auth``) maps each lazy name to the module that defines it and lets
:func:`lazy_exports` build its module ``__getattr__`` and ``__dir__`` (PEP 562)::

    __getattr__, __dir__ = lazy_exports(__name__, {"Client": ".client"}, __all__)

The first access imports the module and stores the value in the package, so later
accesses are plain attribute lookups. A module that needs an extra raises
:class:`~mcpkit.errors.MissingExtra` from there, unchanged. Type checkers see the
names through the package's ``if TYPE_CHECKING:`` imports.
"""

# No ``from __future__ import annotations`` here nor in ``mcpkit/__init__.py``: these two
# run on every ``import mcpkit``, and loading the __future__ module would cost about as
# much as all the rest (``typing`` has loaded collections.abc already).
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``.

    ``exports`` maps each lazy name to its module, absolute (``"mcpkit.server.server"``)
    or relative to ``package`` (``".jwt"``); ``public`` is the package's ``__all__``,
    which ``dir()`` lists. Any other name raises :class:`AttributeError`.
    """
    exports = dict(exports)

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}",
                name=name,
                obj=sys.modules.get(package),
            )
        value = getattr(import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return list(public)

    return __getattr__, __dir__
