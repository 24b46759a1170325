"""MCP extensions (SEP-2133), one subpackage each, built on the core's ``Extension`` contract.

Each extension is a package of its own (``tasks/``, ``skills/``, ``apps/``) whose
``server.py`` builds a :class:`mcpkit.Extension`: the identifier it is advertised
under in ``capabilities.extensions``, its settings, its additional methods,
middleware and lifespan (:mod:`mcpkit.server.extension`), and whose ``client.py``
holds the client-side helpers. It lives here, beside ``adapters`` and
``workflow`` and above the server and client, because it uses only their public
seams; the core never imports it, and ``import mcpkit`` does not load it.

:data:`EXTENSIONS` maps each identifier to the module that implements it.
Extensions of a draft SEP say they are experimental in their module docstring.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["EXTENSIONS"]

#: Extension identifier (``capabilities.extensions`` key) -> the module implementing it.
EXTENSIONS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "io.modelcontextprotocol/skills": "mcpkit.extensions.skills",
        "io.modelcontextprotocol/tasks": "mcpkit.extensions.tasks",
        "io.modelcontextprotocol/ui": "mcpkit.extensions.apps",
    }
)
