"""The plain-tool path of the stateless era: a tool without a Context run in its request's task.

Most tools declare no ``Context`` and never ask the client anything; running them as
pausable calls (:mod:`.input_required`) would cost a task and wake-ups per call. They
run in the request's own task with ``session.inputs`` set to :data:`NOT_PAUSABLE`; one
that does ask (through ``current_context()``) is stopped by :class:`Restart` and served
again, from the top, as a pausable call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ..context import progress_sink
from .input_required import ParkedCall

if TYPE_CHECKING:
    from ..session import ServerSession

__all__ = ["NOT_PAUSABLE", "Restart", "runs_inline"]


class Restart(BaseException):
    """A tool run in the request's own task asked for input; not an ``Exception``, so that
    the tool's error handling does not turn it into an error result."""


class _NotPausable(ParkedCall):
    """``session.inputs`` while a plain tool runs in the request's task: asking, or a
    journaled step, needs a pausable call, so both restart the tool as one."""

    def __init__(self) -> None:  # no state: it is shared, and only ever raises
        pass

    def progress_token(self, own: str | int | None) -> str | int | None:
        return own  # the tool runs in its own request, the only round there is

    async def ask(
        self, method: str, params: dict[str, Any] | None, key: str | None, timeout: float | None
    ) -> dict[str, Any]:
        raise Restart

    async def once(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        raise Restart


NOT_PAUSABLE: Final = _NotPausable()


def runs_inline(session: ServerSession, msg: dict[str, Any]) -> bool:
    """Whether ``msg`` is a first-round ``tools/call`` of a tool without a Context parameter.

    Such tools rarely ask anything: the caller runs them in the request's own task
    with ``session.inputs`` set to :data:`NOT_PAUSABLE`, sparing them the handler task
    and wake-ups of a pausable call. One that does ask (through ``current_context()``)
    is stopped at its question by :class:`Restart` and must then be served again, from
    the top, as a pausable call (:meth:`.input_required.InputRounds.serve`).

    Work detached from its request (under
    :func:`~mcpkit.server.context.progress_reported_to`: a task of the tasks extension)
    runs inline too: its answer has gone out already, no retry will resume it, and its
    caller must be able to cancel it by cancelling its own task.
    """
    params = msg.get("params")
    if (
        msg["method"] != "tools/call"
        or type(params) is not dict
        or params.get("requestState") is not None
    ):
        return False
    name = params.get("name")
    tool = session.server.tools.get(name) if type(name) is str else None
    return tool is not None and (tool.takes_no_context or progress_sink() is not None)
