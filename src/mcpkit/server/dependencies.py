"""Dependency injection: ``Depends(...)`` parameters, resolved per call and hidden from clients.

A parameter written ``db: Annotated[DB, Depends(get_db)]`` or ``db: DB = Depends(get_db)``
is not an argument: it is in no input schema, prompt argument list or template
variable set, and a client that sends a value under its name is ignored, as any
argument the function does not declare is (so a hidden parameter cannot be
overridden, and its name is not revealed by a refusal). Each call resolves it by
calling ``get_db``, which may itself take ``Depends`` parameters and a
:class:`~mcpkit.server.context.Context` (the same rule as for tools).

Everything is worked out at registration (ARCHITECTURE.md, principle 3): the
dependency graph is flattened into a list of steps in call order, one per
dependency (a cached dependency used twice is one step: called once per request;
``use_cache=False`` gives each use its own step), cycles and parameters that
cannot be filled are registration errors, and the function mcpkit calls is a
wrapper that runs the steps and then the handler. A handler without dependencies
is not wrapped at all, so it costs nothing; an ``async`` handler whose
dependencies are plain functions gets a sync wrapper that hands back the
handler's own coroutine, so it adds no coroutine level.

A generator dependency (``yield``, sync or async) is set up before the handler
and closed after it, in reverse order, also when the handler or a later
dependency raises, and on cancellation: the error is raised at its ``yield``
(as FastAPI does since 0.106), so it can roll back. It may replace the error by
raising another, but cannot swallow it: the call fails either way.

Where dependencies run: with a sync handler and sync dependencies, all in the
worker thread the handler runs in (on the loop with ``run_in_thread=False``);
otherwise on the event loop, the sync ones called directly (keep them quick, or
make them ``async``), and a sync handler still in a worker thread.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin

from .hints import is_context, resolve_hints

__all__ = ["Dependency", "Depends", "Plan", "Resolved", "bind", "depends_of", "plan"]

_FUNC, _ASYNC, _GEN, _AGEN = range(4)
_CTX = -1  # a step argument that receives the Context, not another step's value
# The keyword the wrapper takes the Context under when only a dependency wants it.
CONTEXT_KEY = "mcpkit_dependency_context__"


# Plain classes, not dataclasses: every server imports this module (through .signature),
# and four dataclasses cost ~2 ms of start-up (issue 18's budget).
class Dependency:
    """The marker :func:`Depends` returns; mcpkit reads it at registration."""

    __slots__ = ("dependency", "use_cache")

    def __init__(self, dependency: Callable[..., Any] | None, use_cache: bool = True) -> None:
        self.dependency = dependency
        self.use_cache = use_cache

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Dependency):
            return NotImplemented
        return (self.dependency, self.use_cache) == (other.dependency, other.use_cache)

    def __hash__(self) -> int:
        return hash((id(self.dependency), self.use_cache))

    def __repr__(self) -> str:
        shown = _label(self.dependency) if self.dependency is not None else ""
        return f"Depends({shown}{'' if self.use_cache else ', use_cache=False'})"


def Depends(  # named as FastAPI's and FastMCP's, which users know
    dependency: Callable[..., Any] | None = None, *, use_cache: bool = True
) -> Any:
    """Mark a parameter as resolved per call by ``dependency`` (hidden from clients).

    ``dependency`` is a function, an ``async`` function, a generator or async
    generator function (cleanup after the handler), or a class (``Depends()``
    alone: the parameter's annotated class). Its own parameters may be a
    ``Context`` and further ``Depends``; any other needs a default. Within one
    request a dependency is called once however often it is used, unless
    ``use_cache=False``. Typed ``Any`` so that ``db: DB = Depends(get_db)``
    type-checks.
    """
    return Dependency(dependency, use_cache)


def depends_of(annotation: Any, default: Any) -> Dependency | None:
    """The :class:`Dependency` marking a parameter (in ``Annotated[...]`` or as its
    default), or None."""
    if isinstance(default, Dependency):
        return default
    if get_origin(annotation) is Annotated:
        for extra in reversed(get_args(annotation)[1:]):
            if isinstance(extra, Dependency):
                return extra
    return None


class _Step:
    __slots__ = ("args", "fn", "kind")

    def __init__(
        self, fn: Callable[..., Any], kind: int, args: tuple[tuple[str, int], ...]
    ) -> None:
        self.fn = fn
        self.kind = kind
        self.args = args  # parameter name -> step index, or _CTX


class Plan:
    """A handler's dependencies, flattened at registration: steps in call order."""

    __slots__ = ("needs_context", "steps", "targets")

    def __init__(
        self,
        steps: tuple[_Step, ...],
        targets: tuple[tuple[str, int], ...],  # handler parameter -> step index
        needs_context: bool,
    ) -> None:
        self.steps = steps
        self.targets = targets
        self.needs_context = needs_context

    @property
    def params(self) -> tuple[str, ...]:
        """The handler's hidden (dependency) parameters."""
        return tuple(name for name, _ in self.targets)


def plan(found: list[tuple[str, Dependency, Any]], problems: list[str]) -> Plan | None:
    """The plan for a handler's ``(parameter, marker, annotation)`` list; None (and a
    problem naming the parameter) when one cannot be resolved."""
    builder = _Builder(problems)
    targets = []
    for name, marker, annotation in found:
        index = builder.add(marker, annotation, f"parameter {name!r}")
        if index is not None:
            targets.append((name, index))
    if len(targets) < len(found):
        return None
    return Plan(tuple(builder.steps), tuple(targets), builder.needs_context)


class _Builder:
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        self.steps: list[_Step] = []
        self.cached: dict[int, int] = {}  # id(dependency) -> its step (kept alive by steps)
        self.stack: list[Callable[..., Any]] = []  # being resolved: a cycle comes back here
        self.needs_context = False

    def add(self, marker: Dependency, annotation: Any, where: str) -> int | None:
        dep = marker.dependency
        if dep is None:  # Depends(): the annotated class itself, as FastAPI allows
            base = get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation
            if not isinstance(base, type):
                self.problems.append(
                    f"{where}: Depends() without a dependency needs a class annotation to "
                    f"call, not {base!r}; pass the function, as Depends(get_value)"
                )
                return None
            dep = base
        if not callable(dep):
            self.problems.append(
                f"{where}: Depends({dep!r}): a dependency must be a function, an async "
                f"function, a generator function or a class; {type(dep).__name__} is not callable"
            )
            return None
        for i, seen in enumerate(self.stack):
            if seen is dep:
                cycle = " -> ".join(_label(d) for d in [*self.stack[i:], dep])
                self.problems.append(f"{where}: dependency cycle: {cycle}")
                return None
        if marker.use_cache and id(dep) in self.cached:
            return self.cached[id(dep)]
        self.stack.append(dep)
        try:
            args = self._arguments(dep, where)
        finally:
            self.stack.pop()
        if args is None:
            return None
        self.steps.append(_Step(dep, _kind(dep), args))
        index = len(self.steps) - 1
        if marker.use_cache:
            self.cached[id(dep)] = index
        return index

    def _arguments(self, dep: Callable[..., Any], where: str) -> tuple[tuple[str, int], ...] | None:
        label = f"{where}: dependency {_label(dep)}"
        try:
            sig = inspect.signature(dep)
        except (TypeError, ValueError) as exc:
            self.problems.append(f"{label}: cannot read its signature: {exc}")
            return None
        hints = _hints(dep, sig, self.problems, label)
        args: list[tuple[str, int]] = []
        ok = True
        for name, param in sig.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue  # receive nothing
            annotation = hints.get(name, param.annotation)
            if param.kind is param.POSITIONAL_ONLY:
                self.problems.append(
                    f"{label}: parameter {name!r} is positional-only, but dependencies "
                    "receive their values by name; remove the '/'"
                )
                ok = False
            elif (marker := depends_of(annotation, param.default)) is not None:
                index = self.add(marker, annotation, f"{label}, parameter {name!r}")
                if index is None:
                    ok = False
                else:
                    args.append((name, index))
            elif is_context(annotation):
                args.append((name, _CTX))
                self.needs_context = True
            elif param.default is param.empty:
                self.problems.append(
                    f"{label}: parameter {name!r} has no default, and a dependency receives "
                    "only a Context and Depends(...) values; give it a default or a Depends"
                )
                ok = False
        return tuple(args) if ok else None


def _hints(
    dep: Callable[..., Any], sig: inspect.Signature, problems: list[str], label: str
) -> dict[str, Any]:
    """``dep``'s resolved annotations (a class's from ``__init__``, an instance's from
    ``__call__``); a problem naming each that does not resolve."""
    target: Any = dep
    if isinstance(dep, type):
        target = dep.__init__  # type: ignore[misc]
    elif not (inspect.isfunction(dep) or inspect.ismethod(dep)) and hasattr(dep, "__call__"):  # noqa: B004
        target = dep if hasattr(dep, "func") else type(dep).__call__  # a partial keeps func's
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:
        unresolved: list[str] = []
        hints = resolve_hints(target, sig, unresolved)
        problems.extend(f"{label}: {p}" for p in unresolved)
        return hints


def _kind(dep: Callable[..., Any]) -> int:
    if isinstance(dep, type):
        return _FUNC
    for fn in (dep, getattr(dep, "__call__", None)):  # noqa: B004 (callable instances)
        if inspect.isasyncgenfunction(fn):
            return _AGEN
        if inspect.isgeneratorfunction(fn):
            return _GEN
        if inspect.iscoroutinefunction(fn):
            return _ASYNC
    return _FUNC


def _label(dep: object) -> str:
    return str(getattr(dep, "__qualname__", None) or getattr(dep, "__name__", None) or dep)


# -- calling: the wrapper registered in the handler's place -----------------------------------


class Resolved:
    """What :func:`bind` gives the caller: the function to call and how to call it."""

    __slots__ = ("context_param", "fn", "is_async")

    def __init__(self, fn: Callable[..., Any], context_param: str | None, is_async: bool) -> None:
        self.fn = fn
        self.context_param = context_param
        self.is_async = is_async


def bind(
    fn: Callable[..., Any],
    deps: Plan,
    *,
    is_async: bool,
    context_param: str | None,
    run_in_thread: bool = True,
) -> Resolved:
    """The wrapper that resolves ``deps`` and calls ``fn`` (see the module docstring)."""
    steps, targets = deps.steps, deps.targets
    kinds = {s.kind for s in steps}
    # Where the Context comes from: the handler's own parameter, else a key of our own.
    ctx_key = context_param or (CONTEXT_KEY if deps.needs_context else None)
    drop = ctx_key if context_param is None else None  # not the handler's to receive

    simple = kinds <= {_FUNC} and not any(s.args for s in steps)
    if simple and len(steps) == len(targets):  # each a function of nothing, used once
        pairs = tuple((name, steps[index].fn) for name, index in targets)
        if len(pairs) == 1:  # the common case, as cheap as it gets: one call, one item
            [(name, dep)] = pairs

            def call_one(**kwargs: Any) -> Any:
                kwargs[name] = dep()
                return fn(**kwargs)

            return Resolved(_named(call_one, fn), ctx_key, is_async)

        def call_each(**kwargs: Any) -> Any:
            for key, each in pairs:
                kwargs[key] = each()
            return fn(**kwargs)

        return Resolved(_named(call_each, fn), ctx_key, is_async)

    if kinds <= {_FUNC}:  # plain functions: no cleanup, no awaiting

        def call_plain(**kwargs: Any) -> Any:
            ctx = kwargs.pop(drop, None) if drop is not None else kwargs.get(ctx_key)  # type: ignore[arg-type]
            values = _enter(steps, ctx, None)
            for name, index in targets:
                kwargs[name] = values[index]
            return fn(**kwargs)  # an async handler's coroutine is awaited by the caller

        return Resolved(_named(call_plain, fn), ctx_key, is_async)

    if not is_async and kinds <= {_FUNC, _GEN}:  # all sync: in the handler's thread

        def call_sync(**kwargs: Any) -> Any:
            ctx = kwargs.pop(drop, None) if drop is not None else kwargs.get(ctx_key)  # type: ignore[arg-type]
            exits: list[Any] = []
            try:
                values = _enter(steps, ctx, exits)
                for name, index in targets:
                    kwargs[name] = values[index]
                result = fn(**kwargs)
            except BaseException as exc:
                error = _exit(exits, exc)
                if error is exc:
                    raise
                raise error or exc  # noqa: B904 (its context is the handler's error already)
            error = _exit(exits, None)
            if error is not None:
                raise error
            return result

        return Resolved(_named(call_sync, fn), ctx_key, False)

    from .context import run_sync

    awaits = bool(kinds & {_ASYNC, _AGEN})  # else set-up and cleanup need no coroutine

    async def call_async(**kwargs: Any) -> Any:
        ctx = kwargs.pop(drop, None) if drop is not None else kwargs.get(ctx_key)  # type: ignore[arg-type]
        exits: list[Any] = []
        try:
            values = await _enter_async(steps, ctx, exits) if awaits else _enter(steps, ctx, exits)
            for name, index in targets:
                kwargs[name] = values[index]
            if is_async:
                result = await fn(**kwargs)
            elif run_in_thread:
                result = await run_sync(fn, kwargs, ctx)
            else:
                result = fn(**kwargs)
        except BaseException as exc:  # cancellation too: the generators still close
            error = await _exit_async(exits, exc) if awaits else _exit(exits, exc)
            if error is exc:
                raise
            raise error or exc  # noqa: B904 (its context is the handler's error already)
        error = await _exit_async(exits, None) if awaits else _exit(exits, None)
        if error is not None:
            raise error
        return result

    return Resolved(_named(call_async, fn), ctx_key, True)


def _named(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        try:
            setattr(wrapper, attr, getattr(fn, attr))
        except AttributeError:
            pass
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def _enter(steps: tuple[_Step, ...], ctx: Any, exits: list[Any] | None) -> list[Any]:
    """Run sync steps in order; each generator entered is appended to ``exits``."""
    values: list[Any] = []
    for step in steps:
        if step.args:
            value = step.fn(**{n: ctx if i == _CTX else values[i] for n, i in step.args})
        else:
            value = step.fn()
        if step.kind == _GEN:
            gen = value
            value = _first(gen)
            assert exits is not None
            exits.append(gen)
        values.append(value)
    return values


async def _enter_async(steps: tuple[_Step, ...], ctx: Any, exits: list[Any]) -> list[Any]:
    values: list[Any] = []
    for step in steps:
        if step.args:
            value = step.fn(**{n: ctx if i == _CTX else values[i] for n, i in step.args})
        else:
            value = step.fn()
        kind = step.kind
        if kind == _ASYNC:
            value = await value
        elif kind == _GEN:
            gen = value
            value = _first(gen)
            exits.append(gen)
        elif kind == _AGEN:
            gen = value
            value = await anext(gen, _DONE)
            if value is _DONE:
                raise RuntimeError(f"dependency {_label(gen)} did not yield a value")
            exits.append(gen)
        values.append(value)
    return values


_DONE: Any = object()  # next()'s default: a finished generator without a StopIteration raised


def _first(gen: Any) -> Any:
    value = next(gen, _DONE)
    if value is _DONE:
        raise RuntimeError(f"dependency {_label(gen)} did not yield a value")
    return value


def _exit(exits: list[Any], error: BaseException | None) -> BaseException | None:
    """Close sync generators, last entered first; the error the call ends with, if any.

    ``error`` is raised at each one's ``yield``; one that raises another error passes
    that on to the rest (as ``contextlib.ExitStack`` does); one that returns does not
    clear it (the call fails all the same).
    """
    while exits:
        error = _close(exits.pop(), error)
    return error


async def _exit_async(exits: list[Any], error: BaseException | None) -> BaseException | None:
    while exits:
        gen = exits.pop()
        if not inspect.isasyncgen(gen):
            error = _close(gen, error)
            continue
        try:
            if error is None:
                if await anext(gen, _DONE) is _DONE:
                    continue
            else:
                await gen.athrow(error)
        except StopAsyncIteration:
            continue
        except BaseException as exc:
            error = exc
            continue
        await gen.aclose()
        error = RuntimeError(f"dependency {_label(gen)} yielded more than once")
    return error


def _close(gen: Any, error: BaseException | None) -> BaseException | None:
    try:
        if error is None:
            if next(gen, _DONE) is _DONE:
                return None
        else:
            gen.throw(error)
    except StopIteration:
        return error
    except BaseException as exc:
        return exc
    gen.close()
    return RuntimeError(f"dependency {_label(gen)} yielded more than once")
