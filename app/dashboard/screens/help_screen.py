"""Help on `?` and `f1`: the keys, what a score means, and where the data lives."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, Markdown

KEYS = """\
## Keys

| key | where | what |
|---|---|---|
| `n` | dashboard | start a session: a workspace and a rehearsal script, or live |
| `m` | outside the browser | the memory browser |
| `h` | outside the browser | session history: past sessions, memory's effect; `enter` replays one |
| `s` | dashboard, while a session runs | stop the session at its next safe point |
| `q` | outside the browser | quit; mid-session it asks, stops the session, shows the summary |
| `ctrl+q` | anywhere | quit, as `q` |
| `f1` `?` | anywhere (`?` outside the browser) | this help |
| `ctrl+p` | anywhere | the command palette: the actions above, and the theme (remembered) |
| `enter` | matches pane, browser, its search box | open the whole record (the highlighted one) |
| `↓` `↑` | browser's search box | move the highlight through the matches; typing goes on |
| `/` or typing | browser | search by meaning as you type: every letter, digit and sign types |
| `del` | browser | delete the selected record (asks first) |
| `ctrl+u` `ctrl+e` `ctrl+r` | browser | clear a possibly-stale mark, export (asks where), reload |
| `esc` | browser | back to the dashboard |
| `a` / `esc` | cost modal | approve the worst case / cancel: nothing is sent |
| `y` / `n` | store modal | store the fix / reject it: nothing is written |

## The browser's columns

`score` (while searching) is the match's label and cosine; `sent` counts the times the
record was delivered to a session, and `green` how many of the sessions that received it
ended green (`1/2`). Ahead of a fix, `⚠ stale`: sessions that received it kept ending red
(`ctrl+u` clears the mark); `imported`: from a post-mortem, not confirmed by a test run.
`enter` shows the whole record.

## Scores

A match's score is the cosine similarity of the record's embedding (failure signature,
symptom, error type and fix) to the search's text: 1 the same meaning, 0 unrelated; the
bar fills with it. Searches rank by meaning and by rare shared words together, so the
order can differ from the scores. A score is a hint, not a verdict: read the record
(`enter`) and its test evidence before trusting a fix. `astra-memory report` shows how
sessions that received matches fared against those that did not.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help.close"),
    ]

    def __init__(self, places: list[tuple[str, str]]) -> None:
        super().__init__()
        self.places = places

    def compose(self) -> ComposeResult:
        where = "\n".join(f"| {name} | `{value}` |" for name, value in self.places)
        text = f"{KEYS}\n## Where data lives\n\n| what | where |\n|---|---|\n{where}\n"
        with Vertical(classes="dialog wide"):
            yield Label("astra-memory · help · ↑ ↓ pgup pgdn scroll", classes="dialog-title")
            with VerticalScroll(id="help-body"):
                yield Markdown(text)
        yield Footer()
