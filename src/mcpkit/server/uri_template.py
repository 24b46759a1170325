"""RFC 6570 URI Templates: full level 1-4 expansion and reverse matching.

A :class:`UriTemplate` is parsed once. Expansion follows RFC 6570 section 3 and
the algorithm of Appendix A. The RFC does not define matching, so this module
does: the template is compiled up front into one regular expression, and
:meth:`UriTemplate.match` is one ``fullmatch`` plus light post-processing.

Matching rules
--------------
* Literals match themselves; a literal character that expansion pct-encodes
  (section 3.1) matches raw or encoded.
* An expression matches what its expansion could produce, left to right. A
  value never contains ``/ ? # ,`` for ``{v}``; ``/ ? # , .`` for ``{.v}``;
  ``/ ? #`` for ``{/v}`` (one path segment); ``/ ? # ;`` for ``{;v}``; ``? #``
  for ``{+v}`` and ``#`` for ``{#v}`` (both may hold ``/``), plus ``,`` when a
  ``+``/``#`` expression has several variables; ``& #`` for ``{?v}``/``{&v}``.
* Unnamed operators (none, ``+ # . /``) fill their variables left to right and
  trailing ones may be missing (``{x,y}`` on ``"1"`` gives only ``x``). Where
  adjacent expressions are ambiguous, the earlier one takes all it can.
* ``{;a,b}`` matches each ``;name[=value]`` in template order, each optional.
* ``{?a,b}``/``{&c}`` capture the query text, whose parameters are then read by
  name in ANY order, each optional; unknown ones are ignored. ``+`` stays ``+``
  (RFC 6570 encodes a space as ``%20``).
* Exploded variables yield ``list[str]``: ``{/v*}`` one or more segments,
  ``{.v*}`` labels, ``{v*}``/``{+v*}``/``{#v*}`` comma-separated items,
  ``{;v*}``/``{?v*}``/``{&v*}`` every ``v=...`` present. Associative arrays
  look like lists in a URI and are not reconstructed.
* ``{v:N}`` matches at most N characters; a pct-encoded UTF-8 sequence is one
  character (section 2.4.1).
* Values are percent-decoded (UTF-8). A variable whose expression matched
  nothing is absent. ``{v}`` and ``{+v}`` have no leading character, so empty
  text gives ``""``; otherwise the variable is present iff its leading
  character is (``X{.v}``: ``"X"`` gives ``{}``, ``"X."`` gives ``{"v": ""}``).
  ``{v*}``/``{+v*}`` on empty text are absent.
* A variable used twice must match consistently (a prefixed use must equal the
  prefix of the full value), else ``match`` returns ``None``.
* Safe values (a departure from a plain reversal of section 3). A handler that
  joins a value into a file path or a key must not be walked out of its
  directory by ``%2F``. So the decoded value of a *single-segment* variable
  (``{v} {.v} {/v} {;v}``, each item of their exploded forms, and their
  prefixes) never holds ``/``, backslash, NUL or another C0 control or DEL, and is
  never ``.`` or ``..``; a URI that would decode to one does not match (a
  resource read then finds nothing: -32002). ``{+v}`` and ``{#v}`` are the
  explicit opt-in to values that span segments (``file:///{+path}``): they,
  and query values ``{?v}``/``{&v}``, refuse only NUL, and a handler must
  check that what such a value names stays where it should (``..`` included).

Round trip: ``t.match(t.expand(v)) == v`` for string values when the template
is unambiguous (e.g. its expressions are separated by literals). Any safe text
(see above) works for ``{v} {/v} {;v}``, safe text without ``.`` for ``{.v}``,
text without NUL for ``{?v} {&v}``, and only unreserved characters for
``{+v} {#v}``, which pass reserved ones through.

Cost: matching is linear for usual templates; runs like ``{a}-{b}`` are guarded
against backtracking blow-ups (see ``_close_run``), but reserved expressions in
a row (``{+a}/{+b}/{+c}``) can still cost O(n**3) on a URI that does not
match. So ``match`` ignores URIs longer than ``MAX_MATCH_LENGTH`` (16 KiB),
and longer than ``MAX_AMBIGUOUS_MATCH_LENGTH`` (256) for templates with two
or more reserved expressions: a hostile URI then costs at most a few tens of
milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from string import ascii_letters, digits
from typing import Final
from urllib.parse import quote, unquote

from ..errors import UriTemplateError

__all__ = ["UriTemplate", "UriTemplateError"]

# RFC 3986 gen-delims and sub-delims, the "reserved" set of RFC 6570 section 1.5.
_RESERVED: Final = ":/?#[]@!$&'()*+,;="
_URI_CHARS: Final = frozenset(ascii_letters + digits + "-._~" + _RESERVED)
_PCT_SPLIT: Final = re.compile(r"(%[0-9A-Fa-f]{2})")
# Section 2: a literal run, an expression (possibly unclosed) or a stray '}'.
_TOKEN: Final = re.compile(r"([^{}]+)|\{([^{}]*)(\}?)|\}")
# RFC 6570 section 2.3: varchar = ALPHA / DIGIT / "_" / pct-encoded, dots between.
_VARCHAR: Final = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARNAME: Final = re.compile(rf"{_VARCHAR}(?:\.?{_VARCHAR})*")
# RFC 6570 section 2.4.1: max-length = %x31-39 0*3DIGIT (1..9999).
_MAX_LENGTH: Final = re.compile(r"[1-9][0-9]{0,3}")
# Section 2.2: operators reserved for future extensions are an error.
_FUTURE_OPERATORS: Final = "=,!@|"
MAX_MATCH_LENGTH: Final = 16 * 1024
# What the decoded value of a single-segment variable never holds (see "Safe values").
_UNSAFE_SEGMENT: Final = re.compile(r"[/\\\x00-\x1f\x7f]")
MAX_AMBIGUOUS_MATCH_LENGTH: Final = 256

# One *character* in URI text, for prefix counting: a pct-encoded UTF-8 sequence,
# any other '%' (stray or undecodable byte), or one raw character. The branches
# are disjoint, so a bounded repeat of them cannot backtrack exponentially.
_H: Final = "[0-9A-Fa-f]"
_CONT: Final = f"%[89ABab]{_H}"
_UTF8_CHAR: Final = (
    f"%[0-7]{_H}|%[CDcd]{_H}{_CONT}|%[Ee]{_H}{_CONT}{_CONT}|%[Ff][0-7]{_CONT}{_CONT}{_CONT}"
)


@dataclass(frozen=True, slots=True)
class _Operator:
    """One row of the RFC 6570 Appendix A table, plus the matching stop set."""

    first: str
    sep: str
    named: bool
    ifemp: str
    reserved: bool  # allow reserved characters and pct-triplets through unencoded
    stop: str  # characters a matched value never contains (see module docstring)


_OPERATORS: Final[dict[str, _Operator]] = {
    "": _Operator("", ",", False, "", False, "/?#,"),
    "+": _Operator("", ",", False, "", True, "?#"),
    "#": _Operator("#", ",", False, "", True, "#"),
    ".": _Operator(".", ".", False, "", False, "/?#,."),
    "/": _Operator("/", "/", False, "", False, "/?#"),
    ";": _Operator(";", ";", True, "", False, "/?#;"),
    "?": _Operator("?", "&", True, "=", False, "&#"),
    "&": _Operator("&", "&", True, "=", False, "&#"),
}


@dataclass(frozen=True, slots=True)
class _VarSpec:
    name: str
    prefix: int | None
    explode: bool


@dataclass(frozen=True, slots=True)
class _Expression:
    op: _Operator
    specs: tuple[_VarSpec, ...]


# How a captured group turns back into a value.
_VALUE, _NAMED, _LIST, _NAMED_LIST = range(4)


@dataclass(frozen=True, slots=True)
class _Capture:
    group: str
    spec: _VarSpec
    kind: int
    sep: str = ""
    empty_is_absent: bool = False
    segment: bool = False  # a single-segment variable: its values must be safe


def _encode(text: str, reserved: bool) -> str:
    """Pct-encode per RFC 6570 section 3.2.1 (U) or, for + and #, U+R."""
    if not reserved:
        return quote(text, safe="")
    if "%" not in text:
        return quote(text, safe=_RESERVED)
    # Section 3.2.3: pct-encoded triplets already in the value pass through.
    pieces = _PCT_SPLIT.split(text)
    return "".join(p if i % 2 else quote(p, safe=_RESERVED) for i, p in enumerate(pieces))


