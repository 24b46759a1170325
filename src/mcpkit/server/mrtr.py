"""Input rounds' former home; they live in :mod:`mcpkit.server.input_rounds` now.

Kept because the documentation of earlier releases pointed at
``mcpkit.server.mrtr.principal_of`` (how a principal is identified for a
``requestState``); new code imports from :mod:`mcpkit.server.input_rounds`.
"""

from __future__ import annotations

from .input_rounds import InputReplayMismatch, InputRounds, RequestStateCodec, principal_of

__all__ = ["InputReplayMismatch", "InputRounds", "RequestStateCodec", "principal_of"]
