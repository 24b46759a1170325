"""Workflows: typed steps run in sequence, in parallel and on a branch condition.

A workflow is a list of entries, each fed the previous entry's output:

- ``then(step)``: one step;
- ``parallel([a, b])``: the steps run concurrently on the same input; the
  output is ``{"a": <a's output>, "b": <b's output>}``;
- ``branch([(condition, a), (condition, b)])``: every step whose condition
  holds for the input runs (concurrently); a condition sees the input as its
  step would (validated against the step's input schema). The output maps
  the ids of the steps that ran to their outputs; the others are recorded as
  ``skipped``.

``wf.create_run().start(input_data=...)`` validates the input against
``input_schema``, runs the entries, validates the last output against
``output_schema`` and returns a :class:`WorkflowResult`: ``status``
(``success`` / ``failed``), ``result``, each step's status and output, and on
failure the error. A failing step stops the run: nothing after it runs. A run
never raises for a step's failure; cancelling the task that awaits it does
cancel it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from pydantic import TypeAdapter, ValidationError

from ..errors import ConfigurationError, ToolError
from ..server.signature import format_validation_error
from .steps import Step, StepContext, StepResult, step

__all__ = ["Condition", "Workflow", "WorkflowResult", "WorkflowRun"]

log = logging.getLogger("mcpkit.workflow")

Condition: TypeAlias = Callable[[Any], "bool | Awaitable[bool]"]
StepCallback: TypeAlias = Callable[[str, StepResult], "Awaitable[None] | None"]
StepLike: TypeAlias = "Step | Workflow | Callable[..., Any]"


@dataclass(frozen=True, slots=True)
class _Then:
    step: Step


@dataclass(frozen=True, slots=True)
class _Parallel:
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class _Branch:
    branches: tuple[tuple[Condition, Step], ...]


_Entry: TypeAlias = _Then | _Parallel | _Branch


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowResult:
    """The outcome of a run."""

    status: Literal["success", "failed"]
    run_id: str
    steps: dict[str, StepResult] = field(default_factory=dict)
    result: Any = None
    error: BaseException | None = None

    def to_dict(self, error_text: Callable[[BaseException], str] = str) -> dict[str, Any]:
        """JSON data: ``status``, ``result`` or ``error``, and ``steps``."""
        out: dict[str, Any] = {"status": self.status}
        if self.status == "success":
            out["result"] = self.result
        elif self.error is not None:
            out["error"] = error_text(self.error)
        out["steps"] = {sid: r.to_dict(error_text) for sid, r in self.steps.items()}
        return out


def _as_step(item: StepLike) -> Step:
    if isinstance(item, Step):
        return item
    if isinstance(item, Workflow):
        return item.as_step()
    if callable(item):
        return step(item)
    raise ConfigurationError(f"{item!r} is not a step: pass a Step, a Workflow or a function")


class Workflow:
    """A typed workflow, as in Mastra's ``createWorkflow``.

    >>> wf = Workflow(id="double-then-add", description="...", input_schema=int)
    >>> wf.then(double).then(add_one).commit()                       # doctest: +SKIP
    >>> result = await wf.create_run().start(input_data=20)          # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        id: str,
        description: str | None = None,
        input_schema: Any = None,
        output_schema: Any = None,
        steps: Sequence[StepLike] = (),
    ) -> None:
        if not isinstance(id, str) or not id:
            raise ConfigurationError("a workflow needs a non-empty id")
        self.id = id
        self.description = description
        self.input_schema = input_schema
        self.output_schema = output_schema
        try:
            self._input: TypeAdapter[Any] | None = (
                TypeAdapter(input_schema) if input_schema is not None else None
            )
            self._output: TypeAdapter[Any] | None = (
                TypeAdapter(output_schema) if output_schema is not None else None
            )
        except Exception as exc:
            raise ConfigurationError(f"workflow {id!r}: cannot build its schemas: {exc}") from exc
        self._entries: list[_Entry] = []
        self._ids: set[str] = set()
        self._committed = False
        for item in steps:
            self.then(item)

    def __repr__(self) -> str:
        return f"Workflow(id={self.id!r}, steps={self.step_ids})"

    # -- building ----------------------------------------------------------------------------
    def _claim(self, steps: Sequence[Step]) -> None:
        if self._committed:
            raise ConfigurationError(f"workflow {self.id!r} is committed: build a new one")
        for s in steps:
            if s.id in self._ids:
                raise ConfigurationError(
                    f"workflow {self.id!r}: step id {s.id!r} is used twice; results are kept by id"
                )
            self._ids.add(s.id)

    def then(self, item: StepLike) -> Workflow:
        """Run ``item`` on the previous output."""
        s = _as_step(item)
        self._claim([s])
        self._entries.append(_Then(s))
        return self

    def parallel(self, items: Sequence[StepLike]) -> Workflow:
        """Run ``items`` concurrently on the previous output; their outputs keyed by id."""
        steps = [_as_step(i) for i in items]
        if not steps:
            raise ConfigurationError(f"workflow {self.id!r}: parallel() needs at least one step")
        self._claim(steps)
        self._entries.append(_Parallel(tuple(steps)))
        return self

    def branch(self, branches: Sequence[tuple[Condition, StepLike]]) -> Workflow:
        """Run each step whose condition holds for the previous output (concurrently)."""
        pairs = [(cond, _as_step(item)) for cond, item in branches]
        if not pairs:
            raise ConfigurationError(f"workflow {self.id!r}: branch() needs at least one branch")
        for cond, s in pairs:
            if not callable(cond):
                raise ConfigurationError(
                    f"workflow {self.id!r}: the condition of step {s.id!r} is not callable"
                )
        self._claim([s for _, s in pairs])
        self._entries.append(_Branch(tuple(pairs)))
        return self

    def commit(self) -> Workflow:
        """Finish building; a committed workflow cannot change."""
        if not self._entries:
            raise ConfigurationError(f"workflow {self.id!r} has no steps")
        self._committed = True
        return self

    @property
    def step_ids(self) -> list[str]:
        ids: list[str] = []
        for entry in self._entries:
            if isinstance(entry, _Then):
                ids.append(entry.step.id)
            elif isinstance(entry, _Parallel):
                ids.extend(s.id for s in entry.steps)
            else:
                ids.extend(s.id for _, s in entry.branches)
        return ids

    def input_json_schema(self) -> dict[str, Any]:
        """The JSON Schema of the input (an open object when there is no ``input_schema``)."""
        if self._input is None:
            return {"type": "object"}
        return self._input.json_schema()

    def as_step(self) -> Step:
        """This workflow as a step of another; it fails when the inner run fails."""

        async def run_inner(data: Any) -> Any:
            result = await self.create_run().start(input_data=data)
            if result.status == "failed":
                assert result.error is not None
                raise result.error
            return result.result

        return Step(
            id=self.id,
            execute=run_inner,
            description=self.description,
        )

    # -- running -----------------------------------------------------------------------------
    def create_run(self, *, run_id: str | None = None) -> WorkflowRun:
        if not self._entries:
            raise ConfigurationError(f"workflow {self.id!r} has no steps")
        self._committed = True
        return WorkflowRun(self, run_id or str(uuid.uuid4()))

    async def run(self, input: Any) -> WorkflowResult:
        """Run once on ``input`` (the duck-typed workflow interface)."""
        return await self.create_run().start(input_data=input)


