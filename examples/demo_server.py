"""A small demo server: one tool of each kind, a resource, a template and a prompt.

Run it:  mcpkit run examples/demo_server.py --transport http --port 8000
     or:  mcpkit run examples/demo_server.py            (stdio, for desktop clients)
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from pydantic import BaseModel, Field

from mcpkit import Context, MCPServer, ToolAnnotations

server = MCPServer(
    name="Demo",
    version="1.0.0",
    instructions="A demo server: arithmetic, a forecast, notes and a greeting prompt.",
)

NOTES: dict[str, str] = {"welcome": "Hello from mcpkit!"}


@server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Forecast(BaseModel):
    city: str
    temperature_c: float
    conditions: str


@server.tool
async def forecast(
    city: Annotated[str, Field(description="City name, e.g. Tokyo")],
    days: Annotated[int, Field(ge=1, le=7, description="How many days ahead")] = 1,
) -> Forecast:
    """Weather forecast for a city (made-up numbers)."""
    return Forecast(city=city, temperature_c=18.5 + days, conditions="sunny")


@server.tool
async def count_slowly(to: int, ctx: Context) -> str:
    """Count to a number, reporting progress and logging as it goes."""
    for i in range(1, to + 1):
        await ctx.progress(i, total=to, message=f"counted {i}")
        await ctx.info(f"counted {i}")
        await asyncio.sleep(0.05)
    return f"counted to {to}"


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note by name."""
    return NOTES.get(name, f"(no note called {name!r})")


@server.resource("config://app", mime_type="application/json")
def app_config() -> dict[str, str]:
    """The app's configuration."""
    return {"theme": "dark", "language": "en"}


@server.prompt
def greeting(name: str, style: str = "friendly") -> str:
    """A greeting prompt."""
    return f"Write a {style} greeting for {name}."


@server.completion(prompt="greeting", argument="style")
def styles(value: str) -> list[str]:
    return [s for s in ("friendly", "formal", "pirate") if s.startswith(value)]


if __name__ == "__main__":
    server.run_stdio()
