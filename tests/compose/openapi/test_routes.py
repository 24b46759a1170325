"""Route maps and tool names."""

from __future__ import annotations

import pytest

from mcpkit.compose.openapi import RESOURCE_ROUTES, RouteMap
from mcpkit.compose.openapi.parse import Body, Operation, Parameter
from mcpkit.compose.openapi.routes import ToolNamer, route_of
from mcpkit.errors import ConfigurationError


def op(
    method: str = "get",
    path: str = "/pets",
    operation_id: str | None = None,
    tags: tuple[str, ...] = (),
    params: tuple[Parameter, ...] = (),
    body: Body | None = None,
) -> Operation:
    return Operation(method, path, operation_id, None, None, tags, params, body, None)


PATH_ID = Parameter("id", "path", True, "simple", False, {})
NEEDED_QUERY = Parameter("q", "query", True, "form", True, {})
OPTIONAL_QUERY = Parameter("q", "query", False, "form", True, {})


def test_without_route_maps_every_operation_is_a_tool() -> None:
    assert route_of(op(), ()) == "tool"
    assert route_of(op("post"), ()) == "tool"


def test_resource_routes_make_gets_resources_or_templates_when_their_uri_can_carry_them() -> None:
    assert route_of(op(), RESOURCE_ROUTES) == "resource"
    assert route_of(op(path="/pets/{id}", params=(PATH_ID,)), RESOURCE_ROUTES) == "template"
    assert route_of(op(params=(OPTIONAL_QUERY,)), RESOURCE_ROUTES) == "resource"
    # A required query parameter has no place in a resource URI: it stays a tool.
    assert route_of(op(params=(NEEDED_QUERY,)), RESOURCE_ROUTES) == "tool"
    assert route_of(op("post"), RESOURCE_ROUTES) == "tool"


def test_the_first_matching_map_wins_and_all_its_conditions_must_hold() -> None:
    maps = [
        RouteMap("exclude", methods=["DELETE"]),
        RouteMap("exclude", pattern=r"^/admin/", tags=["internal"]),
        RouteMap("resource", pattern=r"^/admin/"),
    ]
    assert route_of(op("delete"), maps) == "exclude"
    assert route_of(op(path="/admin/x", tags=("internal", "b")), maps) == "exclude"
    assert route_of(op(path="/admin/x", tags=("b",)), maps) == "resource"
    assert route_of(op(path="/pets/admin/x"), maps) == "tool"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "prompt"}, "kind must be one of"),
        ({"kind": "tool", "methods": "GET"}, "a collection"),
        ({"kind": "tool", "methods": ["FETCH"]}, "not an HTTP method"),
        ({"kind": "tool", "pattern": "("}, "RouteMap pattern"),
    ],
)
def test_a_bad_route_map_is_refused_when_made(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        RouteMap(**kwargs)  # type: ignore[arg-type]


def test_names_come_from_operation_ids_else_method_and_path_and_never_collide() -> None:
    namer = ToolNamer({"renamed": "nice"})
    assert namer.name(op(operation_id="listPets")) == "listPets"
    assert namer.name(op(operation_id="list pets/all!")) == "list_pets_all"
    assert namer.name(op("get", "/pets/{pet_id}/toys")) == "get_pets_pet_id_toys"
    assert namer.name(op(operation_id="renamed")) == "nice"
    assert namer.name(op(operation_id="listPets")) == "listPets_2"
    assert namer.name(op(operation_id="listPets")) == "listPets_3"
    long = namer.name(op(operation_id="x" * 300))
    assert len(long) == 120
