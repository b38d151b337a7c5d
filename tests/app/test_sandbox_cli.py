"""Without a sandbox the test command runs only with --no-sandbox; `doctor` says which
(issue 14, finding 7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent import sandbox as sandboxes
from app.cli.main import main
from app.sessions.options import DEMO_PROJECTS
from tests.app.pilot_helpers import REHEARSAL


@pytest.fixture
def alpha(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ASTRA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("ASTRA_MEMORY_URL", raising=False)
    workspace = tmp_path / "alpha"
    shutil.copytree(DEMO_PROJECTS / "scenario_alpha", workspace)
    return workspace


@pytest.fixture
def no_bwrap(monkeypatch):
    monkeypatch.setattr(sandboxes.shutil, "which", lambda name: None)
    sandboxes.find_sandbox.cache_clear()
    yield
    sandboxes.find_sandbox.cache_clear()


def rehearse(alpha: Path, *flags: str) -> int:
    argv = ["run", "--workspace", str(alpha), "--replay", str(REHEARSAL), "--store", "no"]
    return main([*argv, "--json", *flags])


def test_without_bwrap_a_session_needs_no_sandbox(capsys, alpha, no_bwrap):
    assert rehearse(alpha) == 2
    captured = capsys.readouterr()
    assert "bwrap is not installed" in captured.err and "--no-sandbox" in captured.err
    assert captured.err.count("\n") == 1 and captured.out == ""

    assert rehearse(alpha, "--no-sandbox") in (0, 1)
    notes = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert any("unconfined (--no-sandbox)" in e.get("message", "") for e in notes)


def test_doctor_reports_the_sandbox(capsys, alpha, no_bwrap):
    assert main(["doctor", "--workspace", str(alpha)]) == 2
    out = capsys.readouterr().out
    assert "FAILED sandbox: no sandbox: bwrap is not installed" in out
    assert "test command" not in out  # not run unconfined without --no-sandbox
    main(["doctor", "--workspace", str(alpha), "--no-sandbox"])
    out = capsys.readouterr().out
    assert "ok     sandbox: off" in out and "test command" in out


@pytest.mark.skipif(sandboxes.find_sandbox()[0] is None, reason="bwrap is not usable here")
def test_doctor_reports_bwrap_where_it_runs(capsys, alpha):
    main(["doctor", "--workspace", str(alpha)])
    assert f"ok     sandbox: {sandboxes.CONFINEMENT}" in capsys.readouterr().out


def test_without_bwrap_the_demo_runs_its_own_projects_unconfined(capsys, alpha, no_bwrap):
    """The README's demo command on a machine without bubblewrap: the demo's copies of
    demo_projects are our own code, so they run unconfined (the demo has no --no-sandbox)."""
    code = main(["demo", "--headless"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "unconfined (a demo project, our own code)" in captured.out
    assert "--no-sandbox" not in captured.out + captured.err