class WorkflowRun:
    """One execution of a workflow; start it once."""

    def __init__(self, workflow: Workflow, run_id: str) -> None:
        self.workflow = workflow
        self.run_id = run_id
        self.status: Literal["pending", "running", "success", "failed"] = "pending"
        self.result: WorkflowResult | None = None
        self._results: dict[str, StepResult] = {}
        self._input: Any = None

    async def start(
        self, *, input_data: Any = None, on_step: StepCallback | None = None
    ) -> WorkflowResult:
        """Run every entry; ``on_step(step_id, result)`` is called as each step ends."""
        if self.status != "pending":
            raise ConfigurationError(f"run {self.run_id!r} was started already")
        self.status = "running"
        wf = self.workflow
        data = input_data
        if wf._input is not None:
            try:
                data = wf._input.dump_python(wf._input.validate_python(input_data), mode="json")
            except ValidationError as exc:
                return self._finish(
                    None,
                    ToolError(
                        f"workflow {wf.id!r}: its input does not match its input schema: "
                        f"{format_validation_error(exc, root='(input)')}"
                    ),
                )
        self._input = data
        for entry in wf._entries:
            if isinstance(entry, _Then):
                pairs = [(entry.step, True)]
            elif isinstance(entry, _Parallel):
                pairs = [(s, True) for s in entry.steps]
            else:
                try:
                    pairs = [
                        (s, await _holds(cond, s.parse_input(data))) for cond, s in entry.branches
                    ]
                except Exception as exc:
                    return self._finish(None, exc)
            outputs, error = await self._run_all(pairs, data, on_step)
            if error is not None:
                return self._finish(None, error)
            data = outputs[entry.step.id] if isinstance(entry, _Then) else outputs
        if wf._output is not None:
            try:
                data = wf._output.dump_python(wf._output.validate_python(data), mode="json")
            except ValidationError as exc:
                return self._finish(
                    None,
                    ToolError(
                        f"workflow {wf.id!r}: its result does not match its output schema: "
                        f"{format_validation_error(exc, root='(result)')}"
                    ),
                )
        return self._finish(data, None)

    async def _run_all(
        self, pairs: list[tuple[Step, bool]], data: Any, on_step: StepCallback | None
    ) -> tuple[dict[str, Any], BaseException | None]:
        """Run the chosen steps concurrently; (outputs by id, the first error in order)."""
        chosen = [s for s, run in pairs if run]
        context = StepContext(
            run_id=self.run_id,
            workflow_id=self.workflow.id,
            input_data=self._input,
            results=dict(self._results),
        )

        async def one(s: Step) -> StepResult:
            try:
                output = await s.run(data, context)
            except Exception as exc:
                result = StepResult(status="failed", error=exc)
            else:
                result = StepResult(status="success", output=output)
            self._results[s.id] = result
            await _notify(on_step, s.id, result)
            return result

        if len(chosen) == 1:
            results = [await one(chosen[0])]
        else:
            results = list(await asyncio.gather(*(one(s) for s in chosen)))
        for s, run in pairs:
            if not run:
                skipped = StepResult(status="skipped")
                self._results[s.id] = skipped
                await _notify(on_step, s.id, skipped)
        error = next((r.error for r in results if r.status == "failed"), None)
        return {s.id: r.output for s, r in zip(chosen, results, strict=True)}, error

    def _finish(self, result: Any, error: BaseException | None) -> WorkflowResult:
        self.status = "failed" if error is not None else "success"
        self.result = WorkflowResult(
            status=self.status,
            run_id=self.run_id,
            # In the workflow's order, whatever order concurrent steps finished in.
            steps={
                sid: self._results[sid] for sid in self.workflow.step_ids if sid in self._results
            },
            result=result if error is None else None,
            error=error,
        )
        return self.result


async def _holds(condition: Condition, data: Any) -> bool:
    verdict = condition(data)
    if inspect.isawaitable(verdict):
        verdict = await verdict
    return bool(verdict)


async def _notify(on_step: StepCallback | None, step_id: str, result: StepResult) -> None:
    if on_step is None:
        return
    try:
        outcome = on_step(step_id, result)
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:  # a progress report must not change the run's outcome
        log.debug("on_step callback failed for step %r", step_id, exc_info=True)
