"""One server built from two: a weather and a notes server mounted under namespaces.

Run it (stdio)::

    mcpkit run examples/mount_server.py

or on Streamable HTTP at http://127.0.0.1:8000/mcp::

    mcpkit run examples/mount_server.py --transport http

What it shows (see docs/composition.md, "Mount"):

- ``server.mount(weather, namespace="weather")``: the weather server's tool
  ``forecast`` is served as ``weather_forecast``, its resource
  ``weather://stations`` as ``weather://weather/stations`` and its prompt
  ``report`` as ``weather_report``;
- the notes server's lifespan (its storage) opens inside the hub's, and its
  ``add_note`` tool reports progress through the caller's session unchanged;
- a live link: ``notes_clear`` appears on the hub once the notes server adds it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from mcpkit import Context, MCPServer

weather = MCPServer(name="weather", version="1.0.0")


@weather.tool
async def forecast(city: str) -> str:
    """Tomorrow's forecast for a city."""
    return f"Sunny in {city}, 21°C"


@weather.resource("weather://stations", mime_type="text/plain")
def stations() -> str:
    """The stations the forecasts come from."""
    return "Paris, Oslo, Rome"


@weather.prompt
def report(city: str) -> str:
    """Ask for a short weather report."""
    return f"Write a two-line weather report for {city}."


@contextlib.asynccontextmanager
async def notes_storage(server: MCPServer) -> AsyncIterator[list[str]]:
    notes: list[str] = []  # a database connection in a real server
    yield notes
    notes.clear()


notes = MCPServer(name="notes", version="1.0.0", lifespan=notes_storage)


@notes.tool
async def add_note(text: str, ctx: Context) -> str:
    """Keep a note; returns how many there are."""
    stored: list[str] = notes.lifespan_state
    await ctx.progress(0, total=1)
    stored.append(text)
    await ctx.progress(1, total=1)
    if "clear_notes" not in notes.tools:
        notes.add_tool(clear_notes)  # appears on the hub as notes_clear_notes
    return f"{len(stored)} note(s)"


async def clear_notes() -> str:
    """Forget every note."""
    stored: list[str] = notes.lifespan_state
    stored.clear()
    return "cleared"


server = MCPServer(name="hub", version="1.0.0")
server.mount(weather, namespace="weather")
server.mount(notes, namespace="notes")

if __name__ == "__main__":
    server.run_stdio()
