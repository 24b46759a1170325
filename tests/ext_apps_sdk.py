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
ESBUILD = "0.28.2"  # bundles the test host page
QUIET = ("--ignore-scripts", "--no-audit", "--no-fund")


def _npm(root: Path, *packages: str, peers: bool = False) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is needed for the MCP Apps tests (node 22 ships it)")
    peer = [] if peers else ["--legacy-peer-deps"]
    subprocess.run(
        [npm, "install", "--prefix", str(root), "--no-save", *peer, *QUIET, *packages],
        check=True,
        capture_output=True,
        timeout=300,
    )


def build_host(root: Path, entry: Path) -> str:
    """``entry`` bundled for the browser (one ES module), with the package's host bridge.

    The host bridge imports the MCP TypeScript SDK and zod (the package's peer
    dependencies), so they are installed here too, with esbuild to bundle them.
    """
    _npm(root, f"{PACKAGE}@{VERSION}", f"esbuild@{ESBUILD}", peers=True)
    source = root / entry.name  # beside node_modules, where its imports resolve
    shutil.copyfile(entry, source)
    out = root / "host.bundle.js"
    esbuild = root / "node_modules" / ".bin" / "esbuild"
    subprocess.run(
        [str(esbuild), str(source), "--bundle", "--format=esm", f"--outfile={out}"],
        check=True,
        capture_output=True,
        timeout=120,
        cwd=root,
    )
    return out.read_text(encoding="utf-8")


def install(root: Path) -> Path:
    """Install the package under ``root``; the path of its folder in ``node_modules``."""
    folder = root / "node_modules" / PACKAGE
    if not (folder / "package.json").is_file():
        _npm(root, f"{PACKAGE}@{VERSION}")
    return folder
