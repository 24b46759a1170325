"""ServerLimits: the server's bounds as one value object, checked when made, read by the server."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mcpkit import CacheOptions, InputRoundOptions, MCPServer, ServerLimits, ServerMetadata
from mcpkit.errors import ConfigurationError


def test_the_limits_reach_the_server() -> None:
    limits = ServerLimits(
        page_size=7, request_timeout=2.5, max_batch_size=9, listen_queue_bytes=4096
    )
    server = MCPServer(name="s", version="1", limits=limits)
    assert server.limits is limits
    assert (server.page_size, server.request_timeout) == (7, 2.5)
    assert (server.max_batch_size, server.listen_queue_bytes) == (9, 4096)
    # The input-round states live as long as the server waits for an answer.
    assert server.input_rounds.ttl == 2.5


def test_without_limits_the_defaults_hold() -> None:
    server = MCPServer(name="s", version="1")
    assert server.limits == ServerLimits()
    assert (server.page_size, server.request_timeout) == (None, 60.0)
    assert (server.max_batch_size, server.listen_queue_bytes) == (1000, 1024 * 1024)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"page_size": 0}, "page_size must be a positive integer or None"),
        ({"max_batch_size": True}, "max_batch_size must be an integer, not True"),
        ({"max_batch_size": 0}, "max_batch_size must be at least 1, not 0"),
        ({"listen_queue_bytes": 0}, "listen_queue_bytes must be a positive number of bytes"),
    ],
)
def test_a_bad_limit_is_refused_where_it_is_written(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ServerLimits(**options)


def test_the_limits_are_frozen_and_keyword_only() -> None:
    limits = ServerLimits()
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.page_size = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        ServerLimits(10)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("option", "kind"),
    [
        ("metadata", ServerMetadata),
        ("limits", ServerLimits),
        ("cache", CacheOptions),
        ("input_rounds", InputRoundOptions),
    ],
)
def test_a_grouped_option_must_be_its_value_object(option: str, kind: type) -> None:
    with pytest.raises(
        ConfigurationError, match=f"{option} must be a mcpkit.{kind.__name__}, not dict"
    ):
        MCPServer(name="s", version="1", **{option: {}})


@pytest.mark.parametrize(
    "old",
    [
        "page_size",
        "request_timeout",
        "max_batch_size",
        "listen_queue_bytes",
        "cache_ttl_ms",
        "cache_scope",
        "request_state_keys",
        "input_store",
        "request_state_limit",
        "max_parked_calls",
        "max_parked_per_principal",
        "id",
        "repository",
        "release_date",
        "is_latest",
        "package_canonical",
        "packages",
        "remotes",
    ],
)
def test_the_grouped_keywords_are_gone(old: str) -> None:
    with pytest.raises(TypeError, match=old):
        MCPServer(name="s", version="1", **{old: None})
