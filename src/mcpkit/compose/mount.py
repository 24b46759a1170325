"""``mount(parent, child, namespace=...)``: another server's components served under a namespace.

A live link, resolved when something changes, never per call:

- **tools** are namespaced copies (``ToolDefinition.renamed``) registered on the
  parent; a listener on ``child.tools`` adds and removes them as the child's tools
  change, and tells the parent's sessions (``notifications/tools/list_changed``).
  Calling one costs what calling a local tool costs: the same prepared tool under
  another name, looked up in the same table.
- **resources, templates, prompts and completions** are registered on the parent
  at mount time, under the rules of :mod:`.naming`; they call the child's functions.
- the child's **lifespan** is entered inside the parent's (``server.add_lifespan``);
- the child's **middleware** runs inside the parent's for requests to its
  components (:mod:`.chain`).

Handlers of the child receive the parent's request context: ``ctx`` logs, reports
progress, elicits and samples through the caller's session on both eras, and a
scoped component keeps its scopes, checked against the caller's token.
Mounting is transitive: a server mounted on a server that is itself mounted
appears under both namespaces (``outer_inner_tool``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ..errors import RegistrationError
from ..server.resources import TemplateDefinition
from ..server.server import MCPServer
from ..server.tools import ToolDefinition
from .chain import child_middleware
from .naming import namespace_problem, prefixed_name, prefixed_uri

__all__ = ["Mount", "mount"]

log = logging.getLogger("mcpkit.compose")


class Mount:
    """The link :func:`mount` made: which server is mounted where, and its tools' names."""

    __slots__ = ("_tasks", "child", "namespace", "parent", "tool_names")

    def __init__(self, parent: MCPServer, child: MCPServer, namespace: str) -> None:
        self.parent = parent
        self.child = child
        self.namespace = namespace
        #: The parent's names of the child's tools, kept as the child's tools change.
        self.tool_names: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"Mount({self.child.name!r} under {self.namespace!r} of {self.parent.name!r})"

    def tool_changed(self, name: str, tool: ToolDefinition | None) -> None:
        """Follow one change of the child's tools (a ``server.tools`` listener)."""
        if self.follow(name, tool):
            self.announce()

    def follow(self, name: str, tool: ToolDefinition | None) -> bool:
        """Add or remove the parent's copy of the child's tool ``name``; whether it changed."""
        mounted = prefixed_name(self.namespace, name)
        if tool is None:
            if mounted not in self.tool_names:
                return False
            self.tool_names.discard(mounted)
            self.parent.tools.remove(mounted)
        else:
            if mounted in self.parent.tools and mounted not in self.tool_names:
                log.warning(
                    "tool %r added to mounted server %r is not served by %r: %r is taken there",
                    name,
                    self.child.name,
                    self.parent.name,
                    mounted,
                )
                return False
            self.tool_names.add(mounted)
            self.parent.tools.add(tool.renamed(mounted))
        return True

    def announce(self) -> None:
        """Tell the parent's sessions its tool list changed."""
        # Listeners are synchronous; the notification is sent from the running loop.
        # No loop: nothing is serving, so no session could hear it.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self.parent.tools.notify_list_changed())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def collisions(parent: MCPServer, child: MCPServer, namespace: str) -> list[str]:
    """Every problem mounting ``child`` under ``namespace`` would cause, each named."""
    problems: list[str] = []
    where = f"mounting {child.name!r} under {namespace!r}"
    for tool in child.tools:
        name = prefixed_name(namespace, tool.name)
        if name in parent.tools:
            problems.append(f"{where}: tool {name!r} is already served")
    for uri in child.resources.static:
        target = prefixed_uri(namespace, uri)
        if target is None:
            problems.append(f"{where}: resource {uri!r} has no 'scheme://' to namespace")
        elif target in parent.resources.static:
            problems.append(f"{where}: resource {target!r} is already served")
    for tmpl in child.resources.templates:
        text = tmpl.template.template
        target = prefixed_uri(namespace, text)
        if target is None:
            problems.append(f"{where}: resource template {text!r} has no 'scheme://'")
        elif parent.resources.template_for(target) is not None:
            problems.append(f"{where}: resource template {target!r} is already served")
    for name, version in child.prompts.registered:
        target = prefixed_name(namespace, name)
        if (target, version) in parent.prompts.registered:
            problems.append(f"{where}: prompt {target!r} is already served")
    for kind, target, argument in child.completions.handlers:
        renamed = (
            prefixed_name(namespace, target)
            if kind == "ref/prompt"
            else prefixed_uri(namespace, target)
        )
        if renamed is not None and (kind, renamed, argument) in parent.completions.handlers:
            problems.append(f"{where}: completion of {renamed!r} is already served")
    return problems


