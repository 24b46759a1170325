"""Server metadata (the seeds' id, repository, release date, packages, remotes) and server.json."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from mcpkit import MCPServer, RegistrationError
from mcpkit.server.metadata import (
    SERVER_SCHEMA_URL,
    Package,
    Remote,
    Repository,
    ServerJsonError,
    ServerMetadata,
    slugify,
    validate_server_json,
)

METADATA = (
    "id",
    "repository",
    "release_date",
    "is_latest",
    "package_canonical",
    "packages",
    "remotes",
)


def weather(**overrides: Any) -> MCPServer:
    options: dict[str, Any] = {
        "name": "Weather",
        "version": "1.2.0",
        "id": "io.github.example/weather",
        "description": "Forecasts and alerts for any city.",
        "repository": {"url": "https://github.com/example/weather", "source": "github"},
        "release_date": "2025-10-01T12:00:00Z",
        "package_canonical": "pypi",
        "packages": [
            {"registryType": "pypi", "identifier": "weather-mcp", "version": "1.2.0"},
        ],
        "remotes": [{"type": "streamable-http", "url": "https://weather.example.com/mcp"}],
    }
    options.update(overrides)
    metadata = {key: options.pop(key) for key in METADATA if key in options}
    return MCPServer(metadata=ServerMetadata(**metadata), **options)


# -- id ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("My Custom Server", "my-custom-server"),
        ("  Déjà  Vu!! v2 ", "deja-vu-v2"),
        ("io.github.Example/Weather", "io.github.example/weather"),
        ("snake_case-and.dots", "snake_case-and.dots"),
    ],
)
def test_a_given_id_is_slugified(given: str, expected: str) -> None:
    assert slugify(given) == expected
    assert MCPServer(name="s", version="1", metadata=ServerMetadata(id=given)).id == expected


def test_without_an_id_the_server_gets_a_uuid_per_instance() -> None:
    first, second = MCPServer(name="s", version="1"), MCPServer(name="s", version="1")
    assert str(uuid.UUID(first.id)) == first.id
    assert first.id != second.id


def test_the_id_is_final() -> None:
    server = MCPServer(name="s", version="1", metadata=ServerMetadata(id="fixed"))
    with pytest.raises(AttributeError):
        server.id = "changed"  # type: ignore[misc]
    assert server.id == "fixed"


def test_an_id_without_letters_or_digits_is_a_registration_error() -> None:
    with pytest.raises(RegistrationError, match="id: '!!!'"):
        MCPServer(name="s", version="1", metadata=ServerMetadata(id="!!!"))


# -- release date, latest flag ----------------------------------------------------------------------


def test_release_date_defaults_to_construction_time() -> None:
    before = datetime.now(UTC)
    server = MCPServer(name="s", version="1")
    after = datetime.now(UTC)
    released = datetime.fromisoformat(server.get_server_info()["version_detail"]["release_date"])
    assert before <= released <= after


def test_release_date_accepts_iso_strings_and_datetimes_and_rejects_anything_else() -> None:
    assert weather().get_server_info()["version_detail"]["release_date"] == "2025-10-01T12:00:00Z"
    when = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    info = MCPServer(
        name="s", version="1", metadata=ServerMetadata(release_date=when)
    ).get_server_info()
    assert info["version_detail"]["release_date"] == "2025-01-02T03:04:05+00:00"
    with pytest.raises(RegistrationError, match="release_date: 'last tuesday'"):
        MCPServer(name="s", version="1", metadata=ServerMetadata(release_date="last tuesday"))


def test_is_latest_defaults_to_true() -> None:
    assert MCPServer(name="s", version="1").get_server_info()["version_detail"]["is_latest"]
    older = MCPServer(name="s", version="1", metadata=ServerMetadata(is_latest=False))
    assert older.get_server_info()["version_detail"]["is_latest"] is False


# -- info and detail ---------------------------------------------------------------------------------


def test_server_info_has_the_seeds_shape() -> None:
    info = weather().get_server_info()
    assert info["id"] == "io.github.example/weather"
    assert info["name"] == "Weather"
    assert info["description"] == "Forecasts and alerts for any city."
    assert info["repository"] == {"url": "https://github.com/example/weather", "source": "github"}
    assert info["version_detail"] == {
        "version": "1.2.0",
        "release_date": "2025-10-01T12:00:00Z",
        "is_latest": True,
    }


def test_server_info_leaves_out_what_is_not_set() -> None:
    info = MCPServer(name="bare", version="0.1").get_server_info()
    assert "description" not in info and "repository" not in info
    assert info["version_detail"]["version"] == "0.1"


def test_server_detail_adds_packaging() -> None:
    detail = weather().get_server_detail()
    assert detail["id"] == "io.github.example/weather"
    assert detail["version_detail"]["version"] == "1.2.0"
    assert detail["package_canonical"] == "pypi"
    assert detail["packages"] == [
        {
            "registry_name": "pypi",
            "name": "weather-mcp",
            "version": "1.2.0",
            "transport_type": "stdio",
        }
    ]
    assert detail["remotes"] == [
        {"transport_type": "streamable-http", "url": "https://weather.example.com/mcp"}
    ]


def test_seeds_style_packages_and_typed_objects_are_accepted() -> None:
    server = MCPServer(
        name="s",
        version="1.0.0",
        metadata=ServerMetadata(
            repository=Repository(url="https://gitlab.com/a/b", source="gitlab", id="42"),
            packages=[
                {"registry_name": "npm", "name": "@a/b", "version": "1.0.0"},
                Package(registry_type="oci", identifier="docker.io/a/b", version="1.0.0"),
            ],
            remotes=[
                {"transport_type": "streamable", "url": "https://a.example/mcp"},
                Remote(type="sse", url="https://a.example/sse"),
            ],
        ),
    )
    detail = server.get_server_detail()
    assert detail["repository"]["id"] == "42"
    assert [p["name"] for p in detail["packages"]] == ["@a/b", "docker.io/a/b"]
    assert [r["transport_type"] for r in detail["remotes"]] == ["streamable-http", "sse"]


def test_metadata_mistakes_are_collected_with_the_other_registration_errors() -> None:
    with pytest.raises(RegistrationError) as info:
        MCPServer(
            name="s",
            version="1",
            metadata=ServerMetadata(
                release_date="not a date",
                packages=[{"registryType": "pypi", "identifer": "typo", "version": "1"}],
                remotes=["https://not-a-mapping"],  # type: ignore[list-item]
            ),
            tools={"bad": 42},  # type: ignore[dict-item]
        )
    problems = info.value.problems
    assert any(p.startswith("release_date:") for p in problems)
    assert any("packages[0]" in p and "identifer" in p for p in problems)
    assert any(p.startswith("remotes[0]") for p in problems)
    assert any("tool 'bad'" in p for p in problems)


# -- server.json -----------------------------------------------------------------------------------------


def test_registry_json_for_a_valid_configuration() -> None:
    doc = weather(website_url="https://weather.example.com").registry_json()
    assert doc == {
        "$schema": SERVER_SCHEMA_URL,
        "name": "io.github.example/weather",
        "description": "Forecasts and alerts for any city.",
        "version": "1.2.0",
        "websiteUrl": "https://weather.example.com",
        "repository": {"url": "https://github.com/example/weather", "source": "github"},
        "packages": [
            {
                "registryType": "pypi",
                "identifier": "weather-mcp",
                "version": "1.2.0",
                "transport": {"type": "stdio"},
            }
        ],
        "remotes": [{"type": "streamable-http", "url": "https://weather.example.com/mcp"}],
    }
    assert validate_server_json(doc) == []


def test_registry_name_comes_from_the_option_the_id_or_the_github_repository() -> None:
    assert weather().registry_json(name="com.example/forecasts")["name"] == "com.example/forecasts"
    assert weather().registry_json()["name"] == "io.github.example/weather"
    from_repo = weather(id="weather service")
    assert from_repo.id == "weather-service"
    assert from_repo.registry_json()["name"] == "io.github.example/weather"
    with pytest.raises(ServerJsonError) as info:
        weather(id=None, repository=None).registry_json()
    assert info.value.problems[0].startswith("name: no registry name")


def test_publisher_metadata_goes_under_meta() -> None:
    meta = {"io.modelcontextprotocol.registry/publisher-provided": {"tool": "mcpkit"}}
    assert weather().registry_json(meta=meta)["_meta"] == meta


@pytest.mark.parametrize(
    ("overrides", "name", "problem"),
    [
        ({"description": "x" * 101}, None, "description: 101 characters"),
        ({"description": None}, None, "description: is required"),
        ({"version": "^1.2.0"}, None, "version: '^1.2.0' is not one exact version"),
        ({"version": "latest"}, None, "version: 'latest'"),
        ({"version": "1.x"}, None, "version: '1.x'"),
        ({}, "weather", "name: 'weather' is not a reverse-DNS name"),
        ({}, "io.github.a/b/c", "name: 'io.github.a/b/c'"),
        ({}, "localhost/x", "name: 'localhost/x'"),
        ({"repository": {"url": "not a url", "source": "github"}}, None, "repository.url"),
        (
            {"repository": {"url": "https://example.com/r", "source": "github"}},
            None,
            "a github repository lives on github.com",
        ),
        (
            {"repository": {"url": "https://github.com/a/b"}},
            None,
            "repository.source: must be a non-empty",
        ),
        (
            {"packages": [{"registryType": "apt", "identifier": "w", "version": "1"}]},
            None,
            "packages[0].registryType: 'apt'",
        ),
        (
            {"packages": [{"registryType": "npm", "identifier": "w", "version": ">=1"}]},
            None,
            "packages[0].version: '>=1'",
        ),
        (
            {
                "packages": [
                    {"registryType": "npm", "identifier": "w", "version": "1", "transport": "ws"}
                ]
            },
            None,
            "packages[0].transport.type: must be one of stdio, streamable-http, sse",
        ),
        (
            {
                "packages": [
                    {
                        "registryType": "npm",
                        "identifier": "w",
                        "version": "1",
                        "transport": {"type": "sse"},
                    }
                ]
            },
            None,
            "packages[0].transport.url",
        ),
        (
            {"packages": [{"registryType": "mcpb", "identifier": "https://x/y", "version": "1"}]},
            None,
            "packages[0].fileSha256: is required for mcpb",
        ),
        ({"remotes": [{"type": "stdio", "url": "https://x"}]}, None, "remotes[0].type"),
        ({"remotes": [{"type": "sse", "url": "ftp://x"}]}, None, "remotes[0].url"),
        ({"website_url": "example.com"}, None, "websiteUrl: 'example.com'"),
    ],
)
def test_invalid_configurations_name_the_field_the_registry_would_reject(
    overrides: dict[str, Any], name: str | None, problem: str
) -> None:
    server = weather(**overrides)
    with pytest.raises(ServerJsonError) as info:
        server.registry_json(name=name)
    assert any(problem in p for p in info.value.problems), info.value.problems
    assert problem in str(info.value)


def test_every_problem_is_reported_at_once() -> None:
    server = weather(
        description="",
        version="*",
        packages=[{"registryType": "npm", "identifier": "", "version": "latest"}],
    )
    with pytest.raises(ServerJsonError) as info:
        server.registry_json(name="nope")
    fields = [p.split(":")[0] for p in info.value.problems]
    assert fields == [
        "name",
        "description",
        "version",
        "packages[0].identifier",
        "packages[0].version",
    ]


def test_validate_server_json_checks_hand_written_documents() -> None:
    good: dict[str, Any] = {
        "$schema": SERVER_SCHEMA_URL,
        "name": "com.example/tool",
        "description": "A tool.",
        "version": "2.0.0-beta.1",
        "packages": [
            {
                "registryType": "npm",
                "identifier": "@example/tool",
                "version": "2.0.0-beta.1",
                "runtimeHint": "npx",
                "transport": {"type": "streamable-http", "url": "http://localhost:{port}/mcp"},
                "environmentVariables": [{"name": "API_KEY", "isSecret": True}],
                "packageArguments": [
                    {"type": "positional", "valueHint": "dir"},
                    {"type": "named", "name": "--port", "value": "8080"},
                ],
            }
        ],
        "_meta": {"io.modelcontextprotocol.registry/publisher-provided": {"x": 1}},
    }
    assert validate_server_json(good) == []
    bad = {
        **good,
        "$schema": "https://static.modelcontextprotocol.io/schemas/2099-01-01/server.schema.json",
        "extra": True,
        "packages": [
            {
                **good["packages"][0],
                "fileSha256": "NOT-HEX",
                "environmentVariables": [{"value": "no name"}],
                "packageArguments": [{"type": "positional"}, {"type": "flag"}],
                "color": "blue",
            }
        ],
    }
    problems = validate_server_json(bad)
    for expected in (
        "extra: unknown field",
        "$schema: mcpkit writes and checks",
        "packages[0].color: unknown field",
        "packages[0].fileSha256: must be 64 lowercase hexadecimal characters",
        "packages[0].environmentVariables[0].name: is required",
        "packages[0].packageArguments[0]: a positional argument needs 'valueHint' or 'value'",
        "packages[0].packageArguments[1].type: must be 'positional' or 'named'",
    ):
        assert any(p.startswith(expected) for p in problems), (expected, problems)
    assert validate_server_json([1, 2]) == ["(document): must be a JSON object"]


def test_the_metadata_is_one_frozen_value_the_server_keeps() -> None:
    metadata = ServerMetadata(
        id="Weather Service", packages=[{"registry_name": "npm", "name": "w"}]
    )
    assert (metadata.id, metadata.packages[0].identifier) == ("weather-service", "w")
    assert metadata.problems == ()
    with pytest.raises(AttributeError):
        metadata.id = "other"  # type: ignore[misc]
    server = MCPServer(name="s", version="1", metadata=metadata)
    assert server.metadata is metadata and server.id == "weather-service"


def test_metadata_problems_are_kept_until_a_server_raises_them() -> None:
    metadata = ServerMetadata(release_date="soon")
    assert [p.split(":")[0] for p in metadata.problems] == ["release_date"]
    with pytest.raises(RegistrationError, match="release_date: 'soon'"):
        MCPServer(name="s", version="1", metadata=metadata)
