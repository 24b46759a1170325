"""compose.naming: the one set of namespacing rules, both ways."""

from __future__ import annotations

import pytest

from mcpkit.compose.naming import (
    mounted_ref,
    namespace_problem,
    prefixed_name,
    prefixed_uri,
    unprefixed_name,
    unprefixed_uri,
)


def test_names_take_the_namespace_and_an_underscore() -> None:
    assert prefixed_name("weather", "forecast") == "weather_forecast"
    assert unprefixed_name("weather", "weather_forecast") == "forecast"
    assert unprefixed_name("weather", "weatherforecast") is None
    assert unprefixed_name("weather", "other_forecast") is None


@pytest.mark.parametrize(
    ("uri", "mounted"),
    [
        ("weather://stations", "weather://weather/stations"),
        ("file:///etc/x", "file://weather//etc/x"),
        ("weather://city/{name}", "weather://weather/city/{name}"),
        ("https://example.com/a?b=c", "https://weather/example.com/a?b=c"),
    ],
)
def test_uris_keep_their_scheme_and_take_the_namespace_as_first_segment(
    uri: str, mounted: str
) -> None:
    assert prefixed_uri("weather", uri) == mounted
    assert unprefixed_uri("weather", mounted) == uri


@pytest.mark.parametrize("uri", ["urn:isbn:1", "stations", "{scheme}://x", "://x"])
def test_a_uri_without_a_scheme_cannot_be_namespaced(uri: str) -> None:
    assert prefixed_uri("weather", uri) is None


def test_a_uri_outside_the_namespace_is_not_the_childs() -> None:
    assert unprefixed_uri("weather", "weather://other/stations") is None
    assert unprefixed_uri("weather", "weather://weatherstations") is None
    assert unprefixed_uri("weather", "urn:weather/x") is None


def test_completion_refs_follow_their_kinds_rule() -> None:
    assert mounted_ref("w", "ref/prompt", "report") == "w_report"
    assert mounted_ref("w", "ref/resource", "w://c/{n}") == "w://w/c/{n}"


@pytest.mark.parametrize("namespace", ["weather", "eu-west", "v2", "A"])
def test_good_namespaces(namespace: str) -> None:
    assert namespace_problem(namespace) is None


@pytest.mark.parametrize("namespace", ["", "a_b", "a/b", "-a", "a b", "x" * 65, None])
def test_bad_namespaces_are_explained(namespace: object) -> None:
    problem = namespace_problem(namespace)
    assert problem is not None and repr(namespace) in problem
