"""The upstream identity provider of the authorization server tests: ``oidc-provider`` (npm).

A certified OpenID Connect implementation, pinned, installed from the npm registry into a
cache directory on first use (beside the other npm test peers, ``$MCPKIT_INTEROP_HOME``)
and run by ``fixtures/oidc_provider.mjs`` with dynamic registration off and one
pre-registered confidential client: mcpkit, with its fixed callback.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.interop.fixtures.peers import _conformance_runner, http_peer, interop_home

PACKAGE = "oidc-provider"
VERSION = "9.13.3"
SCRIPT = Path(__file__).resolve().parent / "fixtures" / "oidc_provider.mjs"
CLIENT_ID = "mcpkit-proxy"
CLIENT_SECRET = "mcpkit-proxy-secret-for-tests"


@dataclass(frozen=True)
class Upstream:
    issuer: str
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET


def _node() -> str:
    """The machine's node when it is 20.19 or newer (oidc-provider 9's minimum), else the
    Node.js 22 that the conformance tooling installs (``scripts/conformance.py``)."""
    found = shutil.which("node")
    if found is not None:
        version = subprocess.run(
            [found, "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout.strip()
        parts = [int(p) for p in version.lstrip("v").split(".")[:2] if p.isdigit()]
        if len(parts) == 2 and tuple(parts) >= (20, 19):
            return found
    return str(_conformance_runner().install().node)


def install() -> Path:
    """Install the pinned oidc-provider once; returns its module entry."""
    home = interop_home() / "oidc-provider"
    home.mkdir(parents=True, exist_ok=True)
    pkg = home / "node_modules" / PACKAGE
    with open(home / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            version = json.loads((pkg / "package.json").read_text()).get("version")
        except (OSError, ValueError):
            version = None
        if version != VERSION:
            (home / "package.json").write_text('{"name": "mcpkit-oidc-peer", "private": true}\n')
            # npm is a node script: the same node as the provider runs it.
            node_dir = str(Path(_node()).parent)
            env = dict(os.environ, PATH=f"{node_dir}{os.pathsep}{os.environ.get('PATH', '')}")
            subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
                 f"{PACKAGE}@{VERSION}"],
                cwd=home,
                env=env,
                check=True,
                timeout=600,
                stdout=sys.stderr,
            )  # fmt: skip
    return pkg / "lib" / "index.js"


@contextlib.contextmanager
def running(callback_url: str, log_path: Path) -> Iterator[Upstream]:
    """oidc-provider on a free port, with mcpkit registered for ``callback_url``."""
    module = install()
    env = {
        "OIDC_PROVIDER_MODULE": str(module),
        "CLIENT_ID": CLIENT_ID,
        "CLIENT_SECRET": CLIENT_SECRET,
        "CALLBACK_URL": callback_url,
        "NODE_NO_WARNINGS": "1",
    }
    with http_peer(
        lambda port: [_node(), str(SCRIPT)],
        env=dict(os.environ, **env),
        env_for_port=lambda port: {"PORT": str(port)},
        log_path=log_path,
    ) as port:
        yield Upstream(issuer=f"http://127.0.0.1:{port}")