def _to_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def _expand_var(op: _Operator, spec: _VarSpec, value: object) -> str | None:
    """Appendix A, per varspec; ``None`` means undefined (section 2.3)."""
    if value is None:
        return None
    r = op.reserved
    # (encoded key or None, raw value); a string acts as a one-member list.
    pairs: list[tuple[str | None, str]]
    if isinstance(value, list | tuple):
        pairs = [(None, _to_str(m)) for m in value if m is not None]
    elif isinstance(value, Mapping):
        pairs = [(_encode(_to_str(k), r), _to_str(v)) for k, v in value.items() if v is not None]
    else:
        # Section 2.4.1: the prefix counts characters, not octets. It does not
        # apply to composite values, so it is ignored for those.
        text = _to_str(value)
        pairs = [(None, text if spec.prefix is None else text[: spec.prefix])]
    if not pairs:  # section 2.3: empty lists and maps are undefined
        return None
    if spec.explode:  # section 3.2.1: every member becomes its own item
        items: list[str] = []
        for key, v in pairs:
            key = spec.name if key is None and op.named else key
            if key is None:
                items.append(_encode(v, r))
            else:
                items.append(key + ("=" + _encode(v, r) if v else op.ifemp if op.named else "="))
        return op.sep.join(items)
    joined = ",".join(_encode(v, r) if k is None else f"{k},{_encode(v, r)}" for k, v in pairs)
    if not op.named:
        return joined
    return spec.name + ("=" + joined if joined else op.ifemp)


