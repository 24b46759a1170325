"""An MCP App: a counter tool whose interactive UI is built on the official App SDK.

Install the SDK once (the page imports it; nothing is fetched at run time)::

    npm install --prefix examples/apps

then run it (stdio, or ``--transport http``)::

    mcpkit run examples/apps_server.py

What it shows (see docs/extensions.md, "MCP Apps"):

- the ``io.modelcontextprotocol/ui`` extension advertised in
  ``capabilities.extensions`` on both eras (:func:`add_apps`);
- a tool, ``increment``, whose ``_meta.ui.resourceUri`` names the app, and an
  app-only tool, ``get_count`` (``visibility: ["app"]``);
- the app, ``ui://counter/app.html`` (``text/html;profile=mcp-app``), built
  from ``examples/apps/counter.html`` with the SDK's browser bundle
  (``@modelcontextprotocol/ext-apps``'s ``dist/src/app-with-deps.js``, read from
  ``node_modules``) inlined as an import map, so the page needs no network and
  asks for none in its CSP;
- text results for hosts that do not render apps (graceful degradation).

The SDK bundle is looked up in ``$MCPKIT_EXT_APPS_SDK`` (a path to the file),
then in ``node_modules`` next to this example, then from the working directory
up; without it, reading the app's resource fails with the install command.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from mcpkit import MCPServer
from mcpkit.extensions.apps import (
    UiResource,
    add_apps,
    find_node_module,
    html_from_file,
    inline_modules,
    ui_tool_meta,
)

HERE = Path(__file__).resolve().parent
APP_URI = "ui://counter/app.html"
SDK_PACKAGE = "@modelcontextprotocol/ext-apps"
SDK_FILE = "dist/src/app-with-deps.js"  # the App SDK with its dependencies, one ES module


def sdk_bundle() -> Path:
    """Where the App SDK's browser bundle is, or FileNotFoundError saying how to get it."""
    configured = os.environ.get("MCPKIT_EXT_APPS_SDK")
    if configured:
        return Path(configured)
    found = find_node_module(SDK_PACKAGE, SDK_FILE, start=HERE / "apps")
    found = found or find_node_module(SDK_PACKAGE, SDK_FILE)
    if found is None:
        raise FileNotFoundError(
            f"{SDK_PACKAGE} is not installed: run `npm install --prefix {HERE / 'apps'}` "
            "or set MCPKIT_EXT_APPS_SDK to its dist/src/app-with-deps.js"
        )
    return found


@functools.cache
def app_html() -> str:
    """The counter page with the SDK inlined (built once, at the first read)."""
    page = html_from_file(HERE / "apps" / "counter.html")
    return inline_modules(page, {SDK_PACKAGE: sdk_bundle()})


server = MCPServer(name="apps-example", version="1.0.0")
state = {"count": 0}


@server.tool(meta=ui_tool_meta(APP_URI), structured_output=True)
def increment(by: int = 1) -> dict[str, int]:
    """Add ``by`` to the counter and show it in the counter app."""
    state["count"] += by
    return {"count": state["count"]}


@server.tool(meta=ui_tool_meta(APP_URI, visibility=["app"]), structured_output=True)
def get_count() -> dict[str, int]:
    """The counter's value (called by the app, hidden from the model)."""
    return {"count": state["count"]}


add_apps(
    server,
    [
        UiResource(
            uri=APP_URI,
            html=app_html,
            name="counter",
            title="Counter",
            description="An interactive counter built with the MCP Apps SDK",
            prefers_border=True,
        )
    ],
)

if __name__ == "__main__":
    server.run()
