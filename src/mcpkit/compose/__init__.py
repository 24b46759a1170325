"""Servers built from other servers: ``mount`` (a live link to another ``MCPServer``), ``proxy``.

Core seams used, all public: ``server.tools.add_listener`` and the resource, prompt
and completion registries' ``add_listener`` (a mounted server's changes reach the
parent as they happen, with nothing checked per call),
``ToolDefinition.renamed`` (a namespaced copy as cheap to call as the original), the
resource, prompt and completion registries' ``add``, and ``server.add_lifespan`` (the
mounted server's lifespan runs inside the parent's). The package sits beside
``adapters`` and ``workflow`` (above ``server``, below ``transports``): the core never
names it, and ``MCPServer.mount`` imports it only when called.

:mod:`.naming` holds the one set of namespacing rules, :mod:`.mount` the link itself,
:mod:`.chain` the mounted server's middleware as one middleware of the parent's
(``server.add_middleware``). :mod:`.proxy` serves another server's components
through a ``Client``, one upstream session per downstream session (and a pool of
them for stateless traffic, :mod:`.upstream`): it is a component source
(``server.add_component_source``, :mod:`mcpkit.server.sources`), the seam for
components that differ per session. :mod:`.gateway` serves every server of an
``mcpServers`` file under its name, one proxy each, in one component source;
:mod:`.prefixed` serves a component source under a namespace (a mounted proxy's).
:mod:`.transform` makes a tool from another (renamed, arguments changed, wrapped), on
``create_tool`` for a registered tool and as a wrapping component source for a proxied one;
:mod:`.component_tools` serves resources and prompts as tools, for tools-only clients;
:mod:`.search` lists a search tool and a call tool instead of every tool (BM25, :mod:`.bm25`),
through a middleware answering ``tools/list``.
"""

from __future__ import annotations

from .component_tools import prompts_as_tools, resources_as_tools
from .gateway import ToolFilter, from_config
from .mount import Mount, mount
from .naming import SEPARATOR, prefixed_name, prefixed_uri
from .proxy import ProxySource, proxy
from .search import ToolSearch, tool_search
from .transform import ArgTransform, ToolTransform, transform_tool, transform_tools

__all__ = [
    "SEPARATOR",
    "ArgTransform",
    "Mount",
    "ProxySource",
    "ToolFilter",
    "ToolSearch",
    "ToolTransform",
    "from_config",
    "mount",
    "prefixed_name",
    "prefixed_uri",
    "prompts_as_tools",
    "proxy",
    "resources_as_tools",
    "tool_search",
    "transform_tool",
    "transform_tools",
]
