"""``mount(parent, child, namespace=...)``: another server's components served under a namespace.

A live link, resolved when something changes, never per call:

- **tools** are namespaced copies (``ToolDefinition.renamed``) registered on the
  parent; a listener on ``child.tools`` adds and removes them as the child's tools
  change, and tells the parent's sessions (``notifications/tools/list_changed``).
  Calling one costs what calling a local tool costs: the same prepared tool under
  another name, looked up in the same table.
- **resources, templates, prompts and completions** are registered on the parent
  under the rules of :mod:`.naming`, calling the child's functions; listeners on
  the child's registries add the ones it registers later (and announce them).
- the child's **lifespan** is entered inside the parent's (``server.add_lifespan``);
- the child's **middleware** runs inside the parent's for requests to its
  components (:mod:`.chain`);
- what the child serves through **component sources** (a proxy's upstream) is
  served under the namespace through a :class:`~.prefixed.PrefixedSource` per source
  (the sources the child has when mounted), and the parent's clients' roots changes
  reach the child's ``on_roots_changed`` callbacks.

Handlers of the child receive the parent's request context: ``ctx`` logs, reports
progress, elicits and samples through the caller's session on both eras, and a
scoped component keeps its scopes, checked against the caller's token.
Mounting is transitive: a server mounted on a server that is itself mounted
appears under both namespaces (``outer_inner_tool``).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from typing import Any

from ..errors import RegistrationError
from ..server.prompts import PromptDefinition
from ..server.resources import ResourceDefinition, TemplateDefinition
from ..server.server import MCPServer
from ..server.session import ServerSession
from ..server.tools import ToolDefinition
from ..server.visibility import checked_tags
from .chain import child_middleware
from .naming import mounted_ref, namespace_problem, prefixed_name, prefixed_uri
from .prefixed import PrefixedSource

__all__ = ["Mount", "mount"]

log = logging.getLogger("mcpkit.compose")

# Server -> the servers it is mounted on: to refuse a cycle, which the live links would
# follow forever (each copy of a tool added on one side is a new tool on the other).
_mounted_on: weakref.WeakKeyDictionary[MCPServer, list[MCPServer]] = weakref.WeakKeyDictionary()


def _cycle(parent: MCPServer, child: MCPServer) -> bool:
    """Whether ``child`` is ``parent`` or a server ``parent`` is mounted in, at any depth."""
    seen: set[int] = set()
    todo = [parent]
    while todo:
        server = todo.pop()
        if server is child:
            return True
        if id(server) not in seen:
            seen.add(id(server))
            todo.extend(_mounted_on.get(server, ()))
    return False


class Mount:
    """The link :func:`mount` made: which server is mounted where, and its tools' names."""

    __slots__ = (
        "_tasks",
        "child",
        "exclude_tags",
        "include_tags",
        "namespace",
        "parent",
        "served",
        "tool_names",
    )

    def __init__(
        self,
        parent: MCPServer,
        child: MCPServer,
        namespace: str,
        include_tags: frozenset[str] = frozenset(),
        exclude_tags: frozenset[str] = frozenset(),
    ) -> None:
        self.parent = parent
        self.child = child
        self.namespace = namespace
        #: Only the child's components with one of these tags are served (empty: all)...
        self.include_tags = include_tags
        #: ... and none with one of these.
        self.exclude_tags = exclude_tags
        #: The parent's names of the child's tools, kept as the child's tools change.
        self.tool_names: set[str] = set()
        #: (kind, parent's key) -> (child's key, tags) of every component served here: what
        #: the child's rules are checked against when they change.
        self.served: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"Mount({self.child.name!r} under {self.namespace!r} of {self.parent.name!r})"

    def admits(self, tags: frozenset[str]) -> bool:
        """Whether a child's component with ``tags`` is served under this mount."""
        if self.include_tags and self.include_tags.isdisjoint(tags):
            return False
        return not (self.exclude_tags and not self.exclude_tags.isdisjoint(tags))

    def serve(self, kind: str, key: str, own: str, tags: frozenset[str]) -> None:
        """Serve the child's ``own`` as the parent's ``key``, hidden there as the child's
        rules hide it (before it is added: the parent's cached listing is built then)."""
        self.served[(kind, key)] = (own, tags)
        self.parent.visibility.mounted_keys[(kind, key)] = self.keys_of(kind, own)
        child = self.child.visibility
        hidden = child.hides_any and not child.visible(kind, own, tags, None)
        self.parent.visibility.withhold(kind, key, hidden)

    def rules_changed(self, kinds: frozenset[str]) -> None:
        """The child's rules changed (a ``child.visibility`` listener): hide on the parent
        what they hide now, show what they show, and tell the parent's sessions."""
        child, parent = self.child.visibility, self.parent.visibility
        changed: set[str] = set()
        for (kind, key), (own, tags) in self.served.items():
            if kind in kinds and parent.withhold(
                kind, key, child.hides_any and not child.visible(kind, own, tags, None)
            ):
                changed.add(kind)
        if self.child.component_sources:  # what they serve may look different now
            changed.update(kinds)
        if not changed:
            return
        parent.changed()
        parent.notify_listeners(frozenset(changed))  # a mount of the parent follows it too
        if "tools" in changed:
            self.announce()
        if changed & {"resources", "templates"}:
            self.announce(self.parent.resources.notify_list_changed)
        if "prompts" in changed:
            self.announce(self.parent.prompts.notify_list_changed)

    def keys_of(self, kind: str, own: str) -> Callable[[str], list[str]]:
        """What a key named by the child's component ``own`` of ``kind`` (a tool, resource,
        template or prompt calling ``ctx.disable_components``) is on the parent: the child's
        own name or URI under the namespace (through the child's own mounts when that
        component is a mounted copy there)."""
        inner = self.child.visibility.mounted_keys
        namespace = self.namespace

        def translate(key: str) -> list[str]:
            below = inner.get((kind, own))
            out: list[str] = []
            for named in below(key) if below is not None else [key]:
                uri = prefixed_uri(namespace, named) if "://" in named else None
                out.append(uri if uri is not None else prefixed_name(namespace, named))
            return out

        return translate

    def tool_changed(self, name: str, tool: ToolDefinition | None) -> None:
        """Follow one change of the child's tools (a ``server.tools`` listener)."""
        if self.follow(name, tool):
            self.announce()

    def follow(self, name: str, tool: ToolDefinition | None) -> bool:
        """Add or remove the parent's copy of the child's tool ``name``; whether it changed."""
        mounted = prefixed_name(self.namespace, name)
        if tool is not None and not self.admits(tool.tags):
            tool = None  # filtered out by tag: as if the child did not have it
        if tool is None:
            if mounted not in self.tool_names:
                return False
            self.tool_names.discard(mounted)
            self.served.pop(("tools", mounted), None)
            self.parent.visibility.mounted_keys.pop(("tools", mounted), None)
            self.parent.back_channel_needs.pop(mounted, None)
            self.parent.tools.remove(mounted)
            self.parent.visibility.withhold("tools", mounted, False)
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
            needs = self.child.back_channel_needs.get(name)
            if needs:  # so that the parent's start-up warning names it too
                self.parent.back_channel_needs[mounted] = needs
            self.serve("tools", mounted, name, tool.tags)
            copy = tool.renamed(mounted)
            copy.enabled = True  # the child's rules decide it (self.serve), not the parent's
            self.parent.tools.add(copy)
        return True

    def resource_added(self, res: ResourceDefinition | TemplateDefinition) -> None:
        """Follow a resource or template the child added (a ``server.resources`` listener)."""
        if self.add_resource(res):
            self.announce(self.parent.resources.notify_list_changed)

    def add_resource(self, res: ResourceDefinition | TemplateDefinition) -> bool:
        """Serve the child's resource or template ``res`` on the parent; whether it is."""
        if not self.admits(res.tags):
            return False
        own = res.uri if isinstance(res, ResourceDefinition) else res.template.template
        uri = prefixed_uri(self.namespace, own)
        if uri is None or self.parent.resources.static.get(uri) is not None:
            return self.skipped("resource", own, uri)
        if isinstance(res, TemplateDefinition) and self.parent.resources.template_for(uri):
            return self.skipped("resource template", own, uri)
        options: dict[str, Any] = {"size": res.size} if isinstance(res, ResourceDefinition) else {}
        kind = "resources" if isinstance(res, ResourceDefinition) else "templates"
        self.serve(kind, uri, own, res.tags)
        added = self.parent.resources.add(
            uri,
            res.fn,
            name=res.name,
            description=res.description,
            mime_type=res.mime_type,
            title=res.title,
            annotations=res.annotations,
            icons=res.icons,
            meta=res.meta,
            cache=res.cache,
            scopes=res.scopes,
            tags=res.tags,
            version=res.version,
            **options,
        )
        if isinstance(res, TemplateDefinition) and isinstance(added, TemplateDefinition):
            added.completions.update(res.completions)
        return True

    async def resource_updated(self, uri: str) -> None:
        """Pass the child's ``notifications/resources/updated`` on to the parent's subscribers."""
        mounted = prefixed_uri(self.namespace, uri)
        if mounted is not None:
            await self.parent.resources.notify_updated(mounted)

    def prompt_added(self, prompt: PromptDefinition) -> None:
        """Follow a prompt the child added (a ``server.prompts`` listener)."""
        if self.add_prompt(prompt):
            self.announce(self.parent.prompts.notify_list_changed)

    def add_prompt(self, prompt: PromptDefinition) -> bool:
        """Serve the child's ``prompt`` on the parent; whether it is."""
        if not self.admits(prompt.tags):
            return False
        name = prefixed_name(self.namespace, prompt.name)
        if (name, prompt.version) in self.parent.prompts.registered:
            return self.skipped("prompt", prompt.name, name)
        self.serve("prompts", name, prompt.name, prompt.tags)
        self.parent.prompts.add(
            prompt.fn,
            name=name,
            description=prompt.description,
            title=prompt.title,
            version=prompt.version,
            icons=prompt.icons,
            meta=prompt.meta,
            scopes=prompt.scopes,
            tags=prompt.tags,
        )
        return True

    def add_completion(
        self, kind: str, target: str, argument: str | None, fn: Callable[..., Any]
    ) -> None:
        """Serve the child's completion of ``target`` on the parent (also a listener)."""
        renamed = mounted_ref(self.namespace, kind, target)
        if renamed is None or (kind, renamed, argument) in self.parent.completions.handlers:
            self.skipped("completion of", target, renamed)
            return
        self.parent.completions.add(kind, renamed, argument, fn)

    async def roots_changed(self, session: ServerSession) -> None:
        """The parent's client changed its roots: tell the child's callbacks (a proxy
        passes it up to the upstream of that session)."""
        for callback in self.child.roots_changed_callbacks:
            result = callback(session)
            if inspect.isawaitable(result):
                await result

    def skipped(self, what: str, own: str, mounted: str | None) -> bool:
        log.warning(
            "%s %r of mounted server %r is not served by %r: %s",
            what,
            own,
            self.child.name,
            self.parent.name,
            f"{mounted!r} is taken there" if mounted else "it has no 'scheme://'",
        )
        return False

    def announce(self, notify: Callable[[], Awaitable[None]] | None = None) -> None:
        """Tell the parent's sessions a list changed (by default its tool list)."""
        # Listeners are synchronous; the notification is sent from the running loop.
        # No loop: nothing is serving, so no session could hear it.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        send = notify if notify is not None else self.parent.tools.notify_list_changed
        task = loop.create_task(_sent(send))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


