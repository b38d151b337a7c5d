"""One memory record in full: fix, error type, files, outcome, evidence, the diff, neighbours.

Used by the store confirmation modal (the record that would be written, beside the
nearest records) and by the memory browser's detail view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from memory.text import counts_text, mask_url_passwords, shown

if TYPE_CHECKING:
    from memory.records import MemoryRecord, MemorySearchResult


def data_cell(text: str) -> Text:
    """A record's text as one line of a table or a title: never markup, its control
    characters shown and a URL's password masked."""
    return Text(mask_url_passwords(shown(text)), no_wrap=True)


def record_renderable(
    record: MemoryRecord,
    nearest: Sequence[MemorySearchResult] | None = None,
    *,
    stale: bool = False,
) -> RenderableType:
    """Every field as Text, never markup, with its control characters shown: a record is
    data, whoever wrote it."""

    def data(text: str, style: str = "") -> Text:
        return Text(shown(text), style=style)

    flagged = "bold white on red" if record.flags else "bold"

    facts = Table.grid(padding=(0, 1))
    facts.add_column(style="dim", no_wrap=True)
    facts.add_column()
    facts.add_row("id", data(record.memory_id))
    facts.add_row("fix", data(record.fix_description, flagged))
    facts.add_row("error type", data(record.error_type))
    facts.add_row("files", data(", ".join(record.file_paths)))
    facts.add_row("outcome", data(record.outcome))
    facts.add_row("scope", data(record.scope))
    facts.add_row("session", data(record.session_id))
    facts.add_row("stored at", f"{record.timestamp:%Y-%m-%d %H:%M:%S %Z}")
    facts.add_row("provenance", data(record.provenance))
    if record.confirmations:
        last = record.confirmations[-1]
        facts.add_row(
            "confirmed",
            f"{record.times_confirmed} times; last {last.confirmed_at:%Y-%m-%d %H:%M} "
            f"by session {data(last.session_id)}",
        )
    if record.evidence is not None:
        e = record.evidence
        facts.add_row(
            "evidence", data(f"{e.command} → exit {e.exit_code}, {counts_text(e.passed, e.failed)}")
        )
    if stale:
        facts.add_row(
            "POSSIBLY STALE",
            Text(
                "sessions given this fix then ended red; c clears the mark, d deletes",
                style="bold yellow",
            ),
        )
    if record.flags:
        facts.add_row("FLAGGED", data("; ".join(record.flags), "bold red"))
    if record.symptom:
        symptom = record.symptom if len(record.symptom) <= 400 else record.symptom[:400] + "…"
        facts.add_row("symptom", data(symptom, "italic"))
    parts: list[RenderableType] = [facts]
    if record.diff:
        from rich.syntax import Syntax  # Pygments: loaded with the first diff, not at launch

        parts += [Text("diff", style="dim"), Syntax(shown(record.diff), "diff", word_wrap=True)]
    if nearest is not None:
        parts.append(Text("nearest records in memory", style="bold"))
        if not nearest:
            parts.append(Text("  none: memory holds nothing close in this scope", style="dim"))
        for result in nearest:
            other = result.record
            style = "red" if other.flags else ""
            parts.append(
                data(
                    f"  {result.score:.4f}  {other.short_id}  {other.error_type} · "
                    f"{', '.join(other.file_paths)} · {other.fix_description}",
                    style,
                )
            )
    return Group(*parts)


class RecordView(Static):
    """Shows one record; `record` is the one shown, or None."""

    def __init__(
        self,
        record: MemoryRecord | None = None,
        nearest: Sequence[MemorySearchResult] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.show(record, nearest)

    def show(
        self,
        record: MemoryRecord | None,
        nearest: Sequence[MemorySearchResult] | None = None,
        *,
        stale: bool = False,
    ) -> None:
        self.record = record
        self.update(
            "no record selected"
            if record is None
            else record_renderable(record, nearest, stale=stale)
        )
