"""A gateway: two example servers, each started as a stdio process, served as one.

Run it (stdio)::

    mcpkit run examples/gateway_server.py

or on Streamable HTTP at http://127.0.0.1:8000/mcp::

    mcpkit run examples/gateway_server.py --transport http

What it shows (see docs/composition.md, "Gateway"):

- ``MCPServer.from_config(...)`` with a Claude Desktop-style ``mcpServers`` object:
  ``examples/demo_server.py`` is served under ``demo`` (its ``add`` tool as
  ``demo_add``, its ``config://app`` resource as ``config://demo/app``) and
  ``examples/mount_server.py`` under ``hub`` (``hub_weather_forecast``; mounting and
  proxying nest);
- the upstream processes start when a client first needs them (``eager=True``
  would start them with the gateway), and one that fails to start is left out with
  a warning while the other is served;
- a filter: the demo server's slow counting tool is not served;
- a tool of the gateway's own, ``briefing``, reading a proxied resource and getting
  a proxied prompt with ``ctx.read_resource`` and ``ctx.get_prompt``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcpkit import Context, MCPServer

HERE = Path(__file__).resolve().parent

# The same object a claude_desktop_config.json holds (from_config also takes its path).
CONFIG = {
    "mcpServers": {
        "demo": {"command": sys.executable, "args": [str(HERE / "demo_server.py")]},
        "hub": {"command": sys.executable, "args": [str(HERE / "mount_server.py")]},
    }
}

server = MCPServer.from_config(CONFIG, name="gateway", exclude={"demo": ["count_*"]})


@server.tool
async def briefing(city: str, ctx: Context) -> str:
    """The app's settings and a weather-report prompt for a city, from two upstreams."""
    settings = await ctx.read_resource("config://demo/app")
    prompt = await ctx.get_prompt("hub_weather_report", {"city": city})
    return (
        f"settings: {settings['contents'][0]['text']}\n"
        f"prompt: {prompt['messages'][0]['content']['text']}"
    )


if __name__ == "__main__":
    server.run_stdio()
