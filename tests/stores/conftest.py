"""Fixtures of the store tests: a real ``redis-server`` (see :mod:`tests.redis_server`).

``redis_server`` is one server for the whole run (each test keeps to its own key
prefix); ``own_redis`` is a server of the test's own, which it may stop and start.
The real-socket HTTP fixtures of the transport tests are available here too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.redis_server import RedisServer
from tests.transports.conftest import http, make_client, serve_app  # noqa: F401 (fixtures)


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
