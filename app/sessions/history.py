"""Past sessions: a summary written at each session's end, read back with the ledger and the
transcripts for `sessions`, `report` and the dashboard's history screen.

A transcript holds requests and responses only (and only live sessions have one); the
workspace, status, stored ids and time to green are known to the session alone, so each
session leaves `<data dir>/transcripts/<session id>.summary.json` beside its transcript,
written atomically. Older sessions, known only from the ledger or a transcript, are listed
with what those hold. Plain Python: the dashboard reads this in a thread.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.budget import Ledger
from app.errors import CommandError

if TYPE_CHECKING:
    from agent import events as ev

SUMMARY_SUFFIX = ".summary.json"
MIN_PER_SIDE = 5  # fewer sessions on a side than this, and a comparison says nothing


@dataclass
class SessionEntry:
    """One past session, from its summary, else from the ledger and its transcript."""

    session_id: str
    started_at: str | None = None  # ISO 8601, UTC
    workspace: str | None = None
    model: str | None = None
    mode: str | None = None  # live | rehearsal
    status: str | None = None  # None: no summary says how it ended
    exit_code: int | None = None
    turns: int | None = None
    tool_calls: int | None = None
    cost_usd: float = 0.0
    delivered_memory_ids: list[str] = field(default_factory=list)
    stored_memory_ids: list[str] = field(default_factory=list)
    seconds_to_green: float | None = None  # from the start to the first passing test run
    transcript: str | None = None  # path; live sessions only
    summarised: bool = False

    @property
    def matches_delivered(self) -> int:
        return len(self.delivered_memory_ids)

    @property
    def transcript_shown(self) -> str:
        """Its transcript, or why it has none: one wording for `sessions show` and the
        history screen (a rehearsal's was "unknown" in one, "none" in the other)."""
        return self.transcript or "none (only live sessions are recorded)"

    @property
    def green(self) -> bool:
        return self.exit_code == 0

    @property
    def tests_shown(self) -> str:
        """How it ended for the tests: green, red, or ? where no summary says. A session
        the model completed may still have ended red; its status alone hid that."""
        if self.exit_code is None:
            return "?"
        return "green" if self.green else "red"

    def as_json(self) -> dict[str, Any]:
        return asdict(self) | {
            "matches_delivered": self.matches_delivered,
            "received_match": received_strong_match(self),
        }


def received_strong_match(entry: SessionEntry) -> bool:
    """The report's split: did memory give this session a strong match? Matches carry no
    strength label yet, so any match delivered counts; swap the label in here alone."""
    return entry.matches_delivered > 0


def never_searched(entry: SessionEntry) -> bool:
    """Declined, or stopped by the budget before its first request: it never searched
    memory, so the report's comparison leaves it out of both sides."""
    return entry.status in ("declined", "budget") and entry.turns == 0


def summary_path(transcripts: Path, session_id: str) -> Path:
    return transcripts / f"{session_id}{SUMMARY_SUFFIX}"


class SummaryRecorder:
    """An event callback in front of the session's own: it notes what the summary needs and
    writes the summary, off the caller's loop, when the report passes."""

    def __init__(self, transcripts: Path, forward: Callable[[ev.Event], None]) -> None:
        self.transcripts = transcripts
        self.forward = forward
        self.entry: SessionEntry | None = None
        self._started = datetime.now(UTC)

    def __call__(self, event: ev.Event) -> None:
        self.note(event)
        self.forward(event)

    def note(self, event: ev.Event) -> None:
        now = datetime.now(UTC)
        if event.event == "session_started":
            self._started = now
            self.entry = SessionEntry(
                session_id=event.session_id,
                started_at=now.isoformat(),
                workspace=event.workspace,
                model=event.model,
                mode=event.mode,
            )
        elif self.entry is None:
            return
        elif event.event == "test_finished":
            if event.exit_code == 0 and self.entry.seconds_to_green is None:
                self.entry.seconds_to_green = round((now - self._started).total_seconds(), 3)
        elif event.event == "report":
            self.finish(event)

    def finish(self, report: ev.SessionReport) -> None:
        entry = self.entry
        assert entry is not None
        delivered = [m["memory_id"] for s in report.memory_searches for m in s.matches]
        entry.status, entry.exit_code = report.status, report.exit_code
        entry.turns, entry.tool_calls = report.model_requests, report.tool_calls
        entry.cost_usd = report.cost_usd
        entry.delivered_memory_ids = list(dict.fromkeys(delivered))
        entry.stored_memory_ids = list(report.stored_memory_ids)
        transcript = self.transcripts / f"{entry.session_id}.jsonl"
        entry.transcript = str(transcript) if entry.mode == "live" else None
        entry.summarised = True
        path = summary_path(self.transcripts, entry.session_id)
        try:
            asyncio.get_running_loop().run_in_executor(None, write_summary, path, entry)
        except RuntimeError:  # no loop: nothing to keep waiting
            write_summary(path, entry)


def write_summary(path: Path, entry: SessionEntry) -> None:
    """Atomically: a reader sees the old summary or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {k: v for k, v in asdict(entry).items() if k != "summarised"}
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def load_history(data_dir: Path, unreadable: list[str] | None = None) -> list[SessionEntry]:
    """Every session that left a summary, a transcript or a ledger line; newest first. A
    summary that cannot be read is skipped, and "PATH: why" added to `unreadable`."""
    transcripts = data_dir / "transcripts"
    entries: dict[str, SessionEntry] = {}
    for row in _read_ledger(data_dir / "ledger.jsonl"):
        session_id = str(row.get("session_id", "?"))
        entry = entries.setdefault(session_id, SessionEntry(session_id, mode="live", turns=0))
        entry.started_at = entry.started_at or row.get("at")
        entry.model = entry.model or row.get("model")
        entry.turns = (entry.turns or 0) + 1
        entry.cost_usd += float(row["cost_usd"])
    if transcripts.is_dir():
        for path in sorted(transcripts.glob("*.jsonl")):
            entry = entries.setdefault(path.stem, SessionEntry(path.stem, mode="live"))
            entry.transcript = str(path)
            if entry.started_at is None or entry.model is None:
                _fill_from_transcript(entry, path)
        for path in sorted(transcripts.glob(f"*{SUMMARY_SUFFIX}")):
            summary = _read_summary(path)
            if isinstance(summary, str):
                if unreadable is not None:
                    unreadable.append(f"{path}: {summary}")
            else:
                ledger = entries.get(summary.session_id)
                if ledger is not None and ledger.cost_usd:  # the ledger is the bill
                    summary.cost_usd = ledger.cost_usd
                entries[summary.session_id] = summary
    return sorted(entries.values(), key=lambda e: e.started_at or "", reverse=True)


def _read_ledger(path: Path) -> Iterable[dict[str, Any]]:
    """The ledger lines that count, by the ledger's own rules (`ledger` warns of the others)."""
    for row in Ledger(path).read().rows:
        yield {k: v for k, v in row.items() if k not in ("at", "model") or _text(v)}


def _fill_from_transcript(entry: SessionEntry, path: Path) -> None:
    """Turns, start and model from a transcript; one that cannot be read adds nothing."""
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, ValueError):  # not UTF-8
        return
    entry.turns = entry.turns or len(lines)
    try:
        first = json.loads(lines[0]) if lines else {}
    except (ValueError, RecursionError):  # not JSON, a 5,000-digit number, nested too deep
        return
    if isinstance(first, dict) and _text(first.get("at")):
        entry.started_at = entry.started_at or first["at"]
    request = first.get("request") if isinstance(first, dict) else None
    if isinstance(request, dict) and _text(request.get("model")):
        entry.model = entry.model or request["model"]


