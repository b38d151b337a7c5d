"""Text is data wherever it is shown (issue 14, findings 5 and 8): a record's or a model's
brackets are never read as Rich markup, and control sequences (clear screen, conceal,
OSC 52 clipboard, OSC 8 links) never reach the terminal raw — in the CLI and the dashboard."""

from __future__ import annotations

import asyncio
import json
import sys
import unicodedata
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from rich.text import Text
from textual.widgets import DataTable

from agent.supervisor import StoreProposal
from app.cli.main import main
from app.console import make_console
from app.dashboard.screens.memory_browser import MemoryBrowserScreen
from app.dashboard.screens.record_modal import RecordModal
from app.dashboard.screens.store_modal import StoreModal
from app.sessions.headless import HeadlessSupervisor
from memory.records import MemoryRecord
from memory.stores.protocol import open_store
from memory.text import mask_url_passwords, shown
from tests.app.pilot_helpers import SIZE, idle_app, wait_for, wait_for_screen
from tests.fakes import EVIDENCE, HashEmbedder
from widgets import RecordView

ESC = "\x1b"
CLEAR, CONCEAL = f"{ESC}[2J{ESC}[H", f"{ESC}[8m"
OSC52 = f"{ESC}]52;c;cm0gLXJmIH4=\x07"
OSC8 = f"{ESC}]8;;https://evil.example{ESC}\\click{ESC}]8;;{ESC}\\"
HOSTILE = f"Route [/users] returned 404 :warning: [bold]x[/ {CLEAR}{OSC52}{OSC8}\x9b31m{CONCEAL}"


def hostile_record(memory_id: str = "0badc0de-0000-4000-8000-000000000000") -> MemoryRecord:
    return MemoryRecord(
        memory_id=memory_id,
        scope="tui",
        fix_description=HOSTILE,
        error_type=HOSTILE,
        file_paths=(HOSTILE, "[red]app.py"),
        outcome=HOSTILE,
        symptom=HOSTILE,
        diff=HOSTILE,
        session_id=HOSTILE,
        response_id=HOSTILE,
        timestamp=datetime(2026, 1, 2, tzinfo=UTC),
        evidence=replace(EVIDENCE, command=HOSTILE, output_excerpt=HOSTILE),
        flags=(HOSTILE,),
    )


async def put(url: str, record: MemoryRecord) -> None:
    store = open_store(url)
    try:
        vector = HashEmbedder().embed_many_sync([record.embedding_text()])[0]
        await store.upsert_many([(record, vector)])
    finally:
        await store.close()


def test_control_characters_are_shown_not_obeyed_and_keep_their_place():
    safe = shown(HOSTILE + "\n\tnext")
    assert ESC not in safe and "\x07" not in safe and "\x9b" not in safe
    assert safe.endswith("␛[8m\n\tnext") and len(safe) == len(HOSTILE) + 6
    assert shown("a\ud800b") == "a\ufffdb"


def test_no_hidden_character_reaches_the_terminal_and_each_keeps_its_place(capsys):
    """A record could read one way and show another: a bidi override (U+202E) draws the
    rest of a line backwards, zero-width and tag characters hide text. And a plain string
    printed by the CLI lost BEL, BS, VT, FF and CR unseen: Rich dropped them."""
    hidden = "".join(
        chr(code)
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)) in ("Cf", "Zl", "Zp")
    )
    safe = shown(hidden)
    assert len(safe) == len(hidden) and set(safe) == {"\ufffd"}
    make_console().print("bel\x07 bs\x08 vt\x0b ff\x0c cr\r fix\u202eevil\u202c\u200b!")
    out = capsys.readouterr().out
    assert "bel␇ bs␈ vt␋ ff␌ cr␍ fix\ufffdevil\ufffd\ufffd!" in out


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("redis://:pw@host:6379/0", "redis://:***@host:6379/0"),
        ("vectorai://u:p@ss/w0rd@db:6574", "vectorai://u:***@db:6574"),
        ("cannot reach https://k:secret@api.example/v1 now", "https://k:***@api.example/v1 now"),
        ("https://api.example:8443/v1", "https://api.example:8443/v1"),
    ],
)
def test_a_password_in_a_url_is_masked_wherever_it_is_in_the_text(text, masked):
    assert mask_url_passwords(text).endswith(masked)


