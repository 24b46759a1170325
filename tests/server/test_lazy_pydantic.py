"""A server of plain-typed functions starts without pydantic, and still validates with it.

Start-up time is what users of desktop hosts feel (every configured server is
started at launch), and pydantic's import is a third of it. The plain
signatures' schemas are written by mcpkit (:mod:`mcpkit.server.signature`):
they must be exactly pydantic's, and pydantic must still take over for any
argument the exact-type check does not accept.
"""

from __future__ import annotations

import json
import subprocess
import sys
from keyword import iskeyword
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpkit.server.signature import _MODEL_ATTRIBUTES, inspect_function
from tests.transports.stdio_peer import FIXTURES, StdioPeer

HEAVY = ("pydantic", "pydantic_core", "mcpkit.auth.resource_server")


def loaded_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter has imported after running ``code``."""
    probe = (
        f"{code}\nimport sys, json\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return list(json.loads(proc.stdout.splitlines()[-1]))


def test_importing_mcpserver_imports_neither_pydantic_nor_the_auth_server() -> None:
    assert loaded_after("from mcpkit import MCPServer") == []


def test_registering_plain_tools_and_listing_them_imports_no_pydantic() -> None:
    code = (
        "from mcpkit import MCPServer\n"
        "server = MCPServer(name='x', version='1')\n"
        "@server.tool\n"
        "async def echo(text: str, times: int = 1, loud: bool | None = None) -> str:\n"
        "    return text\n"
        "@server.tool\n"
        "def total(a: float, b: float = 0.5) -> float:\n"
        "    return a + b\n"
        "@server.prompt\n"
        "def greet(name: str) -> str:\n"
        "    return 'hi ' + name\n"
        "import mcpkit.transports.stdio\n"
        "(greeting,) = server.prompts.registered.values()\n"
        "assert greeting.arguments() == [\n"
        "    {'name': 'name', 'required': True}]\n"
    )
    assert loaded_after(code) == []


def test_a_tool_taking_a_model_still_imports_pydantic_at_registration() -> None:
    code = (
        "from typing import Annotated\n"
        "from mcpkit import MCPServer\n"
        "server = MCPServer(name='x', version='1')\n"
        "@server.tool\n"
        "def tagged(tags: list[str]) -> str:\n"
        "    return ','.join(tags)\n"
    )
    assert "pydantic" in loaded_after(code)


async def test_a_plain_server_over_stdio_loads_pydantic_only_when_an_argument_needs_it() -> None:
    peer = await StdioPeer.spawn([sys.executable, str(FIXTURES / "stdio_plain_server.py")])
    try:
        await peer.initialize()
        listing = await peer.request("tools/list")
        tools = {t["name"]: t for t in listing["result"]["tools"]}
        assert tools["add"]["inputSchema"] == {
            "properties": {
                "a": {"description": "the first", "title": "A", "type": "integer"},
                "b": {"default": 1, "description": "the second", "title": "B", "type": "integer"},
                "note": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "title": "Note",
                },
            },
            "required": ["a"],
            "type": "object",
        }

        def text(response: dict[str, Any]) -> str:
            return str(response["result"]["content"][0]["text"])

        assert text(await peer.call_tool("echo", {"text": "hi"})) == "hi"
        assert text(await peer.call_tool("add", {"a": 2, "b": 3})) == "5"
        assert json.loads(text(await peer.call_tool("loaded", {}))) == []
        # pydantic's lax mode takes the string "4"; its error names the bad field.
        assert text(await peer.call_tool("add", {"a": "4"})) == "5"
        bad = await peer.call_tool("add", {"a": "four"})
        assert bad["result"]["isError"] is True
        assert "a: Input should be a valid integer" in text(bad)
        missing = await peer.call_tool("add", {})
        assert "a: Field required" in text(missing)
        assert "pydantic" in json.loads(text(await peer.call_tool("loaded", {})))
    finally:
        await peer.kill()


def test_names_pydantic_treats_specially_are_left_to_pydantic() -> None:
    from pydantic import BaseModel

    public = {name for name in dir(BaseModel) if not name.startswith(("_", "model_"))}
    assert public <= _MODEL_ATTRIBUTES


# Plain annotations (see FunctionSignature.plain), the defaults each may take, and names.
PLAIN_TYPES: list[Any] = [
    str, int, float, bool, Any,
    str | None, int | None, Optional[float], None | bool,  # noqa: UP045 (spellings under test)
]  # fmt: skip
defaults = st.one_of(
    st.just(...),
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: n not in _MODEL_ATTRIBUTES and not n.startswith("model_") and not iskeyword(n)
)
params = st.lists(
    st.tuples(names, st.sampled_from(PLAIN_TYPES), defaults, st.none() | st.text(max_size=12)),
    max_size=5,
    unique_by=lambda p: p[0],
)


def make_function(spec: list[tuple[str, Any, Any, str | None]]) -> Any:
    """A function with those parameters (required ones first) and a Google-style docstring."""
    ordered = sorted(spec, key=lambda p: p[2] is not ...)
    namespace: dict[str, Any] = {}
    args = ", ".join(
        f"{name}: _t{i}" + ("" if default is ... else f" = _d{i}")
        for i, (name, _, default, _) in enumerate(ordered)
    )
    for i, (_, annotation, default, _) in enumerate(ordered):
        namespace[f"_t{i}"], namespace[f"_d{i}"] = annotation, default
    exec(f"def fn({args}) -> str:\n    return ''\n", namespace)
    fn = namespace["fn"]
    described = [(n, d.strip()) for n, _, _, d in ordered if d and d.strip() and "\n" not in d]
    lines = [f"        {n}: {d}" for n, d in described if ":" not in d]
    fn.__doc__ = "Do it.\n\n    Args:\n" + "\n".join(lines) + "\n" if lines else "Do it."
    return fn


@settings(max_examples=80, deadline=None)
@given(params)
def test_a_plain_signatures_schema_is_exactly_pydantics(
    spec: list[tuple[str, Any, Any, str | None]],
) -> None:
    fn = make_function(spec)
    sig = inspect_function(fn, model_name="fn_arguments", schema=True)
    assert sig._schema is not None and sig._model is None  # written here, model not built
    ours = sig.json_schema()
    theirs = sig.model.model_json_schema()
    theirs.pop("title", None)
    theirs.setdefault("properties", {})
    assert json.dumps(ours) == json.dumps(theirs)  # the same keys in the same order
    by_model = [
        (name, info.description, info.is_required())
        for name, info in sig.model.model_fields.items()
    ]
    sig._model = None
    assert sig.described_parameters() == by_model  # what prompts/list shows


# pydantic warns that `json` and `schema` shadow BaseModel attributes: its own word, as before.
@pytest.mark.filterwarnings("ignore:Field name .* shadows an attribute:UserWarning")
@pytest.mark.parametrize("name", ["_private", "model_name", "json", "schema"])
def test_special_names_still_go_through_pydantic_at_registration(name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"def fn({name}: str = 'x') -> str:\n    return ''\n", namespace)
    try:
        sig = inspect_function(namespace["fn"], model_name="fn_arguments", schema=True)
    except Exception:
        return  # pydantic refused it, as before
    assert sig._schema is None and sig._model is not None
