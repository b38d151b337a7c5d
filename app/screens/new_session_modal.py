"""Start a session from the dashboard: a workspace, and a rehearsal script or live mode."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

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


def session_problem(workspace: str, replay: str, live: bool) -> str | None:
    """Why these fields cannot start a session, or None."""
    if not workspace:
        return "give the workspace: the project folder Astra may read, edit and test"
    if not Path(workspace).expanduser().is_dir():
        return f"workspace {workspace} is not a directory"
    if not live and not replay:
        return "give a rehearsal script (JSONL), or switch to live: paid requests"
    if not live and not Path(replay).expanduser().is_file():
        return f"rehearsal script {replay} is not a file"
    return None


class NewSessionModal(ModalScreen["NewSession | None"]):
    """Answers the session to start, or None (cancel). A live session still asks for its
    cost before the first request."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Cancel", id="new-session.cancel"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Start a session", classes="dialog-title")
            yield Label("Workspace (the project folder)")
            yield Input(placeholder="path/to/project", id="workspace")
            yield Label("Rehearsal script (JSONL), for an offline session")
            yield Input(placeholder="path/to/rehearsal.jsonl", id="replay")
            with Horizontal(classes="switch-row"):
                yield Switch(id="live")
                yield Label("live: paid requests to the model (you approve the cost first)")
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
        workspace = self.query_one("#workspace", Input).value.strip()
        replay = self.query_one("#replay", Input).value.strip()
        live = self.query_one("#live", Switch).value
        problem = session_problem(workspace, replay, live)
        if problem is not None:
            self.query_one("#problem", Static).update(problem)
            return
        self.dismiss(
            NewSession(
                Path(workspace).expanduser(),
                None if live else Path(replay).expanduser(),
                live,
            )
        )
