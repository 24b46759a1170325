"""The memory storage of the authorization server passes the storage conformance class."""

from __future__ import annotations

from mcpkit.auth.server.storage import MemoryAuthServerStorage
from tests.auth.server.storage_conformance import AuthServerStorageConformance, code_record


class TestMemoryAuthServerStorage(AuthServerStorageConformance):
    pass


async def test_expired_records_are_swept_from_memory() -> None:
    storage = MemoryAuthServerStorage(sweep_every=4)
    for n in range(3):
        await storage.save_code(f"dead-{n}", code_record(expires_in=-1))
    assert len(storage) == 3
    await storage.save_code("alive", code_record())  # the fourth write sweeps
    assert len(storage) == 1
    assert await storage.take_code("alive") is not None
