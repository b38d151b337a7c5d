"""The stores every contract test runs on: the embedded SQLite store, the VectorAI DB store
over loopback gRPC against an in-process stand-in, and a real server when
ASTRA_TEST_VECTORAI_URL names one."""

from __future__ import annotations

import os
import uuid

import pytest
from actian_vectorai import AsyncVectorAIClient

from memory.stores.protocol import open_store
from memory.stores.vectorai import VectorAIMemoryStore, vectorai_address
from tests.memory.vectorai_standin import VectorAIStandIn

REAL_SERVER = os.environ.get("ASTRA_TEST_VECTORAI_URL")


@pytest.fixture
async def standin():
    server = await VectorAIStandIn().start()
    yield server
    await server.stop()


async def _drop(url: str, collection: str) -> None:
    address, _ = vectorai_address(url)
    async with AsyncVectorAIClient(address) as client:
        for name in (collection, collection + "_deliveries"):
            if await client.collections.exists(name):
                await client.collections.delete(name)


@pytest.fixture(params=["sqlite", "standin", "server"])
async def any_store(request, tmp_path):
    if request.param == "sqlite":
        store = open_store(f"sqlite:///{tmp_path / 'memory.sqlite3'}")
        yield store
        await store.close()
    elif request.param == "standin":
        server = await VectorAIStandIn().start()
        store = open_store(server.url)
        yield store
        await store.close()
        await server.stop()
    else:
        if not REAL_SERVER:
            pytest.skip("set ASTRA_TEST_VECTORAI_URL=vectorai://HOST:PORT to run on a real server")
        collection = f"astra_test_{uuid.uuid4().hex[:12]}"
        store = VectorAIMemoryStore(vectorai_address(REAL_SERVER)[0], collection)
        yield store
        await store.close()
        await _drop(REAL_SERVER, collection)
