"""The revision table and version negotiation."""

from __future__ import annotations

import pytest

from mcpkit.protocol import versions
from mcpkit.protocol.versions import LATEST_HANDSHAKE, REVISIONS, negotiate
from tests.schema import revisions as schema_revisions

HANDSHAKE = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def test_every_handshake_revision_is_a_row_and_has_a_schema() -> None:
    assert list(versions.HANDSHAKE_REVISIONS) == HANDSHAKE
    assert set(HANDSHAKE) <= set(schema_revisions())
    for name in HANDSHAKE:
        assert REVISIONS[name].name == name
        assert REVISIONS[name].era == "handshake"


def test_latest_handshake_revision_is_2025_11_25() -> None:
    assert LATEST_HANDSHAKE == "2025-11-25"


@pytest.mark.parametrize("requested", HANDSHAKE)
def test_negotiate_answers_a_supported_version_with_itself(requested: str) -> None:
    assert negotiate(requested) == requested


@pytest.mark.parametrize(
    "requested", ["1999-01-01", "2025-13-99", "", "2026-07-28", None, 20241105, ["2024-11-05"]]
)
def test_negotiate_answers_anything_else_with_the_latest(requested: object) -> None:
    # 2026-07-28 is a stateless revision: it is never the answer to an initialize.
    assert negotiate(requested) == LATEST_HANDSHAKE


def test_only_2025_03_26_allows_batches() -> None:
    assert [n for n in HANDSHAKE if REVISIONS[n].batching] == ["2025-03-26"]


@pytest.mark.parametrize(
    ("flag", "since"),
    [
        ("completions", "2025-03-26"),
        ("tool_annotations", "2025-03-26"),
        ("audio", "2025-03-26"),
        ("progress_messages", "2025-03-26"),
        ("structured_output", "2025-06-18"),
        ("elicitation", "2025-06-18"),
        ("titles", "2025-06-18"),
        ("meta_fields", "2025-06-18"),
        ("resource_links", "2025-06-18"),
        ("protocol_header", "2025-06-18"),
        ("icons", "2025-11-25"),
        ("rich_elicitation", "2025-11-25"),
        ("sse_polling", "2025-11-25"),
    ],
)
def test_feature_flags_turn_on_at_the_revision_that_introduced_them(flag: str, since: str) -> None:
    for name in HANDSHAKE:
        assert getattr(REVISIONS[name], flag) is (name >= since), (flag, name)


def test_default_http_revision_is_2025_03_26() -> None:
    # 2025-06-18 transports § protocol version header: assume 2025-03-26 when absent.
    assert versions.DEFAULT_HTTP_REVISION == "2025-03-26"


def test_revisions_are_immutable() -> None:
    with pytest.raises(AttributeError):
        REVISIONS["2025-11-25"].batching = True  # type: ignore[misc]
