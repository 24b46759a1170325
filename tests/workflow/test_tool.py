"""The workflow primitive, and workflows as ``run_<key>`` tools."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from mcpkit import ConfigurationError, MCPServer, RegistrationError, ToolError, current_context
from mcpkit.testing import connect
from mcpkit.workflow import Step, StepContext, Workflow, step

TIMEOUT = 10.0


class Text(BaseModel):
    text: str


class Words(BaseModel):
    words: list[str]


class Count(BaseModel):
    count: int


@step
async def split(data: Text) -> Words:
    assert isinstance(data, Text)  # validated into the step's input type
    return Words(words=data.text.split())


@step
async def count(data: Words) -> Count:
    return Count(count=len(data.words))


def word_count() -> Workflow:
    return (
        Workflow(
            id="word-count",
            description="Counts the words of a text.",
            input_schema=Text,
            output_schema=Count,
        )
        .then(split)
        .then(count)
        .commit()
    )


# -- the primitive ---------------------------------------------------------------------------------


async def test_steps_run_in_sequence_with_typed_input_and_output() -> None:
    result = await word_count().create_run().start(input_data={"text": "one two three"})
    assert result.status == "success"
    assert result.result == {"count": 3}
    assert result.error is None
    assert list(result.steps) == ["split", "count"]
    assert result.steps["split"].status == "success"
    assert result.steps["split"].output == {"words": ["one", "two", "three"]}
    assert result.steps["count"].output == {"count": 3}


async def test_parallel_steps_run_concurrently_and_are_keyed_by_id() -> None:
    a_started, b_started = asyncio.Event(), asyncio.Event()

    async def a(data: Words) -> int:
        a_started.set()
        await asyncio.wait_for(b_started.wait(), TIMEOUT)  # only returns if b runs meanwhile
        return len(data.words)

    async def b(data: Words) -> str:
        b_started.set()
        await asyncio.wait_for(a_started.wait(), TIMEOUT)
        return "-".join(data.words)

    wf = Workflow(id="p", description="d", input_schema=Text).then(split).parallel([a, b])
    result = await wf.create_run().start(input_data={"text": "x y"})
    assert result.status == "success"
    assert result.result == {"a": 2, "b": "x-y"}
    assert list(result.steps) == ["split", "a", "b"]


async def test_branch_runs_every_step_whose_condition_holds_and_skips_the_rest() -> None:
    async def is_long(data: Count) -> bool:
        return data.count > 2

    @step
    def long(data: Count) -> str:
        return "long"

    @step
    def short(data: Count) -> str:
        return "short"

    @step
    def any_size(data: Count) -> str:
        return "any"

    def build() -> Workflow:
        return (
            Workflow(id="b", description="d", input_schema=Text)
            .then(split)
            .then(count)
            .branch(
                [
                    (is_long, long),
                    (lambda d: d.count <= 2, short),
                    (lambda d: True, any_size),
                ]
            )
        )

    result = await build().create_run().start(input_data={"text": "a b c d"})
    assert result.status == "success"
    assert result.result == {"long": "long", "any_size": "any"}
    assert result.steps["short"].status == "skipped"
    assert result.steps["long"].status == "success"
    other = await build().create_run().start(input_data={"text": "a"})
    assert other.result == {"short": "short", "any_size": "any"}
    assert other.steps["long"].status == "skipped"


async def test_a_failing_step_stops_the_run_with_failed_and_the_error() -> None:
    ran: list[str] = []

    @step
    def explode(data: Words) -> Words:
        raise ValueError("bad words")

    @step
    def after(data: Words) -> Words:
        ran.append("after")
        return data

    wf = Workflow(id="f", description="d", input_schema=Text).then(split).then(explode).then(after)
    result = await wf.create_run().start(input_data={"text": "x"})
    assert result.status == "failed"
    assert isinstance(result.error, ValueError) and str(result.error) == "bad words"
    assert result.result is None
    assert result.steps["split"].status == "success"
    assert result.steps["explode"].status == "failed"
    assert result.steps["explode"].error is result.error
    assert "after" not in result.steps and ran == []
    as_dict = result.to_dict()
    assert as_dict["status"] == "failed" and as_dict["error"] == "bad words"
    assert as_dict["steps"]["explode"] == {"status": "failed", "error": "bad words"}


async def test_a_failing_parallel_step_fails_the_run_but_its_siblings_are_recorded() -> None:
    async def ok(data: Text) -> str:
        return "fine"

    async def broken(data: Text) -> str:
        raise ToolError("parallel failure")

    wf = Workflow(id="pf", description="d", input_schema=Text).parallel([ok, broken]).then(count)
    result = await wf.create_run().start(input_data={"text": "x"})
    assert result.status == "failed"
    assert str(result.error) == "parallel failure"
    assert result.steps["ok"].status == "success"
    assert result.steps["broken"].status == "failed"
    assert "count" not in result.steps


async def test_step_output_that_breaks_its_schema_fails_the_step_clearly() -> None:
    @step
    def liar(data: Text) -> Count:
        return {"count": "many"}  # type: ignore[return-value]

    wf = Workflow(id="l", description="d", input_schema=Text).then(liar)
    result = await wf.create_run().start(input_data={"text": "x"})
    assert result.status == "failed"
    message = str(result.error)
    assert "step 'liar'" in message and "output schema" in message and "count" in message


async def test_invalid_input_fails_the_run_before_any_step() -> None:
    result = await word_count().create_run().start(input_data={"txt": "x"})
    assert result.status == "failed"
    assert "input schema" in str(result.error) and "text" in str(result.error)
    assert result.steps == {}


async def test_the_result_is_checked_against_the_output_schema() -> None:
    wf = Workflow(id="o", description="d", input_schema=Text, output_schema=Count).then(split)
    result = await wf.create_run().start(input_data={"text": "x"})
    assert result.status == "failed"
    assert "output schema" in str(result.error)


async def test_steps_see_the_run_through_step_context() -> None:
    seen: dict[str, Any] = {}

    @step
    def report(data: Count, run: StepContext) -> dict[str, Any]:
        seen["run_id"] = run.run_id
        seen["workflow"] = run.workflow_id
        return {"input": run.input_data, "words": run.output_of("split"), "count": data.count}

    wf = Workflow(id="ctx", description="d", input_schema=Text).then(split).then(count)
    wf.then(report)
    result = await wf.create_run(run_id="run-1").start(input_data={"text": "p q"})
    assert result.result == {
        "input": {"text": "p q"},
        "words": {"words": ["p", "q"]},
        "count": 2,
    }
    assert seen == {"run_id": "run-1", "workflow": "ctx"}
    assert result.run_id == "run-1"


async def test_sync_steps_run_in_a_worker_thread() -> None:
    threads: list[bool] = []

    @step
    def blocking(data: Text) -> str:
        threads.append(threading.current_thread() is threading.main_thread())
        return data.text

    result = (
        await Workflow(id="t", description="d", input_schema=Text).then(blocking).run({"text": "z"})
    )
    assert result.result == "z" and threads == [False]


async def test_a_workflow_can_be_a_step_of_another() -> None:
    inner = word_count()

    @step
    def double(data: Count) -> Count:
        return Count(count=data.count * 2)

    outer = Workflow(id="outer", description="d", input_schema=Text).then(inner).then(double)
    result = await outer.create_run().start(input_data={"text": "a b c"})
    assert result.result == {"count": 6}
    assert result.steps["word-count"].output == {"count": 3}


async def test_cancelling_a_run_cancels_its_step() -> None:
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def slow(data: Text) -> str:
        started.set()
        try:
            await asyncio.sleep(TIMEOUT)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    run = Workflow(id="c", description="d", input_schema=Text).then(slow).create_run()
    task = asyncio.create_task(run.start(input_data={"text": "x"}))
    await asyncio.wait_for(started.wait(), TIMEOUT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == [True]


def test_building_mistakes_are_reported() -> None:
    with pytest.raises(ConfigurationError, match="used twice"):
        Workflow(id="d", description="d").then(split).then(split)
    with pytest.raises(ConfigurationError, match="no steps"):
        Workflow(id="e", description="d").create_run()
    committed = word_count()
    with pytest.raises(ConfigurationError, match="committed"):
        committed.then(Step(id="late", execute=lambda x: x))
    with pytest.raises(ConfigurationError, match="step id"):
        Step(id="has space", execute=lambda x: x)
    with pytest.raises(ConfigurationError, match="not callable"):
        Workflow(id="f", description="d").branch([(True, split)])  # type: ignore[list-item]


async def test_a_run_starts_once() -> None:
    run = word_count().create_run()
    await run.start(input_data={"text": "a"})
    assert run.status == "success"
    with pytest.raises(ConfigurationError, match="started already"):
        await run.start(input_data={"text": "a"})


# -- run_<key> tools -------------------------------------------------------------------------------


async def test_workflow_becomes_run_tool_with_its_input_schema_and_the_seeds_description() -> None:
    server = MCPServer(name="s", version="1", workflows={"wc": word_count()})
    async with connect(server) as client:
        [tool] = await client.list_tools()
    assert tool["name"] == "run_wc"
    assert tool["description"] == (
        "Run workflow 'wc'. Workflow description: Counts the words of a text."
    )
    assert tool["inputSchema"]["properties"] == Text.model_json_schema()["properties"]
    assert tool["inputSchema"]["required"] == ["text"]


async def test_run_tool_returns_the_run_result_and_reports_progress_per_step() -> None:
    server = MCPServer(name="s", version="1", workflows={"wc": word_count()})
    async with connect(server) as client:
        result = await client.call_tool("run_wc", {"text": "a b"}, progress_token="tok")
        progress = [n["params"] for n in client.notifications]
        quiet = await client.call_tool("run_wc", {"text": "a b"})
        after_quiet = len(client.notifications)
    assert "isError" not in result
    data = result["structuredContent"]
    assert data == {
        "status": "success",
        "result": {"count": 2},
        "steps": {
            "split": {"status": "success", "output": {"words": ["a", "b"]}},
            "count": {"status": "success", "output": {"count": 2}},
        },
    }
    assert json.loads(result["content"][0]["text"]) == data
    assert progress == [
        {"progressToken": "tok", "progress": 1, "total": 2, "message": "step 'split' success"},
        {"progressToken": "tok", "progress": 2, "total": 2, "message": "step 'count' success"},
    ]
    assert quiet["structuredContent"] == data
    assert after_quiet == len(progress)  # no token, no progress


async def test_branch_progress_counts_skipped_steps() -> None:
    wf = (
        Workflow(id="br", description="Branches.", input_schema=Text)
        .then(split)
        .branch([(lambda d: False, count), (lambda d: True, Step(id="echo", execute=lambda d: d))])
    )
    server = MCPServer(name="s", version="1", workflows={"br": wf})
    async with connect(server) as client:
        result = await client.call_tool("run_br", {"text": "q"}, progress_token=7)
        messages = [n["params"]["message"] for n in client.notifications]
    assert result["structuredContent"]["steps"]["count"] == {"status": "skipped"}
    assert messages[0] == "step 'split' success"
    assert sorted(messages[1:]) == ["step 'count' skipped", "step 'echo' success"]


async def test_failed_run_is_an_error_result_that_hides_internals_unless_debug() -> None:
    @step
    def crash(data: Text) -> str:
        raise RuntimeError("database password is hunter2")

    @step
    def refuse(data: Text) -> str:
        raise ToolError("the text is too short")

    def server(debug: bool = False) -> MCPServer:
        return MCPServer(
            name="s",
            version="1",
            debug=debug,
            workflows={
                "crash": Workflow(id="c", description="Crashes.", input_schema=Text).then(crash),
                "refuse": Workflow(id="r", description="Refuses.", input_schema=Text).then(refuse),
            },
        )

    async with connect(server()) as client:
        crashed = await client.call_tool("run_crash", {"text": "x"})
        refused = await client.call_tool("run_refuse", {"text": "x"})
    assert crashed["isError"] is True
    data = crashed["structuredContent"]
    assert data["status"] == "failed"
    assert "hunter2" not in json.dumps(crashed)
    assert data["steps"]["crash"]["status"] == "failed"
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"] == "the text is too short"
    async with connect(server(debug=True)) as client:
        debug = await client.call_tool("run_crash", {"text": "x"})
    assert "hunter2" in debug["structuredContent"]["error"]


async def test_run_tool_rejects_invalid_arguments() -> None:
    server = MCPServer(name="s", version="1", workflows={"wc": word_count()})
    async with connect(server) as client:
        result = await client.call_tool("run_wc", {"text": 5})
    assert result["isError"] is True
    assert "Invalid arguments for tool 'run_wc'" in result["content"][0]["text"]


class Order(BaseModel):
    item: str
    quantity: int = 1


class DuckWorkflow:
    """Not a Workflow: description, input_schema and an async run(input)."""

    description = "Places an order."
    input_schema = Order

    def __init__(self) -> None:
        self.inputs: list[Any] = []

    async def run(self, input: Order) -> dict[str, Any]:
        self.inputs.append(input)
        assert current_context() is not None
        return {"placed": input.item, "quantity": input.quantity}


async def test_duck_typed_workflow_gets_validated_input_and_reports_its_return_value() -> None:
    duck = DuckWorkflow()
    server = MCPServer(name="s", version="1", workflows={"order": duck})
    async with connect(server) as client:
        [tool] = await client.list_tools()
        result = await client.call_tool("run_order", {"item": "tea"})
    assert tool["description"] == "Run workflow 'order'. Workflow description: Places an order."
    assert tool["inputSchema"]["required"] == ["item"]
    assert duck.inputs == [Order(item="tea", quantity=1)]
    assert result["structuredContent"] == {
        "status": "success",
        "result": {"placed": "tea", "quantity": 1},
    }


async def test_duck_workflow_with_a_json_schema_gets_a_dict_and_its_failure_is_reported() -> None:
    class Flaky:
        description = "Fails on demand."
        input_schema: ClassVar[dict[str, Any]] = {
            "type": "object",
            "properties": {"fail": {"type": "boolean"}},
            "required": ["fail"],
        }

        async def run(self, input: dict[str, Any]) -> str:
            if input["fail"]:
                raise ToolError("asked to fail")
            return "fine"

    server = MCPServer(name="s", version="1", workflows={"flaky": Flaky()})
    async with connect(server) as client:
        ok = await client.call_tool("run_flaky", {"fail": False})
        failed = await client.call_tool("run_flaky", {"fail": True})
        invalid = await client.call_tool("run_flaky", {})
    assert ok["structuredContent"] == {"status": "success", "result": "fine"}
    assert failed["isError"] is True
    assert failed["structuredContent"] == {"status": "failed", "error": "asked to fail"}
    assert invalid["isError"] is True and "fail" in invalid["content"][0]["text"]


async def test_duck_workflow_returning_a_workflow_result_keeps_its_shape() -> None:
    inner = word_count()

    class Wrapper:
        description = "Wraps a Workflow's run."
        input_schema = Text

        async def run(self, input: Text) -> Any:
            return await inner.run(input)

    server = MCPServer(name="s", version="1", workflows={"wrap": Wrapper()})
    async with connect(server) as client:
        result = await client.call_tool("run_wrap", {"text": "a b c"})
    assert result["structuredContent"]["status"] == "success"
    assert result["structuredContent"]["result"] == {"count": 3}
    assert set(result["structuredContent"]["steps"]) == {"split", "count"}


@pytest.mark.parametrize("description", [None, "", "  "])
def test_missing_or_empty_workflow_description_fails_naming_the_key(
    description: str | None,
) -> None:
    wf = Workflow(id="w", description=description, input_schema=Text).then(split)
    with pytest.raises(RegistrationError, match=r"workflow 'my_flow'.*description"):
        MCPServer(name="s", version="1", workflows={"my_flow": wf})


def test_unusable_workflows_are_all_reported_together() -> None:
    not_object = Workflow(id="n", description="Numbers.", input_schema=int).then(
        Step(id="s", execute=lambda n: n)
    )
    with pytest.raises(RegistrationError) as info:
        MCPServer(
            name="s",
            version="1",
            workflows={"number": not_object, "thing": object(), "fine": word_count()},
        )
    problems = info.value.problems
    assert len(problems) == 2
    assert "workflow 'number'" in problems[0] and "JSON object" in problems[0]
    assert "workflow 'thing'" in problems[1]


def test_explicit_tool_wins_over_a_workflow_and_a_warning_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def run_wc(text: str) -> str:
        """Explicit."""
        return text

    with caplog.at_level(logging.WARNING, logger="mcpkit.server"):
        server = MCPServer(name="s", version="1", tools=[run_wc], workflows={"wc": word_count()})
    tool = server.tools.get("run_wc")
    assert tool is not None and tool.description == "Explicit."
    assert any(
        "workflow 'wc'" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records
    )
