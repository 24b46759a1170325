"""Fixtures of the tasks extension's tests: the run's real ``redis-server`` (tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.redis_server import RedisServer


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url
