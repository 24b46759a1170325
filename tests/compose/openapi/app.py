"""A FastAPI app the OpenAPI tests serve as MCP: each endpoint echoes what reached it."""

from __future__ import annotations

import asyncio
import enum
from typing import Annotated, Any

from fastapi import Body, Cookie, FastAPI, Form, Header, HTTPException, Path, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field


class Color(enum.StrEnum):
    red = "red"
    green = "green"


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str = Field(min_length=1)
    favourite: Color = Color.red
    address: Address
    friends: list[Person] = []


class Item(BaseModel):
    id: int
    label: str


app = FastAPI(title="Echo", version="2.5.0", description="Says back what it got.")


@app.get("/items/{item_id}", operation_id="get_item", summary="One item", tags=["items"])
async def get_item(
    item_id: Annotated[int, Path(ge=1)],
    color: Color | None = None,
    tags: Annotated[list[str], Query()] = [],  # noqa: B006 - FastAPI reads it as the default
) -> dict[str, Any]:
    return {"id": item_id, "color": color, "tags": tags}


@app.get("/items", operation_id="list_items", tags=["items"])
async def list_items() -> list[Item]:
    return [Item(id=1, label="one"), Item(id=2, label="two")]


@app.post("/people/{group}", operation_id="add_person", description="Adds someone.")
async def add_person(group: str, person: Person, notify: bool = False) -> Person:
    return person.model_copy(update={"name": f"{group}:{person.name}:{notify}"})


@app.put("/tags", operation_id="replace_tags")
async def replace_tags(tags: Annotated[list[str], Body()]) -> dict[str, Any]:
    return {"tags": tags}


@app.post("/login", operation_id="login")
async def login(username: Annotated[str, Form()], remember: Annotated[bool, Form()]) -> str:
    return f"{username}/{remember}"


@app.get("/whoami", operation_id="whoami")
async def whoami(
    request: Request,
    x_trace: Annotated[str | None, Header()] = None,
    session: Annotated[str | None, Cookie()] = None,
) -> dict[str, Any]:
    return {
        "authorization": request.headers.get("authorization"),
        "x_api_key": request.headers.get("x-api-key"),
        "trace": x_trace,
        "session": session,
    }


@app.get("/slow", operation_id="slow")
async def slow(seconds: float = 5.0) -> str:
    await asyncio.sleep(seconds)
    return "done"


@app.get("/fail/{status}", operation_id="fail")
async def fail(status: int, size: int = 10) -> None:
    raise HTTPException(status_code=status, detail="x" * size)


@app.delete("/items/{item_id}", operation_id="delete_item", status_code=204)
async def delete_item(item_id: int) -> None:
    return None


@app.get("/echo/{value}", operation_id="echo_raw")
async def echo_raw(value: str, request: Request) -> dict[str, Any]:
    """The request as it arrived: raw path and query, the headers that matter."""
    return {
        "path": request.scope["raw_path"].decode(),
        "query": request.scope["query_string"].decode(),
        "mode": request.headers.get("x-mode"),
        "cookie": request.headers.get("cookie"),
        "authorization": request.headers.get("authorization"),
    }


PIXEL = bytes.fromhex("89504e470d0a1a0a")  # a PNG signature stands for an image


@app.get("/pixel", operation_id="pixel", response_class=Response)
async def pixel() -> Response:
    return Response(content=PIXEL, media_type="image/png")