def _literal_regex(text: str) -> str:
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch in _URI_CHARS or (ch == "%" and _PCT_SPLIT.match(text, i)):
            out.append(re.escape(ch))
        else:  # expansion pct-encodes it (section 3.1); accept both spellings
            enc = re.sub("[A-F]", lambda m: f"[{m[0]}{m[0].lower()}]", quote(ch, safe=""))
            out.append(f"(?:{re.escape(ch)}|{enc})")
    return "".join(out)


def _value_regex(stop: str, prefix: int | None) -> str:
    cls = re.escape(stop)
    if prefix is None:
        return f"[^{cls}]*"
    return f"(?:{_UTF8_CHAR}|(?!{_UTF8_CHAR})%|[^{cls}%]){{0,{prefix}}}"


class UriTemplate:
    """An RFC 6570 URI template (levels 1-4) that can also match URIs."""

    def __init__(self, template: str) -> None:
        self.template = template
        raw_parts = _parse(template)
        # Section 3.1: literals outside the URI character set are pct-encoded;
        # do it once here so expand() only concatenates.
        self._parts = tuple(_encode(p, True) if isinstance(p, str) else p for p in raw_parts)
        names: dict[str, None] = {}
        for part in raw_parts:
            if isinstance(part, _Expression):
                names.update(dict.fromkeys(s.name for s in part.specs))
        self.variables: tuple[str, ...] = tuple(names)
        self.is_static = not names
        # Several reserved expressions ({+a}/{+b}/{+c}) can make a failing match
        # backtrack polynomially; bound the input those templates will look at.
        reserved = sum(
            1 for p in raw_parts if isinstance(p, _Expression) and p.op.reserved and p.specs
        )
        self.max_match_length = MAX_MATCH_LENGTH if reserved < 2 else MAX_AMBIGUOUS_MATCH_LENGTH
        self._compile(raw_parts)

    def _compile(self, raw_parts: tuple[str | _Expression, ...]) -> None:
        pattern: list[str] = []
        captures: list[_Capture] = []
        self._query_groups: list[str] = []
        self._query_specs: list[tuple[_VarSpec, str]] = []
        counter = 0
        # A "run" is a stretch of literals and {v}/{.v}/{;v} expressions, none of
        # which can contain '/', '?' or '#'; see _close_run for why.
        run: list[str] = []
        run_exprs, run_comma, suffix = 0, False, ""

        def close_run(forced: bool) -> None:
            nonlocal run_exprs, run_comma, suffix
            pattern.append(_close_run("".join(run), run_exprs, run_comma, suffix, forced))
            run.clear()
            run_exprs, run_comma, suffix = 0, False, ""

        for index, part in enumerate(raw_parts):
            if isinstance(part, str):
                for j, chunk in enumerate(re.split("([/?#])", part)):
                    if j % 2:
                        close_run(True)
                        pattern.append(re.escape(chunk))
                    elif chunk:
                        suffix = _literal_regex(chunk)
                        run.append(suffix)
                        run_comma |= "," in chunk
                continue
            op, specs = part.op, part.specs
            segment = not op.reserved and "/" in op.stop
            groups = [f"g{counter + i}" for i in range(len(specs))]
            counter += len(specs)
            piece = ""
            if op.sep == "&":
                # Section 3.2.8/3.2.9: parameters are read by name afterwards.
                piece = f"(?:{re.escape(op.first)}(?P<{groups[0]}>[^#]*))?"
                self._query_groups.append(groups[0])
                self._query_specs.extend((s, unquote(s.name)) for s in specs)
            elif op.named:  # ';': each ;name[=value] optional, in template order
                val = f"[^{re.escape(op.stop)}]*"
                for spec, g in zip(specs, groups, strict=True):
                    name = re.escape(spec.name)
                    if spec.explode:
                        piece += f"(?P<{g}>(?:;{name}(?:={val})?)+)?"
                        captures.append(_Capture(g, spec, _NAMED_LIST, segment=segment))
                    else:
                        val_p = _value_regex(op.stop, spec.prefix)
                        piece += f"(?:;{name}(?P<{g}>={val_p}|))?"
                        captures.append(_Capture(g, spec, _NAMED, segment=segment))
            else:
                # With several variables (or exploded items) the separator must
                # delimit values, so it joins the stop set (matters for + and #).
                stop = op.stop + (op.sep if len(specs) > 1 else "")
                for i in reversed(range(len(specs))):
                    spec, g = specs[i], groups[i]
                    lead = op.first if i == 0 else op.sep
                    if spec.explode:
                        item = f"[^{re.escape(stop + op.sep)}]*"
                        body = f"{item}(?:{re.escape(op.sep)}{item})*"
                        captures.append(_Capture(g, spec, _LIST, op.sep, lead == "", segment))
                    else:
                        body = _value_regex(stop, spec.prefix)
                        captures.append(_Capture(g, spec, _VALUE, segment=segment))
                    # Trailing variables may be undefined: nest the optionals.
                    piece = f"(?:{re.escape(lead)}(?P<{g}>{body}){piece})?"
            if op.first in ("", ".", ";") and not op.reserved:
                run.append(piece)
                run_exprs += 1
                run_comma |= op.named or len(specs) > 1 or any(v.explode for v in specs)
                suffix = ""
            else:
                close_run(_leads_with_delimiter(raw_parts[index:]))
                pattern.append(piece)
        close_run(True)
        # Longest prefix first, so shorter prefixed uses are checked against it.
        captures.sort(key=lambda c: -(c.spec.prefix or 10**5))
        self._captures = tuple(captures)
        self._regex = re.compile("".join(pattern))

    def expand(self, values: Mapping[str, object]) -> str:
        """Expand with ``values`` (RFC 6570 section 3); missing/None is undefined."""
        out: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
                continue
            op = part.op
            pieces = [
                piece
                for spec in part.specs
                if (piece := _expand_var(op, spec, values.get(spec.name))) is not None
            ]
            if pieces:  # section 3.2.1: "first" only if some variable is defined
                out.append(op.first + op.sep.join(pieces))
        return "".join(out)

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """Extract variables from ``uri``; ``None`` if it does not match.

        URIs longer than ``max_match_length`` never match (a bound on the time
        a hostile URI can cost), nor do URIs whose single-segment variables
        would decode to ``/``, a backslash, NUL, a control character, ``.`` or
        ``..`` (see "Safe values" in the module docstring).
        """
        if len(uri) > self.max_match_length:
            return None
        m = self._regex.fullmatch(uri)
        if m is None:
            return None
        found: dict[str, str | list[str]] = {}
        for cap in self._captures:
            text = m.group(cap.group)
            if text is None:
                continue
            value: str | list[str]
            if cap.kind == _VALUE:
                value = unquote(text)
            elif cap.kind == _NAMED:
                value = unquote(text[1:])  # text is "=value" or "" (section 3.2.7)
            elif cap.kind == _LIST:
                if not text and cap.empty_is_absent:
                    continue
                value = [unquote(item) for item in text.split(cap.sep)]
            else:
                value = [unquote(item.partition("=")[2]) for item in text.split(";")[1:]]
            if not _safe(value, cap.segment) or not _merge(found, cap.spec, value):
                return None
        if self._query_groups and not self._match_query(m, found):
            return None
        return {name: found[name] for name in self.variables if name in found}

    def _match_query(self, m: re.Match[str], found: dict[str, str | list[str]]) -> bool:
        params: dict[str, list[str]] = {}
        for group in self._query_groups:
            for pair in (m.group(group) or "").split("&"):
                if pair:
                    key, _, raw = pair.partition("=")
                    params.setdefault(unquote(key), []).append(unquote(raw))
        for spec, key in self._query_specs:
            present = params.get(key)
            if not present:
                continue
            value: str | list[str] = list(present) if spec.explode else present[0]
            if not _safe(value, False):
                return False
            if spec.prefix is not None and len(value) > spec.prefix:
                return False
            if not _merge(found, spec, value):
                return False
        return True

    def __str__(self) -> str:
        return self.template

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UriTemplate):
            return NotImplemented
        return self.template == other.template

    def __hash__(self) -> int:
        return hash(self.template)


