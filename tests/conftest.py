"""Shared fixtures: a fresh store per test, the hash embedder, and the real model once.

The suite runs the commands with ASTRA_EMBEDDER=torch, the reference model loaded once per
process: most tests give each run its own ASTRA_DATA_DIR, where the ONNX embedder would be
exported again each time. tests/memory/test_onnx_embedder.py covers the ONNX path, the
default, with one export for the session.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory.embedding.embedder import shared_embedder
from memory.service import MemoryService
from memory.stores.protocol import open_store
from tests.fakes import EVIDENCE, PASSING, HashEmbedder

os.environ["ASTRA_EMBEDDER"] = "torch"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite3"


@pytest.fixture
async def store(db_path: Path):
    store = open_store(f"sqlite:///{db_path}")
    yield store
    await store.close()


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture(scope="session")
def real_embedder():
    embedder = shared_embedder()
    embedder.load()
    return embedder


@pytest.fixture
def service(store, embedder) -> MemoryService:
    service = MemoryService(store, embedder, session_id="session-alpha", scope="alpha")
    service.confirm_outcome(PASSING, EVIDENCE)
    return service


@pytest.fixture(autouse=True)
def config_home(tmp_path_factory, monkeypatch) -> Path:
    """Each test's own config dir: no test reads or writes the user's config file."""
    home = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home
