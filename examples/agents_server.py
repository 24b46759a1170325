"""Agents and workflows as MCP tools, with no API keys of its own.

Run it (stdio, for Claude Desktop, Cursor and other MCP clients)::

    mcpkit run examples/agents_server.py

or on Streamable HTTP at http://127.0.0.1:8000/mcp::

    mcpkit run examples/agents_server.py --transport http

Call it from the command line::

    mcpkit call ask_librarian --stdio "mcpkit run examples/agents_server.py" \\
        --args '{"message": "What is a workflow?"}'
    mcpkit call run_text-report --stdio "mcpkit run examples/agents_server.py" \\
        --args '{"text": "Agents think, workflows follow steps."}'

What it exposes:

- ``ask_librarian``: a plain agent (a ``generate`` method) answering from a
  small glossary; it reads the MCP request context it is given.
- ``ask_poet``: a pydantic-ai agent whose model is the *client's* LLM, reached
  through MCP sampling (:class:`mcpkit.adapters.pydantic_ai.SamplingModel`);
  present when pydantic-ai is installed (``pip install 'mcpkit[pydantic-ai]'``)
  and answered by clients that support sampling.
- ``run_text-report``: a typed workflow (a step, three in parallel, a branch,
  a final step) with progress per step.
- ``add_note``, ``notes://all`` and the ``review-notes`` prompt: declared with
  the decorators on a plain class.

``mcpkit registry examples/agents_server.py`` prints its registry ``server.json``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from mcpkit import (
    Context,
    MCPServer,
    PromptArg,
    ServerMetadata,
    StepContext,
    ToolAnnotations,
    ToolParam,
    Workflow,
    mcp_complete,
    mcp_prompt,
    mcp_resource,
    mcp_tool,
    step,
)

# -- an agent without any LLM ---------------------------------------------------------------------

GLOSSARY = {
    "agent": "An agent answers questions; here it is exposed as the tool ask_<name>.",
    "workflow": "A workflow runs typed steps in sequence, in parallel and on branches.",
    "mcp": "The Model Context Protocol connects AI applications to tools and data.",
    "sampling": "Sampling lets a server ask the client's LLM for a completion.",
}


class Librarian:
    """Looks words up in a glossary."""

    name = "Librarian"
    description = "Explains MCP terms: agent, workflow, MCP, sampling."

    async def generate(self, message: str, *, context: Context) -> dict[str, Any]:
        found = [term for term in GLOSSARY if term in message.lower()]
        await context.info(f"librarian looked up {found or 'nothing'}")
        if not found:
            text = f"I know these terms: {', '.join(sorted(GLOSSARY))}."
        else:
            text = " ".join(GLOSSARY[term] for term in found)
        return {"text": text, "terms": found}


agents: dict[str, Any] = {"librarian": Librarian()}

try:  # an agent that thinks with the client's own LLM, when pydantic-ai is installed
    from pydantic_ai import Agent

    from mcpkit.adapters.pydantic_ai import SamplingModel
except ImportError:  # pragma: no cover - the optional extra is missing
    pass
else:
    agents["poet"] = Agent(
        SamplingModel(max_tokens=200),
        name="Poet",
        description="Writes a haiku about any topic, using your own LLM through MCP sampling.",
        instructions="Answer with one haiku and nothing else.",
    )


# -- a typed workflow ------------------------------------------------------------------------------


class TextIn(BaseModel):
    text: str = Field(description="The text to analyse.")


class Tokens(BaseModel):
    words: list[str]


class Stats(BaseModel):
    word_count: int
    longest_word: str
    reading_seconds: float


class Report(BaseModel):
    words: int
    longest_word: str
    reading_seconds: float
    verdict: str


@step
async def tokenize(data: TextIn) -> Tokens:
    """Split the text into words."""
    return Tokens(words=[w.strip(".,;:!?\"'()") for w in data.text.split() if w.strip()])


@step
def word_count(data: Tokens) -> int:
    return len(data.words)


@step
def longest_word(data: Tokens) -> str:
    return max(data.words, key=len, default="")


@step
def reading_seconds(data: Tokens) -> float:
    return round(len(data.words) / 4, 2)  # about 240 words a minute


@step
def long_read(data: Stats) -> str:
    return "a long read: take a coffee"


@step
def quick_read(data: Stats) -> str:
    return "a quick read"


@step
def report(verdicts: dict[str, str], run: StepContext) -> Report:
    """Gather the parallel figures and the verdict of the branch that ran."""
    return Report(
        words=run.output_of("word_count"),
        longest_word=run.output_of("longest_word"),
        reading_seconds=run.output_of("reading_seconds"),
        verdict=next(iter(verdicts.values())),
    )


text_report = (
    Workflow(
        id="text-report",
        description="Counts the words of a text, finds its longest word and judges its length.",
        input_schema=TextIn,
        output_schema=Report,
    )
    .then(tokenize)
    .parallel([word_count, longest_word, reading_seconds])
    .branch(
        [
            (lambda stats: stats.word_count > 50, long_read),
            (lambda stats: stats.word_count <= 50, quick_read),
        ]
    )
    .then(report)
    .commit()
)


# -- declared on a plain class ----------------------------------------------------------------------


class Notes:
    """A notebook kept in memory."""

    def __init__(self) -> None:
        self.items: list[str] = []

    @mcp_tool(name="add_note", annotations=ToolAnnotations(idempotent_hint=False))
    def add(self, text: Annotated[str, ToolParam(description="The note to keep")]) -> str:
        """Keep a note for later."""
        self.items.append(text)
        return f"{len(self.items)} note(s) kept"

    @mcp_resource("notes://all", name="All notes", mime_type="text/plain")
    def all_notes(self) -> str:
        return "\n".join(self.items) or "(no notes yet)"

    @mcp_prompt(name="review-notes", description="Ask the model to review the notes")
    def review(
        self, focus: Annotated[str, PromptArg(description="What to look for", required=False)]
    ) -> str:
        notes = "\n".join(f"- {n}" for n in self.items) or "(no notes yet)"
        return f"Review these notes{f' for {focus}' if focus else ''}:\n{notes}"

    @mcp_complete(prompt="review-notes", argument="focus")
    def complete_focus(self, value: str) -> list[str]:
        return [f for f in ("typos", "tone", "facts", "todos") if f.startswith(value.lower())]


server = MCPServer(
    name="mcpkit agents demo",
    version="0.1.0",
    description="Agents and workflows as MCP tools, no API keys needed.",
    metadata=ServerMetadata(
        id="com.example/agents-demo",
        repository={"url": "https://github.com/example/agents-demo", "source": "github"},
        packages=[{"registryType": "pypi", "identifier": "mcpkit-agents-demo", "version": "0.1.0"}],
    ),
    instructions="Ask the librarian about MCP terms; run text-report to analyse a text.",
    agents=agents,
    workflows={"text-report": text_report},
    components=[Notes()],
)

if __name__ == "__main__":
    server.run_stdio()