def _text(value: object) -> bool:
    return isinstance(value, str)


def _amount(value: object) -> bool:
    """A finite number, 0 or more: a count, a cost or seconds JSON can print again."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value) and value >= 0
    except OverflowError:  # an int too large for a float
        return False


def _ids(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# What each field of a summary must hold (None allowed where the entry allows it).
_SUMMARY_FIELDS: dict[str, Callable[[object], bool]] = {
    "session_id": lambda value: isinstance(value, str) and bool(value),
    "exit_code": lambda value: value is None or type(value) is int,
    "cost_usd": _amount,
    "delivered_memory_ids": _ids,
    "stored_memory_ids": _ids,
    **dict.fromkeys(("turns", "tool_calls", "seconds_to_green"), lambda v: v is None or _amount(v)),
    **dict.fromkeys(
        ("started_at", "workspace", "model", "mode", "status", "transcript"),
        lambda value: value is None or _text(value),
    ),
}


def _read_summary(path: Path) -> SessionEntry | str:
    """The summary's entry, or why it cannot be used (the session is then left to the
    ledger and its transcript): not UTF-8 JSON, not an object, or a field of the wrong kind,
    such as a cost of "lots" or seconds of Infinity, which JSON output could not hold."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return exc.strerror or str(exc)
    except (ValueError, RecursionError):  # UnicodeDecodeError, JSONDecodeError, 5,000 digits
        return "not UTF-8 JSON"
    if not isinstance(data, dict):
        return "not a JSON object"
    data = {key: value for key, value in data.items() if key in _SUMMARY_FIELDS}
    if "session_id" not in data:
        return "no session_id"
    for key, value in data.items():
        if not _SUMMARY_FIELDS[key](value):
            text = repr(value)
            return f"bad {key}: {text if len(text) <= 40 else text[:37] + '...'}"
    return SessionEntry(**data, summarised=True)


