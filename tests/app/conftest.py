"""Fixtures of the dashboard's tests: settings with a key, a store URL, alpha's project."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.config.settings import Secret, Settings
from app.sessions.options import DEMO_PROJECTS
from tests.app.pilot_helpers import KEY
from tests.memory.vectorai_standin import VectorAIStandIn


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Settings:
    for name in ("ASTRA_MEMORY_URL", "OPENAI_API_KEY", "ASTRA_BUDGET_USD", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return Settings(astra_data_dir=tmp_path / "data", openai_api_key=Secret(KEY))


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'memory.sqlite3'}"


@pytest.fixture(params=["sqlite", "vectorai"])
async def any_url(request, tmp_path):
    """The embedded store, or VectorAI DB: the gRPC stand-in on loopback."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'memory.sqlite3'}"
        return
    server = await VectorAIStandIn().start()
    yield server.url
    await server.stop()


@pytest.fixture
def alpha(tmp_path) -> Path:
    workspace = tmp_path / "alpha"
    shutil.copytree(DEMO_PROJECTS / "scenario_alpha", workspace)
    return workspace
