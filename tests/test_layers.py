"""The layer rule: agent/ and memory/ never import Textual (or the app and widgets)."""

from __future__ import annotations

import subprocess
import sys


def test_agent_and_memory_import_no_textual():
    probe = (
        "import sys, agent, memory, memory.sqlite_store, memory.transfer, memory.evaluation;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'textual', 'app', 'widgets'});"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