def mount(parent: MCPServer, child: MCPServer, *, namespace: str) -> Mount:
    """Serve ``child``'s tools, resources, templates, prompts and completions on ``parent``.

    Names and URIs follow :mod:`mcpkit.compose.naming`. Every collision (and a bad
    namespace, or mounting a server on itself) is raised at once as a
    :class:`~mcpkit.errors.RegistrationError`, before anything is added. Tools the
    child adds or removes later appear and disappear on the parent, which tells its
    clients. Mount before serving: the child's lifespan joins the parent's from its
    next start.
    """
    problem = namespace_problem(namespace)
    if problem is not None:
        raise RegistrationError([problem])
    if child is parent:
        raise RegistrationError([f"server {parent.name!r} cannot be mounted on itself"])
    problems = collisions(parent, child, namespace)
    if problems:
        raise RegistrationError(problems)
    link = Mount(parent, child, namespace)
    for tool in child.tools:
        link.follow(tool.name, tool)
    child.tools.add_listener(link.tool_changed)
    if parent.sessions():  # mounted while serving: one notification for the lot
        link.announce()
    _mount_resources(parent, child, namespace)
    _mount_prompts(parent, child, namespace)
    _mount_completions(parent, child, namespace)

    @asynccontextmanager
    async def child_lifespan(_parent: MCPServer) -> AsyncIterator[Any]:
        async with child.lifespan_context() as state:
            yield state

    around = child_middleware(child, namespace, link.tool_names)
    if around is not None:
        parent.add_middleware(around)
    parent.add_lifespan(child_lifespan, label=f"mount {namespace!r} ({child.name})")
    return link


def _mount_resources(parent: MCPServer, child: MCPServer, namespace: str) -> None:
    for res in child.resources.static.values():
        uri = prefixed_uri(namespace, res.uri)
        assert uri is not None  # checked by collisions()
        parent.resources.add(
            uri,
            res.fn,
            name=res.name,
            description=res.description,
            mime_type=res.mime_type,
            title=res.title,
            size=res.size,
            annotations=res.annotations,
            icons=res.icons,
            meta=res.meta,
            cache=res.cache,
            scopes=res.scopes,
        )
    for tmpl in child.resources.templates:
        uri = prefixed_uri(namespace, tmpl.template.template)
        assert uri is not None
        added = parent.resources.add(
            uri,
            tmpl.fn,
            name=tmpl.name,
            description=tmpl.description,
            mime_type=tmpl.mime_type,
            title=tmpl.title,
            annotations=tmpl.annotations,
            icons=tmpl.icons,
            meta=tmpl.meta,
            cache=tmpl.cache,
            scopes=tmpl.scopes,
        )
        if tmpl.completions and isinstance(added, TemplateDefinition):
            added.completions.update(tmpl.completions)


def _mount_prompts(parent: MCPServer, child: MCPServer, namespace: str) -> None:
    for prompt in child.prompts.registered.values():
        parent.prompts.add(
            prompt.fn,
            name=prefixed_name(namespace, prompt.name),
            description=prompt.description,
            title=prompt.title,
            version=prompt.version,
            icons=prompt.icons,
            meta=prompt.meta,
            scopes=prompt.scopes,
        )


def _mount_completions(parent: MCPServer, child: MCPServer, namespace: str) -> None:
    for (kind, target, argument), fn in child.completions.handlers.items():
        renamed = (
            prefixed_name(namespace, target)
            if kind == "ref/prompt"
            else prefixed_uri(namespace, target)
        )
        if renamed is not None:
            parent.completions.add(kind, renamed, argument, fn)
