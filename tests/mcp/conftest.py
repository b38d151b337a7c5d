"""The MCP tests' fixtures: the real `astra-memory mcp` process, driven by the official SDK's
client over stdio, on a temporary SQLite store, with the real model exported once."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

CLI = [sys.executable, "-m", "app.cli.main"]
CLIENT = "pytest-client"


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    """One ASTRA_DATA_DIR holding the ONNX export, shared by every process of the run, of
    every xdist worker too (the first to take the lock exports; nothing else is written
    there): a server starts in about a second instead of loading torch."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    data, made = shared / "mcp-data", shared / "mcp-data.prepared"
    with (shared / "mcp-data.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not made.exists():
            done = subprocess.run(
                [*CLI, "model", "prepare"],
                env={**os.environ, "ASTRA_DATA_DIR": str(data), "ASTRA_EMBEDDER": "onnx"},
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr
            made.touch()
    return data


@pytest.fixture
def env(model_dir, tmp_path) -> dict[str, str]:
    """The environment of every process a test starts: the shared model, a fresh store."""
    environ = {**os.environ, "ASTRA_DATA_DIR": str(model_dir), "ASTRA_EMBEDDER": "onnx"}
    environ["ASTRA_MEMORY_URL"] = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    environ.pop("ASTRA_BUDGET_USD", None)
    return environ


@asynccontextmanager
async def connect(env: dict[str, str], *, scope: str = "proj", name: str = CLIENT):
    """A client connected to a fresh `astra-memory mcp --scope SCOPE` over stdio, through the
    initialize handshake (where the client gives its name)."""
    server = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "mcp", "--scope", scope], env=env
    )
    async with Client(
        server, mode="legacy", client_info=Implementation(name=name, version="1.0")
    ) as client:
        yield client


async def call(client: Client, tool: str, **arguments: object) -> dict:
    """A tool call that must succeed; its JSON reply."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


async def refused(client: Client, tool: str, arguments: dict) -> str:
    """A tool call that must fail as a tool error; its message."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.content[0].text
    return result.content[0].text


def cli(env: dict[str, str], *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`astra-memory ARGV` as the operator runs it, without a terminal."""
    return subprocess.run(
        [*CLI, *argv],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def proposal(**changes: object) -> dict[str, object]:
    """A propose_fix call's arguments: a whole, plausible fix."""
    return {
        "symptom": (
            "tests/test_config.py:104:\nrelcli/config.py:73: in apply_env_overrides\n"
            "    conf['upload']['token'] = env['RELCLI_UPLOAD_TOKEN']\nE   KeyError: 'upload'"
        ),
        "fix_description": "Create the upload section in apply_env_overrides before setting "
        "its token; a flat profile has no upload table.",
        "error_type": "KeyError",
        "file_paths": ["relcli/config.py"],
        "diff": "--- a/relcli/config.py\n+++ b/relcli/config.py\n@@ -72 +72,2 @@\n"
        "-    conf['upload']['token'] = token\n"
        "+    conf.setdefault('upload', {})['token'] = token\n",
        "test_command": "pytest -q",
        "test_output": "12 passed in 0.31s",
        **changes,
    }
