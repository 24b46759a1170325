"""mcpkit's version, read once from the installed package's metadata.

The version is written in one place, ``pyproject.toml``; ``mcpkit.__version__``,
``mcpkit --version`` and the ``clientInfo`` the client sends all read it from
there, so a release cannot leave one of them behind. Read lazily and cached:
``importlib.metadata`` is not free, and ``import mcpkit`` stays light.
"""

from __future__ import annotations

from functools import cache
from typing import Final

__all__ = ["UNKNOWN_VERSION", "version"]

# A source tree run without being installed has no metadata to read.
UNKNOWN_VERSION: Final = "0+unknown"


@cache
def version() -> str:
    """The installed distribution's version, or :data:`UNKNOWN_VERSION`."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as distribution_version

    try:
        return distribution_version("mcpkit")
    except PackageNotFoundError:
        return UNKNOWN_VERSION