def test_the_cli_console_never_writes_a_control_sequence_or_a_url_password(capsys):
    make_console().print(Text(HOSTILE), "[bold]sqlite:///x redis://:pw@h[/]")
    out = capsys.readouterr().out
    assert ESC not in out and "Route [/users] returned 404 :warning: [bold]x[/" in out
    assert "redis://:***@h" in out and "pw" not in out


async def test_a_hostile_record_renders_in_the_browser_and_both_modals(settings, url):
    record = hostile_record()
    await put(url, record)
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        await wait_for(pilot, lambda: app.screen.records)
        table = app.screen.query_one(DataTable)
        cells = [str(cell) for cell in table.get_row(record.memory_id)]
        assert any("Route [/users] returned 404 :warning:" in cell for cell in cells)
        assert not any(ESC in cell for cell in cells)
        for modal in (RecordModal(record), StoreModal(StoreProposal(record, []))):
            app.push_screen(modal)
            await wait_for(pilot, lambda m=modal: m.is_current and m.query(RecordView))
            await pilot.pause()
            drawn = "\n".join(
                line.text
                for line in modal.query_one(RecordView).render_lines(
                    modal.query_one(RecordView).region.reset_offset
                )
            )
            assert "Route [/users] returned 404" in drawn and ESC not in drawn
            modal.dismiss(False)
            await pilot.pause()


def test_memory_show_list_and_eval_print_hostile_records_as_data(capsys, tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("ASTRA_DATA_DIR", str(data))
    monkeypatch.delenv("ASTRA_MEMORY_URL", raising=False)
    record = replace(hostile_record(), scope="default")
    twin = replace(hostile_record("0badc0de-0000-4000-8000-000000000001"), scope="default")
    for each in (record, twin):
        asyncio.run(put(f"sqlite:///{data / 'memory.sqlite3'}", each))
    queries = tmp_path / "q.jsonl"
    queries.write_text(  # twins: one is a hit, the other a miss, printed with its query
        json.dumps({"query": HOSTILE, "expect": record.memory_id})
        + "\n"
        + json.dumps({"query": HOSTILE, "expect": twin.memory_id})
        + "\n"
    )
    for argv in (
        ["memory", "show", record.memory_id],
        ["memory", "list"],
        ["memory", "search", HOSTILE],
        ["memory", "eval", str(queries)],
    ):
        code = main(argv)
        captured = capsys.readouterr()
        assert code == 0, (argv, captured.err)
        assert ESC not in captured.out + captured.err and "\x9b" not in captured.out
        assert "Traceback" not in captured.err
    for argv in (["memory", "show", record.memory_id], ["memory", "list"]):
        printed = main_output(capsys, argv)
        assert "[/users]" in printed and ":warning:" in printed  # an emoji code stays as typed


def main_output(capsys, argv: list[str]) -> str:
    main(argv)
    return capsys.readouterr().out


class AnsweringTerminal:
    """stdin as a terminal that answers one line."""

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self.answer


@pytest.mark.parametrize("terminal", [True, False])
async def test_the_headless_store_prompt_shows_a_records_escapes(capsys, monkeypatch, terminal):
    """The prompt printed the record's text raw: its ESC[2J cleared the operator's screen
    and its OSC 52 set the clipboard, just as they were asked to say yes."""
    if terminal:
        monkeypatch.setattr("sys.stdin", AnsweringTerminal("n\n"))
    supervisor = HeadlessSupervisor(approve_live_cost=False, store="ask")
    assert await supervisor.confirm_store(StoreProposal(hostile_record(), [])) is False
    err = capsys.readouterr().err
    assert "Write it to memory?" in err and ESC not in err and "\x9b" not in err
    assert shown(CLEAR) in err and shown(OSC52) in err
