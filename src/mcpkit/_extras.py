"""The optional extras and :func:`require_extra`, the one way a module says it needs one.

A module that needs an optional dependency imports it inside ``require_extra`` at the
top, before anything else of its own::

    with require_extra("redis", feature="the Redis store (mcpkit.stores.redis)"):
        from redis.asyncio import Redis

Without the package, importing the module raises :class:`~mcpkit.errors.MissingExtra`
naming the feature and the command that fixes it (``pip install 'mcpkit[redis]'``),
never a bare ``ModuleNotFoundError``. The imports stay ordinary statements, so type
checkers see them as usual. Only a missing package of *that* extra is translated: any
other import error (a broken install, a bug) passes through unchanged.
"""

from __future__ import annotations

from types import TracebackType
from typing import Final

from .errors import MissingExtra

__all__ = ["EXTRAS", "require_extra"]

#: Each extra of ``pyproject.toml`` a module may need, and the import names it provides.
EXTRAS: Final[dict[str, tuple[str, ...]]] = {
    "http": ("uvicorn",),
    "client": ("httpx", "h11"),
    "auth": ("joserfc", "cryptography", "httpx"),
    "redis": ("redis",),
    "tasks-queue": ("docket", "redis"),
    "pydantic-ai": ("pydantic_ai",),
    "otel": ("opentelemetry",),
    "prometheus": ("opentelemetry", "prometheus_client"),
    "langchain": ("langchain_core",),
    "devtools": ("watchfiles", "yaml"),
    "openapi": ("httpx", "openapi_pydantic", "yaml"),
}


def require_extra(extra: str, *, feature: str) -> _ExtraGuard:
    """Within this block, a missing package of ``extra`` raises :class:`MissingExtra`.

    ``feature`` says what needs it, as the start of a sentence ("the Redis store
    (mcpkit.stores.redis)"); the message goes on "needs redis, which is not
    installed: pip install 'mcpkit[redis]'".
    """
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}: one of {', '.join(EXTRAS)}")
    return _ExtraGuard(extra, feature)


class _ExtraGuard:
    __slots__ = ("extra", "feature")

    def __init__(self, extra: str, feature: str) -> None:
        self.extra = extra
        self.feature = feature

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not isinstance(exc, ModuleNotFoundError) or isinstance(exc, MissingExtra):
            return
        package = (exc.name or "").partition(".")[0]
        if package in EXTRAS[self.extra]:
            # The missing package is the whole story: the traceback into importlib is not.
            raise MissingExtra(self.feature, self.extra, package) from None
