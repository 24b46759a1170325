"""Shared fixtures: every in-memory conversation is validated against the MCP schema.

Each :class:`mcpkit.testing.InMemoryClient` created during a test is recorded;
when the test ends, all the traffic it carried is checked with
:func:`tests.schema.assert_valid_traffic` against the revision the session
negotiated. A violation fails the test (as a teardown error naming the message).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcpkit import testing
from tests import schema as _schema
from tests.redis_server import RedisServer

schema_dir = _schema.schema_dir()  # fail at collection time when tests/schemas is missing


@pytest.fixture(autouse=True)
def _validate_in_memory_traffic(request: pytest.FixtureRequest) -> Iterator[list[Any]]:
    clients: list[Any] = []
    original = testing.InMemoryClient.__init__

    def recording_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        clients.append(self)

    testing.InMemoryClient.__init__ = recording_init  # type: ignore[method-assign]
    try:
        yield clients
    finally:
        testing.InMemoryClient.__init__ = original  # type: ignore[method-assign]
    if request.node.get_closest_marker("no_schema_check") is None:
        for client in clients:
            _schema.assert_valid_traffic(client)


@pytest.fixture
def assert_valid_traffic() -> Callable[..., int]:
    """Validate a client's traffic now (the autouse check runs again at teardown)."""
    return _schema.assert_valid_traffic


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "no_schema_check: do not validate in-memory or client traffic (state the reason)",
    )
    config.addinivalue_line(
        "markers",
        "uvloop: tests uvloop itself; the minimal-install legs of .ci/run, which have no "
        "uvloop (as a plain 'pip install mcpkit'), deselect them with -m 'not uvloop'",
    )


@pytest.fixture(autouse=True)
def _validate_client_sessions(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Every mcpkit ClientSession a test makes without ``trace=`` gets a
    :class:`tests.client.conftest.Traffic` of its own, checked when the test ends: every
    message mcpkit's client emits in the tests (in this process) is validated against the
    schema, not only in the tests that ask."""
    from mcpkit.client.options import ClientOptions
    from mcpkit.client.session import ClientSession
    from tests.client.conftest import Traffic

    recorders: list[Traffic] = []
    original = ClientSession.__init__

    def traced(self: ClientSession, transport: Any, options: ClientOptions | None = None) -> None:
        options = options or ClientOptions()
        if options.trace is None:
            recorder = Traffic()
            recorders.append(recorder)
            options = options.replace(trace=recorder)
        original(self, transport, options)

    monkeypatch.setattr(ClientSession, "__init__", traced)
    yield
    if request.node.get_closest_marker("no_schema_check") is not None:
        return
    for recorder in recorders:
        recorder.check()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real ``redis-server`` for the whole run (tests/redis_server.py); each test keeps
    to its own key prefix. Shared by the store, cluster and CLI tests."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
