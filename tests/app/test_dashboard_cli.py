"""The commands that open the dashboard, `astra-memory` (no command), `tui` and `demo`, run
through `main` with Pilot driving the app headless in place of the terminal."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from app.cli.main import main
from app.dashboard.app import AstraApp
from app.dashboard.screens.edit_modal import EditModal
from app.dashboard.screens.finish_modal import FinishModal
from app.dashboard.screens.store_modal import StoreModal
from tests.app.pilot_helpers import (
    REHEARSAL,
    SIZE,
    Loaded,
    SlowModel,
    option_texts,
    wait_for,
)
from tests.app.test_memory_cli import one_error_line
from widgets import MatchesLog

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    """The CLI's data dir in tmp, the hash embedder, and an app that Pilot drives headless."""
    monkeypatch.setenv("ASTRA_DATA_DIR", str(tmp_path / "data"))
    for name in ("ASTRA_MEMORY_URL", "OPENAI_API_KEY", "ASTRA_BUDGET_USD", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(
        "app.sessions.backend.ProcessEmbedder", lambda *_args, **_kwargs: SlowModel(ready=True)
    )
    ran = SimpleNamespace(apps=[], stored=[], matches=[], edits=[])

    async def run_async(self: AstraApp, **kwargs) -> int:
        """Until every session finished, approving each edit and store as the operator would."""
        ran.apps.append(self)
        async with self.run_test(size=SIZE) as pilot, asyncio.timeout(60):
            while not (
                len(self.sessions.finished) == len(self.sessions.plans)
                and self.sessions.ready.is_set()
            ):
                modal = self.screen
                if isinstance(modal, StoreModal) and modal.query("#store"):
                    ran.stored.append(modal.proposal.record.memory_id)
                    await pilot.press("y")
                    await wait_for(pilot, lambda shown=modal: self.screen is not shown)
                elif isinstance(modal, (EditModal, FinishModal)) and modal.query("Button"):
                    ran.edits.append(modal.proposal.path if isinstance(modal, EditModal) else "")
                    await pilot.press("y" if isinstance(modal, EditModal) else "b")
                    await wait_for(pilot, lambda shown=modal: self.screen is not shown)
                await pilot.pause(0.05)
            await pilot.pause()
            if self.dashboard.is_mounted:
                ran.matches = option_texts(self.dashboard.query_one(MatchesLog))
        return self.sessions.exit_code

    monkeypatch.setattr(AstraApp, "run_async", run_async)
    for command in ("tui", "demo"):  # pytest's stdin is no terminal; Pilot needs none
        monkeypatch.setattr(f"app.cli.commands.{command}.require_terminal", lambda _instead: None)
    return ran


def test_no_command_opens_the_dashboard_idle_on_the_memory_browser(cli_env):
    assert main([]) == 0
    [app] = cli_env.apps
    assert app.sessions.plans == [] and app.browse_first
    titles = [command.title for command in app.get_system_commands(app.dashboard)]
    assert {"New session", "Memory browser"} <= set(titles)
    assert "Stop session" not in titles  # nothing runs: it would do nothing


def test_tui_with_a_workspace_needs_a_rehearsal_or_live(cli_env, alpha, capsys):
    assert main(["tui", "--workspace", str(alpha)]) == 2
    assert "needs --replay" in capsys.readouterr().err and cli_env.apps == []


@pytest.mark.parametrize(
    "argv",
    [["--replay", str(REHEARSAL)], ["--live"], ["--prompt", "fix it"], ["--approve-live-cost"]],
)
def test_tui_without_a_workspace_refuses_what_only_a_session_uses(cli_env, capsys, argv):
    """`tui --replay FILE` opened the idle browser and dropped the script without a word."""
    assert main(["tui", *argv]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"{argv[0]} needs --workspace DIR" in line and cli_env.apps == []


@pytest.mark.parametrize("command", ["tui", "run"])
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--replay", "/nonexistent.jsonl"], "cannot use rehearsal script"),
        (["--live"], "live mode needs OPENAI_API_KEY"),
    ],
)
def test_tui_refuses_session_options_as_run_does_before_the_dashboard_opens(
    cli_env, alpha, capsys, command, argv, words
):
    """A missing script opened the dashboard and said so in a toast."""
    code = main([command, "--workspace", str(alpha), *argv])
    assert code == 2 and words in one_error_line(capsys.readouterr().err)
    assert cli_env.apps == []


def test_live_without_a_key_says_where_the_key_goes(cli_env, alpha, capsys, tmp_path, monkeypatch):
    """It said "in the environment or .env", and no .env of the current folder is read."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert main(["run", "--workspace", str(alpha), "--live"]) == 2
    line = one_error_line(capsys.readouterr().err)
    env_file = tmp_path / "config" / "astra-codebase-memory" / ".env"
    assert line.endswith(
        f"live mode needs OPENAI_API_KEY: set it in the environment or in {env_file} "
        "(or the file --env-file names)"
    )


def test_tui_runs_a_rehearsed_session(cli_env, alpha):
    code = main(["tui", "--workspace", str(alpha), "--replay", str(REHEARSAL), "--store", "yes"])
    [app] = cli_env.apps
    assert code == 0 and len(app.sessions.finished[0].report.stored_memory_ids) == 1
    assert cli_env.stored == []  # --store yes: no question
    assert cli_env.edits == ["app/service.py", ""]  # the edit asked, then the changes kept


def test_demo_runs_alpha_then_beta_in_the_dashboard(cli_env, capsys, monkeypatch, real_embedder):
    """With the real model, as the README's demo: whether beta finds alpha's fix is its call
    (the hash embedder puts them at cosine 0.21, too far apart to deliver)."""
    monkeypatch.setattr(
        "app.sessions.backend.ProcessEmbedder", lambda *_args, **_kwargs: Loaded(real_embedder)
    )
    code = main(["demo"])
    out = capsys.readouterr().out
    [app] = cli_env.apps
    alpha, beta = (done.report for done in app.sessions.finished)
    assert [done.plan.workspace.name for done in app.sessions.finished] == ["alpha", "beta"]
    assert code == 0, out
    assert "✓ beta retrieved alpha's fix, the same cause" in out
    assert "✓ beta searched memory before its first edit" in out
    # the operator confirmed each write, and beta's matches pane shows alpha's fix
    assert cli_env.stored == alpha.stored_memory_ids + beta.stored_memory_ids
    assert any(alpha.stored_memory_ids[0][:8] in line for line in cli_env.matches)


@pytest.mark.parametrize(
    ("argv", "instead"), [([], "astra-memory run --workspace DIR"), (["demo"], "demo --headless")]
)
def test_the_dashboard_without_a_terminal_says_so_and_exits(tmp_path, argv, instead):
    """From a pipe or a CI job it drew into the pipe and waited for keys until killed."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ASTRA_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "app.cli.main", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )
    line = one_error_line(done.stderr)
    assert done.returncode == 2 and "the dashboard needs a terminal" in line and instead in line
    assert done.stdout == "" and not (tmp_path / "demo").exists()  # nothing copied
