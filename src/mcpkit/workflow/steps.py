"""Typed steps: a function with an input schema and an output schema, both checked.

A step's input is validated against ``input_schema`` before it runs (so it
receives, say, a pydantic model instance) and its return value against
``output_schema`` after (so the next step, and the run's record, get plain
JSON data). Schemas are any type pydantic can validate; their validators are
built once, when the step is created.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_type_hints, overload

from pydantic import TypeAdapter, ValidationError

from ..errors import ConfigurationError, ToolError
from ..server.context import current_context, run_sync
from ..server.signature import format_validation_error

if TYPE_CHECKING:
    from ..server.context import Context

__all__ = ["Step", "StepContext", "StepResult", "StepStatus", "step"]

StepStatus = Literal["success", "failed", "skipped"]

_ID_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_ANY: TypeAdapter[Any] = TypeAdapter(Any)


@dataclass(frozen=True, slots=True, kw_only=True)
class StepResult:
    """How one step ended: ``output`` on success, ``error`` on failure."""

    status: StepStatus
    output: Any = None
    error: BaseException | None = None

    def to_dict(self, error_text: Callable[[BaseException], str] = str) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status}
        if self.status == "success":
            out["output"] = self.output
        elif self.error is not None:
            out["error"] = error_text(self.error)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class StepContext:
    """What a step may ask about its run (declare a parameter annotated ``StepContext``)."""

    run_id: str
    workflow_id: str
    input_data: Any  # the run's validated input, as JSON data
    results: Mapping[str, StepResult]  # the steps finished so far

    def output_of(self, step_id: str) -> Any:
        """The output of an earlier successful step; ``KeyError`` when there is none."""
        result = self.results.get(step_id)
        if result is None or result.status != "success":
            raise KeyError(f"step {step_id!r} has no output in this run")
        return result.output

    @property
    def mcp(self) -> Context | None:
        """The MCP request's context when the run serves a ``run_*`` tool call."""
        return current_context()


def _adapter(schema: Any) -> TypeAdapter[Any] | None:
    if schema is None:
        return None
    return TypeAdapter(schema)


class Step:
    """One unit of work: ``execute(input)`` (sync or async) with typed input and output.

    ``execute`` takes the validated input as its first parameter and, when it
    declares one annotated :class:`StepContext`, the run's context.
    """

    def __init__(
        self,
        *,
        id: str,
        execute: Callable[..., Any],
        input_schema: Any = None,
        output_schema: Any = None,
        description: str | None = None,
    ) -> None:
        if not isinstance(id, str) or not _ID_RE.match(id):
            raise ConfigurationError(f"step id {id!r}: use 1-128 characters of [A-Za-z0-9_.-]")
        self.id = id
        self.description = description
        self.execute = execute
        self.input_schema = input_schema
        self.output_schema = output_schema
        try:
            self._input = _adapter(input_schema)
            self._output = _adapter(output_schema)
        except Exception as exc:
            raise ConfigurationError(f"step {id!r}: cannot build its schemas: {exc}") from exc
        self._context_param, self._takes_input = _inspect(execute, id)
        self._is_async = inspect.iscoroutinefunction(execute) or inspect.iscoroutinefunction(
            getattr(execute, "__call__", None)  # noqa: B004 (async callable objects)
        )

    def __repr__(self) -> str:
        return f"Step(id={self.id!r})"

    def parse_input(self, data: Any) -> Any:
        """``data`` validated against the input schema (as the step, or its condition, sees it)."""
        if self._input is None:
            return data
        try:
            return self._input.validate_python(data)
        except ValidationError as exc:
            raise ToolError(
                f"step {self.id!r}: its input does not match its input schema: "
                f"{format_validation_error(exc, root='(input)')}"
            ) from None

    async def run(self, data: Any, context: StepContext) -> Any:
        """Validate ``data``, execute, validate the output; returns the output as JSON data."""
        value = self.parse_input(data)
        args: tuple[Any, ...] = (value,) if self._takes_input else ()
        kwargs: dict[str, Any] = {}
        if self._context_param is not None:
            kwargs[self._context_param] = context
        if self._is_async:
            output = await self.execute(*args, **kwargs)
        else:
            call = self.execute
            output = await run_sync(lambda: call(*args, **kwargs), {}, current_context())
        return self.dump_output(output)

    def dump_output(self, output: Any) -> Any:
        if self._output is None:
            return _ANY.dump_python(output, mode="json")
        try:
            checked = self._output.validate_python(output)
        except ValidationError as exc:
            raise ToolError(
                f"step {self.id!r}: it returned a value that does not match its output schema: "
                f"{format_validation_error(exc, root='(output)')}"
            ) from None
        return self._output.dump_python(checked, mode="json")


def _inspect(fn: Callable[..., Any], step_id: str) -> tuple[str | None, bool]:
    """(the ``StepContext`` parameter's name, whether ``fn`` takes the input)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"step {step_id!r}: cannot inspect execute: {exc}") from exc
    try:
        hints = get_type_hints(fn)
    except Exception:
        hints = {}
    context_param = None
    others = []
    for name, param in sig.parameters.items():
        annotation = hints.get(name, param.annotation)
        if annotation is StepContext or annotation == "StepContext":
            context_param = name
        elif param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            others.append(param)
    if len(others) > 1 and any(p.default is p.empty for p in others[1:]):
        raise ConfigurationError(
            f"step {step_id!r}: execute takes one input parameter (and optionally a StepContext); "
            f"got {[p.name for p in others]}"
        )
    return context_param, bool(others)


def _schemas_from(fn: Callable[..., Any]) -> tuple[Any, Any]:
    """(input type, output type) from ``fn``'s annotations (first non-context parameter)."""
    hints = get_type_hints(fn)
    input_type = None
    for name, param in inspect.signature(fn).parameters.items():
        annotation = hints.get(name)
        if annotation is StepContext:
            continue
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            input_type = annotation
            break
    output_type = hints.get("return")
    if output_type is type(None):
        output_type = None
    return input_type, output_type


@overload
def step(fn: Callable[..., Any], /) -> Step: ...
@overload
def step(
    fn: None = None,
    /,
    *,
    id: str | None = None,
    description: str | None = None,
    input_schema: Any = None,
    output_schema: Any = None,
) -> Callable[[Callable[..., Any]], Step]: ...
def step(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    id: str | None = None,
    description: str | None = None,
    input_schema: Any = None,
    output_schema: Any = None,
) -> Step | Callable[[Callable[..., Any]], Step]:
    """Make a :class:`Step` of a function; its annotations give the schemas.

    >>> @step
    ... async def double(n: int) -> int:
    ...     return n * 2
    """

    def make(f: Callable[..., Any]) -> Step:
        step_id = id or getattr(f, "__name__", None)
        if not step_id:
            raise ConfigurationError("a step needs an id: pass id=... for callables without a name")
        try:
            derived_in, derived_out = _schemas_from(f)
        except Exception as exc:
            raise ConfigurationError(
                f"step {step_id!r}: cannot read its annotations: {exc}"
            ) from exc
        doc = inspect.getdoc(f)
        return Step(
            id=step_id,
            execute=f,
            input_schema=input_schema if input_schema is not None else derived_in,
            output_schema=output_schema if output_schema is not None else derived_out,
            description=description if description is not None else doc,
        )

    return make(fn) if fn is not None else make
