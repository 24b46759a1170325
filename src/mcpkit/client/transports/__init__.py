"""Client transports: in-memory, stdio, Streamable HTTP and legacy SSE (httpx, loaded on use)."""

from __future__ import annotations

from .base import ClientTransport, HTTPErrorStatus, Inbound, SessionExpired, Unreachable

__all__ = ["ClientTransport", "HTTPErrorStatus", "Inbound", "SessionExpired", "Unreachable"]
