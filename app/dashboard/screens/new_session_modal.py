"""Start a session from the dashboard: a workspace, and a rehearsal script or live mode."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static, Switch


@dataclass(frozen=True)
class NewSession:
    workspace: Path
    replay: Path | None
    live: bool


def as_path(text: str) -> Path:
    """A typed path, `~` expanded (an unknown `~user` is left as typed), made absolute."""
    return Path(os.path.expanduser(text)).resolve()


def path_problem(workspace: str, replay: str, live: bool) -> str | None:
    """Why these fields cannot name a session, or None. Reads the disk: call it in a thread."""
    if not workspace:
        return "give the workspace: the project folder Astra may read, edit and test"
    if not as_path(workspace).is_dir():
        return f"workspace {workspace} is not a directory"
    if not live and not replay:
        return "give a rehearsal script (JSONL), or switch to live: paid requests"
    if not live and not as_path(replay).is_file():
        return f"rehearsal script {replay} is not a file"
    return None


class NewSessionModal(ModalScreen["NewSession | None"]):
    """Answers the session to start, or None (cancel). It stays open, saying why, until
    `check` (the app's: a key and a price for live, a readable script) finds no problem.
    A live session still asks for its cost before the first request."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Cancel", id="new-session.cancel"),
    ]

    def __init__(self, check: Callable[[NewSession], Awaitable[str | None]]) -> None:
        super().__init__()
        self.check = check

    def compose(self) -> ComposeResult:
        workspace = Input(placeholder="path/to/project", id="workspace")
        workspace.border_title = "Workspace: the project folder"
        replay = Input(placeholder="path/to/rehearsal.jsonl", id="replay")
        replay.border_title = "Rehearsal script (JSONL), for an offline session"
        with Vertical(classes="dialog"):
            yield Label("Start a session", classes="dialog-title")
            yield workspace
            yield replay
            with Horizontal(classes="switch-row"):
                yield Switch(id="live")
                yield Label("live: paid requests, once you approve the cost")
            yield Static("", id="problem")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Start", variant="primary", id="start")
                yield Button("Cancel", id="cancel")
        yield Footer()

    def on_input_submitted(self) -> None:
        self.start()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.start()
        else:
            self.dismiss(None)

    def start(self) -> None:
        self.check_then_start(
            self.query_one("#workspace", Input).value.strip(),
            self.query_one("#replay", Input).value.strip(),
            self.query_one("#live", Switch).value,
        )

    @work(exclusive=True, group="new-session", exit_on_error=False, description="check")
    async def check_then_start(self, workspace: str, replay: str, live: bool) -> None:
        problem_view = self.query_one("#problem", Static)
        problem_view.update("checking…")
        problem = await asyncio.to_thread(path_problem, workspace, replay, live)
        if problem is None:
            choice = NewSession(as_path(workspace), None if live else as_path(replay), live)
            problem = await self.check(choice)
            if problem is None:
                self.dismiss(choice)
                return
        problem_view.update(problem)
