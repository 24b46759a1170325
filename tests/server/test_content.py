"""Content helpers, and content shaped for older revisions."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from mcpkit import Audio, EmbeddedResource, Image, MCPServer, ResourceLink, Text, ToolResult
from mcpkit.protocol.versions import REVISIONS
from mcpkit.server.content import shape_content, shape_result, to_content, to_content_list
from mcpkit.testing import connect
from tests.schema import validate_message


def test_text_image_audio_helpers() -> None:
    assert Text("hi", annotations={"audience": ["user"]}).to_dict() == {
        "type": "text",
        "text": "hi",
        "annotations": {"audience": ["user"]},
    }
    assert Image(data=b"\x01", mime_type="image/jpeg").to_dict() == {
        "type": "image",
        "data": "AQ==",
        "mimeType": "image/jpeg",
    }
    # Already-encoded base64 text is passed through.
    assert Audio(data="AQ==", mime_type="audio/mpeg").to_dict()["data"] == "AQ=="


def test_image_from_a_path_guesses_the_mime_type(tmp_path: Path) -> None:
    path = tmp_path / "pic.jpg"
    path.write_bytes(b"\xff\xd8\xff")
    item = Image(path=path).to_dict()
    assert item == {
        "type": "image",
        "data": base64.b64encode(b"\xff\xd8\xff").decode(),
        "mimeType": "image/jpeg",
    }


def test_embedded_resource_text_and_blob() -> None:
    assert EmbeddedResource(uri="a://b", text="t").to_dict() == {
        "type": "resource",
        "resource": {"uri": "a://b", "text": "t"},
    }
    assert EmbeddedResource(
        uri="a://b", blob=b"\x00", mime_type="x/y", meta={"k": 1}
    ).to_dict() == {
        "type": "resource",
        "resource": {"uri": "a://b", "mimeType": "x/y", "blob": "AA=="},
        "_meta": {"k": 1},
    }


def test_to_content_of_odd_values() -> None:
    assert to_content({"type": "text", "text": "as is"}) == {"type": "text", "text": "as is"}
    assert to_content({"a": 1}) == {"type": "text", "text": '{"a":1}'}
    assert to_content(b"\x01\x02") == {"type": "text", "text": "AQI="}
    assert to_content(3.5) == {"type": "text", "text": "3.5"}
    assert to_content_list(None) == []
    assert to_content_list(("a", "b")) == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b"},
    ]


def test_tool_result_with_only_structured_content_gets_json_text() -> None:
    out = ToolResult(structured_content={"x": 1}).to_dict()
    assert out == {"content": [{"type": "text", "text": '{"x":1}'}], "structuredContent": {"x": 1}}


LINK = {"type": "resource_link", "uri": "file:///a", "name": "a", "_meta": {"m": 1}}
AUDIO = {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}
TEXT_WITH_META = {
    "type": "text",
    "text": "t",
    "_meta": {"m": 1},
    "annotations": {"priority": 1, "lastModified": "2025-01-01T00:00:00Z"},
}


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_shaped_results_validate_in_their_revision(version: str) -> None:
    revision = REVISIONS[version]
    result = {"content": [LINK, AUDIO, TEXT_WITH_META], "structuredContent": {"a": 1}}
    shaped = shape_result(result, revision)
    validate_message(
        {"jsonrpc": "2.0", "id": 1, "result": shaped}, version, request_method="tools/call"
    )
    kinds = [c["type"] for c in shaped["content"]]
    if version == "2024-11-05":
        assert kinds == ["text", "text", "text"]
        assert "audio" in shaped["content"][1]["text"]
    elif version == "2025-03-26":
        assert kinds == ["text", "audio", "text"]
        assert shaped["content"][0]["text"] == "a: file:///a"
    else:
        assert shaped is result  # nothing to change: no copy on the hot path
    assert ("structuredContent" in shaped) is (version >= "2025-06-18")


def test_shape_content_drops_meta_and_last_modified_before_2025_06_18() -> None:
    out = shape_content(TEXT_WITH_META, REVISIONS["2025-03-26"])
    assert out == {"type": "text", "text": "t", "annotations": {"priority": 1}}
    embedded = {"type": "resource", "resource": {"uri": "a://b", "text": "x", "_meta": {"k": 1}}}
    assert shape_content(embedded, REVISIONS["2024-11-05"]) == {
        "type": "resource",
        "resource": {"uri": "a://b", "text": "x"},
    }


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_every_content_kind_from_a_tool_validates_in_every_revision(version: str) -> None:
    server = MCPServer(name="x", version="1")

    @server.tool
    def everything() -> list[Any]:
        return [
            "text",
            Text(
                "annotated",
                annotations={"audience": ["assistant"], "priority": 0.5},
                meta={"k": "v"},
            ),
            Image(data=b"\x89PNG", mime_type="image/png"),
            Audio(data=b"RIFF", mime_type="audio/wav"),
            ResourceLink(uri="file:///x", name="x", title="The X", size=3),
            EmbeddedResource(uri="test://t", text="body", mime_type="text/plain"),
            EmbeddedResource(uri="test://b", blob=b"\x00"),
        ]

    async with connect(server, protocol_version=version) as client:
        result = await client.call_tool("everything")
    assert len(result["content"]) == 7  # schema validation of the traffic happens at teardown
    if version < "2025-06-18":
        assert result["content"][4] == {"type": "text", "text": "The X: file:///x"}


async def test_resource_contents_lose_meta_before_2025_06_18() -> None:
    server = MCPServer(name="x", version="1")

    @server.resource("test://m")
    def m() -> dict[str, Any]:
        return {"text": "body", "_meta": {"k": 1}}

    async with connect(server, protocol_version="2025-03-26") as old, connect(server) as new:
        assert (await old.read_resource("test://m"))["contents"] == [
            {"uri": "test://m", "text": "body"}
        ]
        assert (await new.read_resource("test://m"))["contents"][0]["_meta"] == {"k": 1}