def _close_run(body: str, exprs: int, comma: bool, suffix: str, forced: bool) -> str:
    """Guard a run of adjacent expressions against polynomial backtracking.

    ``{a}-{b}-{c}`` lets a failing match try every split of the run (O(n**3)).
    No value or literal in a run holds '/', '?' or '#'; when the text after it
    must start with one of those or be empty (``forced``), the run ends exactly
    at the first of them. Then a lookahead checks cheaply what the run needs
    there (no unproducible ',', its trailing literal), and an atomic group keeps
    a later failure from retrying other splits, which cannot change the result.
    """
    if exprs < 2 or not forced:
        return body
    bad = "/?#" if comma else "/?#,"
    end = r"(?:[/?#]|\Z)"
    return f"(?=[^{re.escape(bad)}]*?{suffix}{end})(?>{body}(?={end}))"


def _leads_with_delimiter(parts: tuple[str | _Expression, ...]) -> bool:
    """Whether text matched by ``parts`` is empty or starts with '/', '?' or '#'."""
    for part in parts:
        if isinstance(part, str):
            if part:
                return part[0] in "/?#"
        elif part.op.first not in ("/", "?", "#"):
            return False
    return True


def _safe(value: str | list[str], segment: bool) -> bool:
    """Whether a decoded value may reach a handler (module docstring: "Safe values")."""
    for item in (value,) if isinstance(value, str) else value:
        if segment:
            if _UNSAFE_SEGMENT.search(item) or item in (".", ".."):
                return False
        elif "\x00" in item:
            return False
    return True


