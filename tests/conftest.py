"""Shared fixtures: a fresh store per test, the hash embedder, and the real model once."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.embedder import shared_embedder
from memory.service import MemoryService
from memory.store import open_store
from tests.fakes import EVIDENCE, PASSING, HashEmbedder


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
