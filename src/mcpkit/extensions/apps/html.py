"""Helpers that build an MCP App's HTML: from a string or a file, with ES modules inlined.

A host renders the app in a sandboxed iframe with a deny-by-default content
security policy, so an app that loads its scripts from the network must list
their origins in ``_meta.ui.csp``. :func:`inline_modules` avoids that: it
reads built JavaScript modules (such as the App SDK's
``dist/src/app-with-deps.js`` from a local ``node_modules``) from disk when the
HTML is built and maps their bare specifiers to ``data:`` URLs in an import
map, so the page's own ``import { App } from "@modelcontextprotocol/ext-apps"``
works with no network at run time and nothing copied by hand into the repo.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["find_node_module", "html_from_file", "inline_modules"]


def html_from_file(path: str | os.PathLike[str]) -> str:
    """The text of an HTML file (UTF-8), read now so a missing file fails at start-up."""
    return Path(path).read_text(encoding="utf-8")


def find_node_module(
    package: str, file: str, *, start: str | os.PathLike[str] | None = None
) -> Path | None:
    """``node_modules/<package>/<file>`` in ``start`` (default: cwd) or a parent, or None.

    Node's own lookup order: the nearest ``node_modules`` wins.
    """
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "node_modules" / package / file
        if candidate.is_file():
            return candidate
    return None


def inline_modules(html: str, modules: Mapping[str, str | os.PathLike[str]]) -> str:
    """``html`` with an import map resolving each specifier to its module file, inlined.

    ``modules`` maps a bare specifier to the path of a self-contained ES module
    (one with no imports of its own). The import map goes right after
    ``<head>`` (or first, without one), before any module script, as browsers
    require. Raises :class:`FileNotFoundError` for a missing module file.
    """
    imports: dict[str, str] = {}
    for specifier, path in modules.items():
        data = Path(path).read_bytes()
        imports[specifier] = "data:text/javascript;base64," + base64.b64encode(data).decode()
    # "</" cannot occur in base64 or in these keys' JSON, so the script element stays whole.
    tag = f'<script type="importmap">{json.dumps({"imports": imports})}</script>'
    lower = html.lower()
    at = lower.find("<head")
    if at >= 0:
        end = html.find(">", at)
        if end >= 0:
            return html[: end + 1] + tag + html[end + 1 :]
    return tag + html