def _merge(found: dict[str, str | list[str]], spec: _VarSpec, value: str | list[str]) -> bool:
    """Record ``value``; False if it contradicts an earlier use of the same variable."""
    old = found.get(spec.name)
    if old is None:
        found[spec.name] = value
        return True
    if old == value:
        return True
    # Captures run longest-prefix first, so a prefixed use must equal its prefix.
    return spec.prefix is not None and isinstance(old, str) and old[: spec.prefix] == value


def _parse(template: str) -> tuple[str | _Expression, ...]:
    """Split ``template`` into raw literals and expressions (section 2)."""
    parts: list[str | _Expression] = []
    for m in _TOKEN.finditer(template):
        if m[1] is not None:
            parts.append(m[1])
        elif m[2] is None:
            raise UriTemplateError("unmatched '}'", template, m.start())
        elif not m[3]:
            raise UriTemplateError("unclosed expression", template, m.start())
        else:
            parts.append(_parse_expression(template, m.start() + 1, m.end() - 1))
    return tuple(parts)


def _parse_expression(template: str, begin: int, end: int) -> _Expression:
    body = template[begin:end]
    if not body:
        raise UriTemplateError("empty expression", template, begin - 1)
    if body[0] in _FUTURE_OPERATORS:
        raise UriTemplateError(f"reserved operator {body[0]!r}", template, begin)
    op_char = body[0] if body[0] in _OPERATORS else ""
    op = _OPERATORS[op_char]
    specs: list[_VarSpec] = []
    offset = begin + len(op_char)
    for raw in body[len(op_char) :].split(","):
        specs.append(_parse_varspec(template, raw, offset))
        offset += len(raw) + 1
    return _Expression(op, tuple(specs))


def _parse_varspec(template: str, raw: str, offset: int) -> _VarSpec:
    m = _VARNAME.match(raw)
    if m is None:
        raise UriTemplateError(f"invalid variable name {raw!r}", template, offset)
    name, rest = m.group(), raw[m.end() :]
    if not rest:
        return _VarSpec(name, None, False)
    if rest == "*":
        return _VarSpec(name, None, True)
    at = offset + m.end()
    if rest.startswith(":"):
        if _MAX_LENGTH.fullmatch(rest[1:]) is None:
            raise UriTemplateError(f"invalid prefix modifier {rest!r} (need 1-9999)", template, at)
        return _VarSpec(name, int(rest[1:]), False)
    raise UriTemplateError(f"invalid variable specifier {raw!r}", template, at)
