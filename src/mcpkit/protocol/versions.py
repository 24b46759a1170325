"""Protocol revisions as data.

Each revision is a row; code asks the row ("does this revision have
structured tool output?") instead of comparing version strings. The stateless
2026-07-28 revision is a row like any other, with ``era="stateless"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "DEFAULT_HTTP_REVISION",
    "HANDSHAKE_REVISIONS",
    "LATEST_HANDSHAKE",
    "REVISIONS",
    "STATELESS_REVISIONS",
    "Revision",
    "negotiate",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Revision:
    """What one protocol revision has; each flag names the revision that introduced it."""

    name: str
    era: Literal["handshake", "stateless"]
    batching: bool  # JSON-RPC batches allowed (2025-03-26 only)
    completions: bool  # `completions` server capability (2025-03-26)
    tool_annotations: bool  # Tool.annotations (2025-03-26)
    audio: bool  # AudioContent (2025-03-26)
    progress_messages: bool  # `message` in progress notifications (2025-03-26)
    structured_output: bool  # outputSchema / structuredContent (2025-06-18)
    elicitation: bool  # elicitation/create (2025-06-18)
    titles: bool  # `title` on tools, prompts, resources, implementations (2025-06-18)
    meta_fields: bool  # `_meta` on tools, prompts, resources and content blocks (2025-06-18)
    resource_links: bool  # ResourceLink content (2025-06-18)
    icons: bool  # `icons`, Implementation description/websiteUrl (2025-11-25)
    rich_elicitation: bool  # defaults, titled and multi-select enums in forms (2025-11-25)
    protocol_header: bool  # MCP-Protocol-Version header on HTTP (2025-06-18)
    sse_polling: bool  # priming event + server-initiated close (SEP-1699, 2025-11-25)
    resource_not_found_code: int


def _handshake(name: str, level: int) -> Revision:
    """A handshake-era row; ``level`` counts revisions since 2024-11-05."""
    return Revision(
        name=name,
        era="handshake",
        batching=level == 1,
        completions=level >= 1,
        tool_annotations=level >= 1,
        audio=level >= 1,
        progress_messages=level >= 1,
        structured_output=level >= 2,
        elicitation=level >= 2,
        titles=level >= 2,
        meta_fields=level >= 2,
        resource_links=level >= 2,
        icons=level >= 3,
        rich_elicitation=level >= 3,
        protocol_header=level >= 2,
        sse_polling=level >= 3,
        resource_not_found_code=-32002,
    )


REVISIONS: Final[dict[str, Revision]] = {
    r.name: r
    for r in (
        _handshake("2024-11-05", 0),
        _handshake("2025-03-26", 1),
        _handshake("2025-06-18", 2),
        _handshake("2025-11-25", 3),
        # Stateless (changelog 2026-07-28): no handshake, no batches, no resumable streams
        # (SEP-1699 polling is gone with Last-Event-ID); resource not found is -32602.
        Revision(
            name="2026-07-28",
            era="stateless",
            batching=False,
            completions=True,
            tool_annotations=True,
            audio=True,
            progress_messages=True,
            structured_output=True,
            elicitation=True,
            titles=True,
            meta_fields=True,
            resource_links=True,
            icons=True,
            rich_elicitation=True,
            protocol_header=True,
            sse_polling=False,
            resource_not_found_code=-32602,
        ),
    )
}

HANDSHAKE_REVISIONS: Final = tuple(n for n, r in REVISIONS.items() if r.era == "handshake")
LATEST_HANDSHAKE: Final = HANDSHAKE_REVISIONS[-1]
STATELESS_REVISIONS: Final = tuple(n for n, r in REVISIONS.items() if r.era == "stateless")
# What a Streamable HTTP server assumes when the header is absent (2025-06-18 transports §
# "Protocol Version Header": assume 2025-03-26).
DEFAULT_HTTP_REVISION: Final = "2025-03-26"


def negotiate(requested: object) -> str:
    """The revision to answer an ``initialize`` with (lifecycle § version negotiation)."""
    if (
        isinstance(requested, str)
        and requested in REVISIONS
        and REVISIONS[requested].era == "handshake"
    ):
        return requested
    return LATEST_HANDSHAKE
