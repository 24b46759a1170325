"""A FastAPI app served as an MCP server: each operation a tool, called in process.

Needs ``pip install 'mcpkit[openapi]' fastapi``. Run it (stdio)::

    mcpkit run examples/openapi_server.py

or on Streamable HTTP at http://127.0.0.1:8000/mcp::

    mcpkit run examples/openapi_server.py --transport http

What it shows (see docs/composition.md, "OpenAPI and FastAPI"):

- ``MCPServer.from_fastapi(app)``: the app's OpenAPI document becomes the tools
  ``list_pets``, ``get_pet``, ``create_pet`` and ``delete_pet``, their input
  schemas merged from path, query and body, their output schemas from the
  responses; calls go through ``httpx.ASGITransport`` (no socket);
- the app's lifespan (its pet store) runs inside the server's;
- an HTTP error (``get_pet`` of an unknown id) comes back as a tool error with
  the status and the body;
- a route map keeps the admin operation out (``exclude`` by tag).
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import AsyncIterator

from fastapi import FastAPI, HTTPException, Query
from pydantic import BaseModel, Field

from mcpkit import MCPServer
from mcpkit.compose.openapi import RouteMap


class Species(enum.StrEnum):
    cat = "cat"
    dog = "dog"
    fish = "fish"


class Owner(BaseModel):
    name: str
    email: str | None = None


class NewPet(BaseModel):
    name: str = Field(description="What the pet answers to")
    species: Species
    age: int = Field(ge=0, le=100)
    owner: Owner | None = None
    tags: list[str] = []


class Pet(NewPet):
    id: int


store: dict[int, Pet] = {}


@contextlib.asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    store.clear()
    store[1] = Pet(id=1, name="Tom", species=Species.cat, age=3, owner=Owner(name="Ann"))
    yield
    store.clear()


app = FastAPI(title="Pet store", version="1.0.0", lifespan=lifespan)


@app.get("/pets", operation_id="list_pets", summary="List the pets")
async def list_pets(
    species: Species | None = None,
    limit: int = Query(10, ge=1, le=100, description="At most this many"),
) -> list[Pet]:
    pets = [p for p in store.values() if species is None or p.species == species]
    return pets[:limit]


@app.get("/pets/{pet_id}", operation_id="get_pet", summary="One pet by id")
async def get_pet(pet_id: int) -> Pet:
    if pet_id not in store:
        raise HTTPException(status_code=404, detail=f"no pet {pet_id}")
    return store[pet_id]


@app.post("/pets", operation_id="create_pet", status_code=201)
async def create_pet(pet: NewPet) -> Pet:
    """Add a pet to the store; its id is chosen here."""
    created = Pet(id=max(store, default=0) + 1, **pet.model_dump())
    store[created.id] = created
    return created


@app.delete("/pets/{pet_id}", operation_id="delete_pet", status_code=204)
async def delete_pet(pet_id: int) -> None:
    store.pop(pet_id, None)


@app.post("/admin/reset", operation_id="reset_store", tags=["admin"])
async def reset_store() -> dict[str, str]:
    store.clear()
    return {"status": "reset"}


server = MCPServer.from_fastapi(app, route_maps=[RouteMap("exclude", tags=["admin"])])

if __name__ == "__main__":
    server.run_stdio()
