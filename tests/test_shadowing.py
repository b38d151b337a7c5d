"""Our top-level packages (`app`, `agent`, `memory`, `widgets`) and a user project's of the
same names never stand in for each other: the project's tests see only the project's own
packages (ours are hidden from them, even where none of theirs exists), and our processes
started in the project's folder run ours."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.project_tests import OURS
from agent.sandbox import find_sandbox
from agent.workspace_tools import WorkspaceTools

SANDBOX, WHY_NOT = find_sandbox()

USERS_TEST = """
from pathlib import Path

import pytest

import app


def test_the_projects_app_is_its_own():
    assert Path(app.__file__).resolve().parent == Path.cwd().resolve() / "app"
    assert app.WHO == "the user's project"


def test_our_packages_are_not_importable_from_the_projects_tests():
    for name in ("agent", "memory", "widgets"):
        with pytest.raises(ModuleNotFoundError):
            __import__(name)
"""


def users_project(root: Path) -> Path:
    """A project with its own `app/` package whose import would break ours."""
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text('WHO = "the user\'s project"\n')
    (root / "app" / "cli").mkdir()
    (root / "app" / "cli" / "__init__.py").write_text("raise ImportError('the project app')\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_project.py").write_text(USERS_TEST)
    return root


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "no-sandbox"])
async def test_a_projects_tests_see_its_packages_and_never_ours(tmp_path, sandboxed):
    if sandboxed and SANDBOX is None:
        pytest.skip(WHY_NOT)
    project = users_project(tmp_path / "project")
    tools = WorkspaceTools(
        project,
        base_env=dict(os.environ),
        test_command=OURS,
        sandbox=SANDBOX if sandboxed else None,
    )
    run = await tools.run_tests()
    assert run.exit_code == 0, run.output
    assert run.passed == 2


def test_our_command_started_in_the_projects_folder_runs_ours(tmp_path):
    """`serve` starts `python -P -m app.cli.main tui` for each browser tab; without -P the
    project's `app/` in the current folder would be imported instead."""
    from app.cli.commands.serve import tab_command

    project = users_project(tmp_path / "project")
    command = [*tab_command(None)[:-1], "--version"]
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("astra-memory ")
    unsafe = [sys.executable, "-m", "app.cli.main", "--version"]
    shadowed = subprocess.run(unsafe, cwd=project, capture_output=True, text=True, timeout=60)
    assert "the project app" in shadowed.stderr  # what -P prevents
