"""Client transports: in-memory, stdio, Streamable HTTP (httpx, loaded on use)."""

from __future__ import annotations

from .base import ClientTransport, Inbound, SessionExpired

__all__ = ["ClientTransport", "Inbound", "SessionExpired"]
