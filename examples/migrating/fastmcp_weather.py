"""A typical FastMCP 4 server: the original that ``weather.py`` ports to mcpkit."""

from fastmcp import Context, FastMCP

mcp = FastMCP("Weather")

HIGHS = {"Oslo": [12.0, 14.5, 11.0], "Lima": [21.0, 22.5, 19.0]}


@mcp.tool(tags={"read"}, annotations={"readOnlyHint": True})
async def forecast(city: str, days: int = 3, ctx: Context | None = None) -> list[float]:
    """Daily highs for a city.

    Args:
        city: the city's name
        days: how many days
    """
    if ctx is not None:
        await ctx.info(f"forecast for {city}")
    return HIGHS.get(city, [])[:days]


@mcp.tool
def count_letters(word: str) -> int:
    """Count the letters of a word."""
    return len(word)


@mcp.tool(tags={"admin"})
def reset_cache() -> str:
    """Forget cached forecasts."""
    return "reset"


@mcp.resource("weather://cities", mime_type="text/plain")
def cities() -> str:
    """The cities with forecasts."""
    return ", ".join(HIGHS)


@mcp.prompt
def plan(city: str) -> str:
    """Plan a day out."""
    return f"Plan a day out in {city}."


mcp.disable(tags={"admin"})

if __name__ == "__main__":
    mcp.run()