async def _sent(notify: Callable[[], Awaitable[None]]) -> None:
    await notify()


def collisions(link: Mount) -> list[str]:
    """Every problem mounting ``link.child`` under its namespace would cause, each named."""
    parent, child, namespace, admits = link.parent, link.child, link.namespace, link.admits
    problems: list[str] = []
    where = f"mounting {child.name!r} under {namespace!r}"
    for tool in child.tools:
        if not admits(tool.tags):
            continue
        name = prefixed_name(namespace, tool.name)
        if name in parent.tools:
            problems.append(f"{where}: tool {name!r} is already served")
    for uri, res in child.resources.static.items():
        if not admits(res.tags):
            continue
        target = prefixed_uri(namespace, uri)
        if target is None:
            problems.append(f"{where}: resource {uri!r} has no 'scheme://' to namespace")
        elif target in parent.resources.static:
            problems.append(f"{where}: resource {target!r} is already served")
    for tmpl in child.resources.templates:
        if not admits(tmpl.tags):
            continue
        text = tmpl.template.template
        target = prefixed_uri(namespace, text)
        if target is None:
            problems.append(f"{where}: resource template {text!r} has no 'scheme://'")
        elif parent.resources.template_for(target) is not None:
            problems.append(f"{where}: resource template {target!r} is already served")
    for (name, version), prompt in child.prompts.registered.items():
        if not admits(prompt.tags):
            continue
        target = prefixed_name(namespace, name)
        if (target, version) in parent.prompts.registered:
            problems.append(f"{where}: prompt {target!r} is already served")
    for kind, target, argument in child.completions.handlers:
        renamed = mounted_ref(namespace, kind, target)
        if renamed is not None and (kind, renamed, argument) in parent.completions.handlers:
            problems.append(f"{where}: completion of {renamed!r} is already served")
    return problems


