"""The layer rules: agent/ and memory/ never import Textual (or the app and widgets); the
commands that open the dashboard import nothing heavy before its first frame."""

from __future__ import annotations

import subprocess
import sys


def test_agent_and_memory_import_no_textual():
    probe = (
        "import sys, agent.loop, memory.sqlite_store, memory.transfer, memory.evaluation,"
        " memory.embedding_process, memory.vectorai_store, agent.preflight, agent.approval,"
        " agent.session_workspace, agent.project_tests;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'textual', 'app', 'widgets'});"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboard_commands_load_no_heavy_layer_before_the_first_frame():
    heavy = {"agent", "numpy", "pydantic", "httpx", "torch", "sentence_transformers", "grpc"}
    probe = (
        "import sys, app.cli, app.dashboard_commands;"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r});"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
