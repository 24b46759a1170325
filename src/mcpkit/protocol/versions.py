"""Protocol revisions as data.

Each revision is a row; code asks the row ("does this revision have
structured tool output?") instead of comparing version strings. The stateless
2026-07-28 revision is a row like any other, with ``era="stateless"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "HANDSHAKE_REVISIONS",
    "LATEST_HANDSHAKE",
    "REVISIONS",
    "Revision",
    "negotiate",
]


@dataclass(frozen=True, slots=True)
class Revision:
    name: str
    era: Literal["handshake", "stateless"]
    batching: bool  # JSON-RPC batches allowed (2025-03-26 only)
    structured_output: bool  # outputSchema / structuredContent
    elicitation: bool
    titles_and_icons: bool  # `title` fields (2025-06-18), icons (2025-11-25)
    protocol_header: bool  # MCP-Protocol-Version header on HTTP
    sse_polling: bool  # priming event + server-initiated close (SEP-1699)
    resource_not_found_code: int


REVISIONS: Final[dict[str, Revision]] = {
    r.name: r
    for r in (
        Revision("2024-11-05", "handshake", False, False, False, False, False, False, -32002),
        Revision("2025-03-26", "handshake", True, False, False, False, False, False, -32002),
        Revision("2025-06-18", "handshake", False, True, True, True, True, False, -32002),
        Revision("2025-11-25", "handshake", False, True, True, True, True, True, -32002),
    )
}

HANDSHAKE_REVISIONS: Final = tuple(n for n, r in REVISIONS.items() if r.era == "handshake")
LATEST_HANDSHAKE: Final = HANDSHAKE_REVISIONS[-1]
# What a Streamable HTTP server assumes when the header is absent (2025-06-18 transports §
# "Protocol Version Header": assume 2025-03-26).
DEFAULT_HTTP_REVISION: Final = "2025-03-26"


def negotiate(requested: object) -> str:
    """The revision to answer an ``initialize`` with (lifecycle § version negotiation)."""
    if isinstance(requested, str) and requested in REVISIONS and REVISIONS[requested].era == "handshake":
        return requested
    return LATEST_HANDSHAKE
