"""Records, vectors and one search call for the store tests: the contract suite and each
store's own tests build their data the same way."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import numpy as np

from memory.records import MemoryRecord, SearchRequest
from memory.stores.protocol import MemoryStore

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return vector / np.linalg.norm(vector)


def blend(a: np.ndarray, b: np.ndarray, weight: float) -> np.ndarray:
    vector = weight * a + (1 - weight) * b
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def mid(name: str) -> str:
    """A uuid for a name: the server store takes only uuids."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def record(name: str, **fields) -> MemoryRecord:
    values = {
        "fix_description": f"fix {name}",
        "error_type": "AssertionError",
        "file_paths": ("app/service.py",),
        "outcome": "passed",
        "session_id": "s",
        "timestamp": NOW,
        "scope": "alpha",
    }
    return MemoryRecord(memory_id=mid(name), **{**values, **fields})


def request(vector: np.ndarray, text: str = "", **options) -> SearchRequest:
    arguments = {"scope": "alpha", "error_type": None, "top_k": 10, "min_score": -1.0, "now": NOW}
    return SearchRequest(vector, text, **{**arguments, **options})


async def search(store: MemoryStore, vector: np.ndarray, text: str = "", **options):
    return await store.search(request(vector, text, **options))


def ids(results) -> list[str]:
    return [r.record.memory_id for r in results]
