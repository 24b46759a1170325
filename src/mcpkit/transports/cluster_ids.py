"""The ids a cluster node gives its request streams (see :mod:`.cluster`).

A POST stream's id is ``"<session id>/<node>.<n>.<request id>"``: unique across
the nodes serving a session, naming the node that runs the request (so that a
node resuming the stream knows whom to wait for) and the request's id,
JSON then unpadded base64url (so that it can answer for the request if that
node died); ``-`` stands for an id too long to carry.
"""

from __future__ import annotations

import base64
from typing import Any, Final

import orjson

__all__ = ["stream_suffix", "suffix_parts"]

_MAX_RID_CHARS: Final = 64


def stream_suffix(node_id: str, n: int, rid: Any) -> str:
    """The suffix of a POST stream's id: its node, that node's count, and the request id
    (so that a node resuming it can answer for the request if its node died)."""
    try:
        raw = orjson.dumps(rid)
    except TypeError:
        raw = b""
    text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    if not text or len(text) > _MAX_RID_CHARS:
        text = "-"
    return f"{node_id}.{n}.{text}"


def suffix_parts(stream_id: str) -> tuple[str, Any] | None:
    """(node, request id) of a cluster POST stream's id; None for any other stream."""
    suffix = stream_id.rpartition("/")[2]
    parts = suffix.split(".")
    if len(parts) != 3:
        return None
    node, _, text = parts
    rid: Any = None
    if text != "-":
        try:
            rid = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        except ValueError:
            rid = None
    return node, rid
