"""Real git repositories for the tests, under a git config of their own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

CONFIG = "[user]\n\tname = Dev\n\temail = dev@example.com\n[init]\n\tdefaultBranch = main\n"


def isolate_git(config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user identity, and no system or personal git settings leaking in."""
    config = config_dir / "gitconfig"
    config.write_text(CONFIG)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def repository(root: Path) -> Path:
    """A checkout with one commit: a buggy module and its test."""
    root.mkdir(parents=True)
    (root / "app.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_app.py").write_text(
        "from app import add\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    )
    (root / ".gitignore").write_text(".venv/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root