def mount(
    parent: MCPServer,
    child: MCPServer,
    *,
    namespace: str,
    include_tags: Collection[str] | None = None,
    exclude_tags: Collection[str] | None = None,
) -> Mount:
    """Serve ``child``'s tools, resources, templates, prompts and completions on ``parent``.

    ``include_tags``: serve only the child's components with one of these tags;
    ``exclude_tags``: none with one of these (the filter holds for components the
    child registers later too). The copies keep their tags, so the parent's own
    rules (``parent.disable(tags=...)``) apply to them as to its own components.

    Names and URIs follow :mod:`mcpkit.compose.naming`. Every collision (and a bad
    namespace, or a cycle of mounts) is raised at once as a
    :class:`~mcpkit.errors.RegistrationError`, before anything is added. Tools the
    child adds or removes later appear and disappear on the parent, which tells its
    clients; so do the resources, templates, prompts and completions it adds, and its
    resource updates reach the parent's subscribers. Mount before serving: the
    child's lifespan joins the parent's from its next start.
    """
    problem = namespace_problem(namespace)
    if problem is not None:
        raise RegistrationError([problem])
    if _cycle(parent, child):
        raise RegistrationError(
            [
                f"server {child.name!r} cannot be mounted on {parent.name!r}: "
                + (
                    "a server cannot be mounted on itself"
                    if child is parent
                    else f"{parent.name!r} is mounted in it (a cycle)"
                )
            ]
        )
    tag_problems: list[str] = []
    include = checked_tags("include_tags", include_tags, tag_problems)
    exclude = checked_tags("exclude_tags", exclude_tags, tag_problems)
    if tag_problems:
        raise RegistrationError(tag_problems)
    link = Mount(parent, child, namespace, include, exclude)
    problems = collisions(link)
    if problems:
        raise RegistrationError(problems)
    _mounted_on.setdefault(child, []).append(parent)
    for tool in child.tools:
        link.follow(tool.name, tool)
    child.tools.add_listener(link.tool_changed)
    if parent.sessions():  # mounted while serving: one notification for the lot
        link.announce()
    for res in child.resources.static.values():
        link.add_resource(res)
    for tmpl in child.resources.templates:
        link.add_resource(tmpl)
    child.resources.add_listener(link.resource_added)
    child.resources.add_update_listener(link.resource_updated)
    for prompt in list(child.prompts.registered.values()):
        link.add_prompt(prompt)
    child.prompts.add_listener(link.prompt_added)
    for (kind, target, argument), fn in list(child.completions.handlers.items()):
        link.add_completion(kind, target, argument, fn)
    child.completions.add_listener(link.add_completion)
    child.visibility.add_listener(link.rules_changed)
    if parent.visibility.withheld:  # the child's rules hide some of what it brought
        parent.visibility.changed()
    if parent.sessions():  # mounted while serving
        link.announce(parent.resources.notify_list_changed)
        link.announce(parent.prompts.notify_list_changed)

    @asynccontextmanager
    async def child_lifespan(_parent: MCPServer) -> AsyncIterator[Any]:
        async with child.lifespan_context() as state:
            yield state

    # What the child serves through component sources (a proxy's upstream) cannot be
    # copied: each source is served under the namespace as it is (prefixed.py).
    for source in child.component_sources:
        parent.add_component_source(PrefixedSource(source, namespace, visibility=child.visibility))
    if child.component_sources:
        parent.on_roots_changed(link.roots_changed)

    around = child_middleware(parent, child, namespace, link.tool_names)
    if around is not None:
        parent.add_middleware(around)
    parent.add_lifespan(child_lifespan, label=f"mount {namespace!r} ({child.name})")
    return link
