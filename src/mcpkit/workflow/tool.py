"""Workflows as tools: ``MCPServer(workflows={"etl": wf})`` makes tool ``run_etl``.

The tool's input schema is the workflow's ``input_schema``; calling it runs
the workflow once (Mastra's ``workflow.createRun().start({inputData})``)
and returns the run's result as JSON text and ``structuredContent``:
``status``, ``result`` or ``error``, and each step's status and output. A
failed run is an ``isError`` result, so the model sees that it failed. When
the caller asked for progress, a ``notifications/progress`` follows each
finished step (2025-11-25 basic/utilities/progress), ``total`` being the
number of steps.

Besides :class:`mcpkit.workflow.Workflow`, any object with a ``description``,
an ``input_schema`` (a pydantic model or a JSON-Schema dict) and an async
``run(input)`` works; it gets the validated input (a model instance, or a
dict) and its return value is reported as the ``result``.

It lives beside the workflow engine (:mod:`mcpkit.workflow`) and, like the
agent adapters, builds on the server core's public seams (a ``ToolDefinition``
the server adds); ``MCPServer(workflows=...)`` imports it on first use. A native
workflow is recognised by its shape (:class:`SteppedWorkflow`), not its class,
which is what lets its runs report progress per step.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, TypeAdapter

from ..errors import (
    ConfigurationError,
)
from ..protocol.error_answers import tool_error_text
from ..server.content import ToolResult, jsonable
from ..server.context import Context, run_sync
from ..server.tools import ToolDefinition, create_tool

__all__ = ["RUN_SCHEMA", "SteppedWorkflow", "tool_name_for_workflow", "workflow_tool"]

RUN_PREFIX = "run_"

#: What every ``run_*`` tool returns.
RUN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["success", "failed"]},
        "result": {"description": "The workflow's result (on success)."},
        "error": {"type": "string", "description": "Why the run failed."},
        "steps": {
            "type": "object",
            "description": "Each step's status (success, failed, skipped) and output.",
            "additionalProperties": {"type": "object"},
        },
    },
    "required": ["status"],
}


@runtime_checkable
class SteppedWorkflow(Protocol):
    """A workflow made of steps, such as :class:`mcpkit.workflow.Workflow`.

    Its runs (``create_run().start(input_data=..., on_step=...)``) report each
    finished step, so the ``run_*`` tool can send progress; its outcome has
    ``to_dict(error_text)``.
    """

    @property
    def step_ids(self) -> list[str]: ...

    def input_json_schema(self) -> dict[str, Any]: ...

    def create_run(self) -> Any: ...


def tool_name_for_workflow(key: str) -> str:
    return f"{RUN_PREFIX}{key}"


def _input_schema(key: str, workflow: Any) -> type[BaseModel] | dict[str, Any]:
    """What the tool validates arguments with: a model class, or a JSON-Schema object."""
    schema = getattr(workflow, "input_schema", None)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    if isinstance(workflow, SteppedWorkflow):
        json_schema = workflow.input_json_schema()
    elif isinstance(schema, dict):
        json_schema = schema
    elif schema is None:
        raise ConfigurationError(
            f"workflow {key!r}: it has no input_schema (a pydantic model or a JSON-Schema dict)"
        )
    else:
        try:
            json_schema = TypeAdapter(schema).json_schema()
        except Exception as exc:
            raise ConfigurationError(
                f"workflow {key!r}: cannot build a JSON Schema from its input_schema: {exc}"
            ) from exc
    if json_schema.get("type") != "object":
        raise ConfigurationError(
            f"workflow {key!r}: its input_schema must describe a JSON object, since MCP tool "
            f"arguments are an object (got type {json_schema.get('type')!r})"
        )
    return json_schema


def workflow_tool(key: str, workflow: Any) -> ToolDefinition:
    """The ``run_<key>`` tool for ``workflow``; raises ``ConfigurationError`` naming ``key``."""
    description = getattr(workflow, "description", None)
    if not isinstance(description, str) or not description.strip():
        raise ConfigurationError(
            f"workflow {key!r}: its description is missing or empty; MCP clients choose tools "
            "by their description, so give the workflow one"
        )
    native = isinstance(workflow, SteppedWorkflow)
    run: Any = getattr(workflow, "run", None)
    if not native and not callable(run):
        raise ConfigurationError(
            f"workflow {key!r}: {type(workflow).__name__} is not a workflow: it needs "
            "description, input_schema and an async run(input)"
        )
    schema = _input_schema(key, workflow)
    name = tool_name_for_workflow(key)
    model = schema if isinstance(schema, type) else None

    async def execute(ctx: Context, **arguments: Any) -> ToolResult:
        server = ctx.session.server

        def error_text(exc: BaseException) -> str:
            if isinstance(exc, Exception):
                text = tool_error_text(exc, tool=name, debug=server.debug)
                if text is not None:
                    return text
            return str(exc) or type(exc).__name__

        if native:
            assert isinstance(workflow, SteppedWorkflow)
            total = len(workflow.step_ids)
            done = 0

            async def report(step_id: str, result: Any) -> None:
                nonlocal done
                done += 1
                await ctx.progress(done, total, f"step '{step_id}' {result.status}")

            outcome = await workflow.create_run().start(input_data=arguments, on_step=report)
            data = outcome.to_dict(error_text)
        else:
            value: Any = model.model_validate(arguments) if model is not None else arguments
            try:
                if inspect.iscoroutinefunction(run):
                    returned = await run(value)
                else:
                    returned = await run_sync(functools.partial(run, value), {}, ctx)
                    if inspect.isawaitable(returned):
                        returned = await returned
            except Exception as exc:
                if tool_error_text(exc, tool=name, debug=server.debug) is None:
                    raise  # a deliberate protocol error
                data = {"status": "failed", "error": error_text(exc)}
            else:
                data = _run_result(returned, error_text)
        return ToolResult(structured_content=data, is_error=data.get("status") == "failed")

    return create_tool(
        id=name,
        description=f"Run workflow '{key}'. Workflow description: {description.strip()}",
        input_schema=schema,
        output_schema=RUN_SCHEMA,
        execute=execute,
    )


def _run_result(value: Any, error_text: Any) -> dict[str, Any]:
    """A duck-typed workflow's return value as the tool's result object."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and hasattr(value, "status"):
        data = to_dict(error_text)
    elif isinstance(value, BaseModel):
        data = value.model_dump(mode="json")
    elif isinstance(value, Mapping):
        data = jsonable(dict(value))
    else:
        return {"status": "success", "result": jsonable(value)}
    if isinstance(data, dict) and data.get("status") in ("success", "failed"):
        return data
    return {"status": "success", "result": data}
