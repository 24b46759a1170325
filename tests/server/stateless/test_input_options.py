"""InputRoundOptions: how a server runs its input-required rounds, checked when made."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mcpkit import InputRoundOptions, MCPServer, MemoryInputRoundStore
from mcpkit.errors import ConfigurationError
from mcpkit.server.stateless.request_state import RequestStateCodec
from mcpkit.stores import MemoryStore


def test_the_options_reach_the_servers_input_rounds() -> None:
    store = MemoryInputRoundStore()
    keys = [b"a" * 32, b"b" * 32]
    rounds = InputRoundOptions(
        request_state_keys=keys,
        store=store,
        request_state_limit=4096,
        max_parked_calls=20,
        max_parked_per_principal=5,
    )
    server = MCPServer(name="s", version="1", input_rounds=rounds)
    assert server.input_rounds.store is store
    assert server.input_rounds.max_state == 4096
    assert (server.input_rounds.parked.max_total, server.input_rounds.parked.max_per_owner) == (
        20,
        5,
    )
    # The server signs with the first key given: a codec holding only that key opens it.
    token = server.input_rounds.codec.seal({"x": 1})
    opened = RequestStateCodec([b"a" * 32], ttl=60).open(token)
    assert opened is not None and opened["x"] == 1
    assert RequestStateCodec([b"b" * 32], ttl=60).open(token) is None


def test_the_keys_are_copied_so_a_later_change_does_not_reach_the_server() -> None:
    keys = [b"k" * 32]
    rounds = InputRoundOptions(request_state_keys=keys)
    keys.append(b"short")
    assert rounds.request_state_keys == (b"k" * 32,)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rounds.store = MemoryInputRoundStore()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"request_state_keys": [b"short"]}, "request state keys: at least one, each of 32 bytes"),
        ({"request_state_limit": 1023}, "request_state_limit must be an integer >= 1024"),
        ({"max_parked_calls": 0}, "max_parked_calls must be a positive integer, got 0"),
        ({"max_parked_per_principal": 1.5}, "max_parked_per_principal must be a positive integer"),
    ],
)
def test_a_bad_value_is_refused_where_it_is_written(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        InputRoundOptions(**options)


def test_a_store_of_its_own_and_a_server_store_are_not_both_taken() -> None:
    own = InputRoundOptions(store=MemoryInputRoundStore())
    with pytest.raises(ConfigurationError, match=r"either store= or InputRoundOptions\(store="):
        MCPServer(name="s", version="1", store=MemoryStore(), input_rounds=own)
    server = MCPServer(name="s", version="1", input_rounds=own)
    with pytest.raises(ConfigurationError, match="already has an input-round store"):
        server.use_store(MemoryStore())
