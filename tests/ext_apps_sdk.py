"""The ``@modelcontextprotocol/ext-apps`` npm package, installed once per test session.

Tests read the package's own files rather than copies: its JSON schema
(``dist/src/generated/schema.json``, the extension's ``_meta.ui`` shapes) and
its browser bundle (``dist/src/app-with-deps.js``, inlined into the example
app). ``npm install`` runs with ``--ignore-scripts`` and without the optional
peer dependencies (the bundle carries its own); npm's cache makes reruns quick.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

PACKAGE = "@modelcontextprotocol/ext-apps"
VERSION = "2.0.4"  # the version examples/apps/package.json pins


def install(root: Path) -> Path:
    """Install the package under ``root``; the path of its folder in ``node_modules``."""
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is needed for the MCP Apps tests (node 22 ships it)")
    folder = root / "node_modules" / PACKAGE
    if not (folder / "package.json").is_file():
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(root),
                "--no-save",
                "--legacy-peer-deps",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
                f"{PACKAGE}@{VERSION}",
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
    return folder
