"""Fixtures of the authorization server tests: oidc-provider (npm) as the upstream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.auth.server.upstream import Upstream, running
from tests.client.http_servers import unused_port


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Upstream, int]]:
    """(the running provider, mcpkit's port): the port is chosen first, because the
    provider knows mcpkit's callback ``http://127.0.0.1:{port}/auth/callback``."""
    port = unused_port()
    log = tmp_path_factory.mktemp("oidc") / "oidc-provider.log"
    with running(f"http://127.0.0.1:{port}/auth/callback", Path(log)) as up:
        yield up, port
