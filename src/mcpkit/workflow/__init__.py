"""A small workflow primitive: typed steps in sequence, in parallel and on branches.

>>> from pydantic import BaseModel
>>> from mcpkit.workflow import Workflow, step
>>> class Number(BaseModel):
...     n: int
>>> @step
... async def double(data: Number) -> Number:
...     return Number(n=data.n * 2)
>>> wf = Workflow(id="double", description="Doubles a number.", input_schema=Number)
>>> _ = wf.then(double).commit()

Expose one as an MCP tool with ``MCPServer(workflows={"double": wf})``
(tool ``run_double``).
"""

from __future__ import annotations

from .engine import Condition, Workflow, WorkflowResult, WorkflowRun
from .steps import Step, StepContext, StepResult, StepStatus, step

__all__ = [
    "Condition",
    "Step",
    "StepContext",
    "StepResult",
    "StepStatus",
    "Workflow",
    "WorkflowResult",
    "WorkflowRun",
    "step",
]
