"""The agent tests' loopback Responses API server, one per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agent.responses_server import ResponsesServer


@pytest.fixture
def server() -> Iterator[ResponsesServer]:
    with ResponsesServer() as server:
        yield server