def find_session(entries: list[SessionEntry], wanted: str) -> SessionEntry:
    """The session with this id, or the one whose id starts with it."""
    for entry in entries:
        if entry.session_id == wanted:
            return entry
    found = [entry for entry in entries if entry.session_id.startswith(wanted)]
    if len(found) == 1:
        return found[0]
    if found:
        raise CommandError(f"session id prefix {wanted!r} matches {len(found)} sessions", 2)
    raise CommandError(f"no session with id {wanted!r}")


# -- memory's effect ---------------------------------------------------------------------


@dataclass
class Side:
    """One side of the comparison: its sessions' medians."""

    sessions: int
    green: int
    turns: float | None
    tool_calls: float | None
    cost_usd: float | None
    seconds_to_green: float | None


@dataclass
class Effect:
    """Live sessions that received a match against those that did not. `enough` is False
    when either side has fewer than MIN_PER_SIDE sessions: then no comparison is drawn."""

    with_match: Side
    without_match: Side
    left_out: int  # rehearsals and sessions without a summary
    enough: bool
    never_searched: int  # live sessions left out too: see `never_searched`

    def as_json(self) -> dict[str, Any]:
        return asdict(self) | {"min_per_side": MIN_PER_SIDE}

    def lines(self) -> list[str]:
        left = [f"{self.left_out} rehearsed or unsummarised left out"] if self.left_out else []
        if self.never_searched:
            left.append(
                f"{self.never_searched} left out that never searched memory: declined, or "
                "stopped by the budget before a request"
            )
        counts = (
            f"{self.with_match.sessions} live sessions received a match, "
            f"{self.without_match.sessions} did not" + (f" ({'; '.join(left)})" if left else "")
        )
        if not self.enough:
            return [counts + f": too few to compare (at least {MIN_PER_SIDE} a side are needed)."]
        return [counts + ".", *(side_line(n, s) for n, s in self.sides())]

    def sides(self) -> list[tuple[str, Side]]:
        return [("with a match", self.with_match), ("without", self.without_match)]


def side_line(name: str, side: Side) -> str:
    def show(value: float | None, unit: str = "", digits: int = 1) -> str:
        return "n/a" if value is None else f"{value:.{digits}f}{unit}"

    return (
        f"{name}: green {side.green}/{side.sessions}, median turns {show(side.turns)}, "
        f"tool calls {show(side.tool_calls)}, cost ${show(side.cost_usd, digits=4)}, "
        f"time to green {show(side.seconds_to_green, ' s')}"
    )


def memory_effect(entries: list[SessionEntry]) -> Effect:
    live = [e for e in entries if e.summarised and e.mode == "live"]
    compared = [e for e in live if not never_searched(e)]
    with_match = [e for e in compared if received_strong_match(e)]
    without = [e for e in compared if not received_strong_match(e)]
    enough = min(len(with_match), len(without)) >= MIN_PER_SIDE
    return Effect(
        _side(with_match),
        _side(without),
        len(entries) - len(live),
        enough,
        never_searched=len(live) - len(compared),
    )


def _side(entries: list[SessionEntry]) -> Side:
    def mid(values: Iterable[float | None]) -> float | None:
        """The median (statistics' own would add its imports to the dashboard's start)."""
        known = sorted(v for v in values if v is not None)
        if not known:
            return None
        half = len(known) // 2
        # halves first: the sum of two finite values near 1e308 is infinite
        return known[half] if len(known) % 2 else known[half - 1] / 2 + known[half] / 2

    return Side(
        sessions=len(entries),
        green=sum(e.green for e in entries),
        turns=mid(e.turns for e in entries),
        tool_calls=mid(e.tool_calls for e in entries),
        cost_usd=mid(e.cost_usd for e in entries),
        seconds_to_green=mid(e.seconds_to_green for e in entries),
    )
