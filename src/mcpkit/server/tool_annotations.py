"""Tool annotations: :class:`ToolAnnotations` and the check of annotations given as a dict.

The spec names five hints (2025-03-26 server/tools § tool annotations: ``title``,
``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``).
A dict of annotations is checked once, at registration: the snake_case spelling
Python code (and FastMCP's ``ToolAnnotations``) uses is converted to the spec's
name, and any other key is refused, because a client ignores a hint it does not
know, so a misspelt ``read_only_hint`` sent verbatim would silently mean nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ANNOTATION_NAMES", "ToolAnnotations", "checked_annotations"]


@dataclass(frozen=True, slots=True)
class ToolAnnotations:
    """Hints about a tool's behaviour (2025-03-26 tools § annotations)."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in (
            ("title", self.title),
            ("readOnlyHint", self.read_only_hint),
            ("destructiveHint", self.destructive_hint),
            ("idempotentHint", self.idempotent_hint),
            ("openWorldHint", self.open_world_hint),
        ):
            if value is not None:
                out[key] = value
        return out


#: The spec's annotation names, and the snake_case spelling converted to each.
ANNOTATION_NAMES: dict[str, str] = {
    "title": "title",
    "readOnlyHint": "readOnlyHint",
    "destructiveHint": "destructiveHint",
    "idempotentHint": "idempotentHint",
    "openWorldHint": "openWorldHint",
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}


def checked_annotations(value: Any, problems: list[str]) -> ToolAnnotations | dict[str, Any] | None:
    """``value`` as the annotations to send: a dict gets the spec's names; a problem
    is appended for each key that is not one, and for anything but a dict, None or
    :class:`ToolAnnotations` (an object with ``model_dump``, such as the official
    SDK's or FastMCP's annotations model, is read as the dict it dumps)."""
    if value is None or isinstance(value, ToolAnnotations):
        return value
    if hasattr(value, "model_dump") and not isinstance(value, dict):
        value = value.model_dump(by_alias=True, exclude_none=True)
    if not isinstance(value, dict):
        problems.append(
            "annotations must be a ToolAnnotations or a dict of the spec's hints, "
            f"not {type(value).__name__}"
        )
        return None
    out: dict[str, Any] = {}
    for key, hint in value.items():
        name = ANNOTATION_NAMES.get(key) if isinstance(key, str) else None
        if name is None:
            problems.append(
                f"unknown annotation {key!r}: the spec's are title, readOnlyHint, "
                "destructiveHint, idempotentHint and openWorldHint (or their snake_case "
                "spelling); put other data in meta="
            )
        elif hint is not None:
            out[name] = hint
    return out
