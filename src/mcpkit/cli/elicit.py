"""Answering a server's questions (elicitation), for ``mcpkit call``.

A tool may ask the user for input while it runs (``elicitation/create``,
2025-06-18 client/elicitation). ``mcpkit call`` answers:

1. from ``--elicit JSON``: every form question is accepted with the fields it
   asks for taken from that object (fields it lacks get the schema's
   defaults), so scripts can answer without a terminal;
2. otherwise, or for required fields ``--elicit`` lacks, on the terminal when
   stdin is one: field by field, with each field's type and choices;
3. otherwise the question is declined, with a note on stderr saying why.

A URL-mode question (2025-11-25) shows the URL and its host, and on a terminal
asks before opening it in the browser; without a terminal it is declined.

Everything this module prints goes to stderr: stdout holds only the result.
"""

from __future__ import annotations

import asyncio
import json
import sys
import webbrowser
from collections.abc import Mapping
from typing import Any, TextIO
from urllib.parse import urlsplit

__all__ = ["Elicitor"]


class _Cancelled(Exception):
    """The user ended the input (end of file): the question is cancelled."""


class Elicitor:
    """The elicitation handler of ``mcpkit call`` (see the module docstring)."""

    def __init__(
        self,
        answers: Mapping[str, Any] | None,
        *,
        interactive: bool,
        stdin: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.answers = dict(answers) if answers is not None else None
        self.interactive = interactive
        self._stdin = stdin
        self._stderr = stderr

    @property
    def stdin(self) -> TextIO:
        return self._stdin if self._stdin is not None else sys.stdin

    @property
    def stderr(self) -> TextIO:
        return self._stderr if self._stderr is not None else sys.stderr

    def say(self, text: str) -> None:
        print(text, file=self.stderr, flush=True)

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        message = str(params.get("message") or "")
        if params.get("mode") == "url":
            return await self._url(params, message)
        schema = params.get("requestedSchema")
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        props = props if isinstance(props, Mapping) else {}
        required = schema.get("required") if isinstance(schema, Mapping) else None
        required = [r for r in required if r in props] if isinstance(required, list) else []
        content = {k: v for k, v in (self.answers or {}).items() if k in props}
        missing = [
            n
            for n in required
            if n not in content and not (isinstance(props[n], Mapping) and "default" in props[n])
        ]
        if self.answers is not None and not missing:
            return {"action": "accept", "content": content}
        if not self.interactive:
            why = (
                f"--elicit lacks the required field(s) {', '.join(missing)}"
                if self.answers is not None
                else "stdin is not a terminal; answer with --elicit JSON"
            )
            self.say(f"mcpkit: the server asks: {message}")
            self.say(f"mcpkit: declined ({why})")
            return {"action": "decline"}
        self.say(f"The server asks: {message}")
        try:
            for name, prop in props.items():
                if name in content:
                    continue
                value = await self._field(
                    name, prop if isinstance(prop, Mapping) else {}, name in required
                )
                if value is not _SKIP:
                    content[name] = value
        except _Cancelled:
            self.say("(cancelled)")
            return {"action": "cancel"}
        return {"action": "accept", "content": content}

    async def _url(self, params: Mapping[str, Any], message: str) -> dict[str, Any]:
        # 2025-11-25 client/elicitation § safe URL handling: show the whole URL and its
        # host, never fetch it, and open it only on the user's explicit consent.
        url = str(params.get("url") or "")
        host = urlsplit(url).hostname or "?"
        self.say(f"mcpkit: the server asks you to open a page on {host}: {message}")
        self.say(f"  {url}")
        if not self.interactive:
            self.say("mcpkit: declined (stdin is not a terminal)")
            return {"action": "decline"}
        try:
            reply = await self._ask("Open it in your browser? [y/N] ")
        except _Cancelled:
            return {"action": "cancel"}
        if reply.lower() not in ("y", "yes"):
            return {"action": "decline"}
        # webbrowser.open may start a process and wait: not on the event loop.
        if not await asyncio.to_thread(webbrowser.open, url):
            self.say("mcpkit: no browser could be started here; open the URL yourself")
        return {"action": "accept"}

    async def _ask(self, prompt: str) -> str:
        self.stderr.write(prompt)
        self.stderr.flush()
        # A thread: the event loop keeps serving the connection while the user types.
        line = await asyncio.to_thread(self.stdin.readline)
        if not line:
            raise _Cancelled
        return line.strip()

    async def _field(self, name: str, prop: Mapping[str, Any], required: bool) -> Any:
        kind, choices = _kind(prop)
        title = str(prop.get("title") or "")
        # The field's name is what --elicit takes; a title says more only when it differs.
        same = title.lower().replace(" ", "_") in ("", name.lower())
        label = name if same else f"{title} [{name}]"
        hint = kind + ("" if required else ", optional")
        if "default" in prop:
            hint += f", default {json.dumps(prop['default'])}"
        if prop.get("description"):
            self.say(f"  {label}: {prop['description']}")
        if choices:
            for i, (value, title) in enumerate(choices, 1):
                self.say(f"    {i}. {title}" + (f" ({value})" if title != value else ""))
        while True:
            text = await self._ask(f"  {label} ({hint}): ")
            if not text:
                if "default" in prop or not required:
                    return _SKIP  # the client fills in the schema's default
                self.say("    required: please answer")
                continue
            try:
                return _parse(text, kind, choices)
            except ValueError as exc:
                self.say(f"    {exc}")


_SKIP: Any = object()


def _kind(prop: Mapping[str, Any]) -> tuple[str, list[tuple[Any, str]]]:
    """The field's type as shown, and its choices as (value, title) pairs."""
    kind = prop.get("type")
    if kind == "array":
        items = prop.get("items")
        choices = _choices(items) if isinstance(items, Mapping) else []
        return "choices, comma-separated", choices
    choices = _choices(prop)
    if choices:
        return "choice: a number or a value", choices
    return (str(kind) if isinstance(kind, str) else "string"), []


def _choices(spec: Mapping[str, Any]) -> list[tuple[Any, str]]:
    enum = spec.get("enum")
    if isinstance(enum, list):
        names = spec.get("enumNames")
        titles = names if isinstance(names, list) and len(names) == len(enum) else enum
        return [(v, str(t)) for v, t in zip(enum, titles, strict=True)]
    for key in ("oneOf", "anyOf"):
        options = spec.get(key)
        if isinstance(options, list):
            return [
                (o["const"], str(o.get("title", o["const"])))
                for o in options
                if isinstance(o, Mapping) and "const" in o
            ]
    return []


def _parse(text: str, kind: str, choices: list[tuple[Any, str]]) -> Any:
    if kind.startswith("choices"):
        return [_choose(part.strip(), choices) for part in text.split(",") if part.strip()]
    if choices:
        return _choose(text, choices)
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("an integer, please") from None
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            raise ValueError("a number, please") from None
        return int(number) if number.is_integer() and "." not in text else number
    if kind == "boolean":
        lowered = text.lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        raise ValueError("yes or no, please")
    return text


def _choose(text: str, choices: list[tuple[Any, str]]) -> Any:
    if text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1][0]
    for value, title in choices:
        if text in (str(value), title):
            return value
    raise ValueError(f"one of {', '.join(str(v) for v, _ in choices)}, or its number")
