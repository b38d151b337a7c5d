"""Session history: a live session over the loopback server leaves a transcript and a
summary; `sessions` lists and shows it; its transcript replays to the same session; `report`
compares only when there are enough sessions; every list command speaks JSON."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest

from app.cli.main import main
from app.dashboard.screens.history_screen import detail
from app.sessions.history import (
    MIN_PER_SIDE,
    SessionEntry,
    load_history,
    memory_effect,
    summary_path,
    write_summary,
)
from app.sessions.options import DEMO_PROJECTS
from memory.service import MemoryService
from memory.stores.protocol import open_store
from tests.agent.responses_server import ResponsesServer, response_body
from tests.app.pilot_helpers import seed
from tests.fakes import HashEmbedder

KEY = "sk-dummy-0123456789abcdefghij"
ALPHA_SCRIPT = DEMO_PROJECTS / "rehearsals" / "scenario_alpha.jsonl"


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ASTRA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ASTRA_MEMORY_URL", f"sqlite:///{tmp_path / 'memory.sqlite3'}")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for name in ("ASTRA_BUDGET_USD", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "data"


def fresh_alpha(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(DEMO_PROJECTS / "scenario_alpha", tmp_path / name))


def last_report(out: str) -> dict:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")][-1]


def test_a_live_session_is_listed_and_its_transcript_replays_to_the_same_session(
    capsys, tmp_path, data_dir
):
    with ResponsesServer() as server:
        for number, line in enumerate(ALPHA_SCRIPT.read_text().splitlines(), 1):
            server.enqueue(response_body(json.loads(line)["output"], response_id=f"resp_{number}"))
        workspace = fresh_alpha(tmp_path, "alpha")
        argv = ["run", "--workspace", str(workspace), "--live", "--approve-live-cost"]
        code = main([*argv, "--base-url", server.base_url, "--store", "yes", "--json"])
    live = last_report(capsys.readouterr().out)
    assert code == 0 and live["status"] == "completed" and live["stored_memory_ids"]
    session_id = live["session_id"]

    assert main(["sessions", "list", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["session_id"] == session_id
    assert (listed["workspace"], listed["status"], listed["mode"]) == (
        str(workspace),
        "completed",
        "live",
    )
    assert (listed["turns"], listed["tool_calls"]) == (live["model_requests"], live["tool_calls"])
    assert listed["stored_memory_ids"] == live["stored_memory_ids"]
    assert listed["cost_usd"] == pytest.approx(live["cost_usd"]) and live["cost_usd"] > 0
    assert listed["seconds_to_green"] is not None and listed["received_match"] is False
    transcript = Path(listed["transcript"])
    assert transcript == data_dir / "transcripts" / f"{session_id}.jsonl"
    assert oct(summary_path(transcript.parent, session_id).stat().st_mode)[-3:] == "600"

    assert main(["sessions", "show", session_id[:12]]) == 0
    shown = capsys.readouterr().out
    assert str(workspace) in shown and live["stored_memory_ids"][0] in shown

    # the recorded transcript, played offline on a fresh copy, is the same session
    again = fresh_alpha(tmp_path, "alpha-again")
    replay_argv = ["run", "--workspace", str(again), "--replay", str(transcript)]
    code = main([*replay_argv, "--store", "no", "--json"])
    replay = last_report(capsys.readouterr().out)
    assert code == 0 and replay["status"] == "completed"
    for key in ("model_requests", "tool_calls", "tests", "first_edit_turn", "first_search_turn"):
        assert replay[key] == live[key], key
    assert replay["cost_usd"] == 0  # offline and free
    assert [s["query"] for s in replay["memory_searches"]] == [
        s["query"] for s in live["memory_searches"]
    ]


def _summary(
    data_dir: Path,
    name: str,
    *,
    matched: bool,
    turns: int,
    green: bool = True,
    status: str = "completed",
):
    entry = SessionEntry(
        session_id=name,
        started_at=f"2026-01-01T00:00:{turns:02d}+00:00",
        workspace="/w",
        model="gpt-6-astra",
        mode="live",
        status=status,
        exit_code=0 if green else 1,
        turns=turns,
        tool_calls=turns * 2,
        cost_usd=turns / 100,
        delivered_memory_ids=["m1"] if matched else [],
        seconds_to_green=float(turns) if green else None,
    )
    write_summary(summary_path(data_dir / "transcripts", name), entry)


def test_a_completed_session_that_ended_red_says_red(capsys, data_dir):
    """`sessions list` said `completed` for a session whose tests still failed."""
    _summary(data_dir, "ended-green", matched=False, turns=3)
    _summary(data_dir, "ended-red", matched=False, turns=4, green=False)
    assert main(["sessions", "list"]) == 0
    lines = {line.split()[2]: line.split() for line in capsys.readouterr().out.splitlines()}
    assert lines["ended-green"][3:5] == ["completed", "green"]
    assert lines["ended-red"][3:5] == ["completed", "red"]
    assert main(["sessions", "show", "ended-red"]) == 0
    assert re.search(r"^tests\s+red$", capsys.readouterr().out, re.MULTILINE)


def test_too_few_sessions_are_said_to_be_too_few(capsys, data_dir):
    for number in range(MIN_PER_SIDE):
        _summary(data_dir, f"with-{number}", matched=True, turns=3)
    _summary(data_dir, "without-0", matched=False, turns=9)
    _summary(data_dir, "rehearsed", matched=False, turns=9)  # left out below
    rehearsed = summary_path(data_dir / "transcripts", "rehearsed")
    rehearsed.write_text(rehearsed.read_text().replace('"live"', '"rehearsal"'))
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert "5 live sessions received a match, 1 did not (1 rehearsed" in out
    assert "too few to compare" in out and "median" not in out
    assert main(["report", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sessions"]["enough"] is False and data["records"] == []


def test_enough_sessions_are_compared_by_their_medians(data_dir):
    for number, turns in enumerate([2, 3, 3, 4, 10]):
        _summary(data_dir, f"with-{number}", matched=True, turns=turns)
    for number, turns in enumerate([6, 7, 8, 9]):
        _summary(data_dir, f"without-{number}", matched=False, turns=turns)
    _summary(data_dir, "without-red", matched=False, turns=12, green=False)
    effect = memory_effect(load_history(data_dir))
    assert effect.enough
    assert (effect.with_match.turns, effect.with_match.tool_calls) == (3, 6)
    assert (effect.without_match.turns, effect.without_match.green) == (8, 4)
    assert effect.without_match.seconds_to_green == 7.5  # the red session never got green
    assert effect.with_match.cost_usd == pytest.approx(0.03)
    lines = effect.lines()
    assert lines[1].startswith("with a match: green 5/5, median turns 3.0, tool calls 6.0")
    assert lines[2].startswith("without: green 4/5, median turns 8.0")


def test_sessions_that_never_searched_memory_are_on_neither_side(capsys, data_dir):
    """A declined session, or one the budget stopped before its first request, counted as
    one that "did not receive a match"; it never searched."""
    for number in range(MIN_PER_SIDE):
        _summary(data_dir, f"with-{number}", matched=True, turns=3)
        _summary(data_dir, f"without-{number}", matched=False, turns=6)
    _summary(data_dir, "declined", matched=False, turns=0, green=False, status="declined")
    _summary(data_dir, "over-budget", matched=False, turns=0, green=False, status="budget")
    _summary(data_dir, "budget-later", matched=False, turns=4, green=False, status="budget")
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert main(["report", "--json"]) == 0
    sessions = json.loads(capsys.readouterr().out)["sessions"]
    assert "5 live sessions received a match, 6 did not (2 left out that never searched" in out
    assert "without: green 5/6" in out  # the one stopped after 4 turns still counts
    assert (sessions["never_searched"], sessions["left_out"]) == (2, 0)
    assert sessions["without_match"]["sessions"] == 6 and sessions["enough"] is True


def test_sessions_known_only_to_the_ledger_and_a_transcript_are_listed(data_dir):
    (data_dir / "transcripts").mkdir(parents=True)
    (data_dir / "ledger.jsonl").write_text(
        json.dumps(
            {"at": "2026-01-02T00:00:00+00:00", "session_id": "old-1", "model": "m", "cost_usd": 0}
        )
        + '\n{"session_id": "old-1", "cost_usd": 0.5}\n{torn'
    )
    line = {"at": "2026-01-03T00:00:00+00:00", "request": {"model": "gpt-x"}, "response": {}}
    (data_dir / "transcripts" / "old-2.jsonl").write_text(json.dumps(line) + "\n")
    old_2, old_1 = load_history(data_dir)
    assert (old_1.session_id, old_1.turns, old_1.cost_usd, old_1.status) == ("old-1", 2, 0.5, None)
    assert (old_2.session_id, old_2.model, old_2.turns, old_2.summarised) == (
        "old-2",
        "gpt-x",
        1,
        False,
    )


def test_a_session_id_prefix_must_be_unique(capsys, data_dir):
    _summary(data_dir, "session-a1", matched=False, turns=1)
    _summary(data_dir, "session-a2", matched=False, turns=2)
    assert main(["sessions", "show", "session-a"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "matches 2 sessions" in err
    assert main(["sessions", "show", "nope"]) == 1
    assert main(["sessions", "show", "session-a2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["turns"] == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["memory", "list", "--json"],
        ["memory", "stats", "--json"],
        ["ledger", "--json"],
        ["sessions", "list", "--json"],
        ["config", "show", "--json"],
        ["report", "--json"],
    ],
)
def test_every_list_command_speaks_json(capsys, data_dir, argv):
    _summary(data_dir, "one", matched=False, turns=1)
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) is not None


async def test_report_says_how_often_a_records_deliveries_ended_green(capsys, tmp_path, data_dir):
    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    [delivered, _never] = await seed(
        url, [("origins split wrong", "AssertionError", "strip"), ("port", "KeyError", "default")]
    )
    store = open_store(url)
    try:
        for session, green in (("s1", True), ("s2", True), ("s3", False)):
            service = MemoryService(store, HashEmbedder(), session_id=session, scope="tui")
            results = await service.find("origins split wrong", top_k=1)
            assert results[0].record.memory_id == delivered
            await store.record_deliveries(session, None, results)
            await service.end_session(green)
    finally:
        await store.close()
    assert await asyncio.to_thread(main, ["report", "--json", "--memory", url]) == 0
    [row] = json.loads(capsys.readouterr().out)["records"]
    assert (row["memory_id"], row["delivered"]) == (delivered, 3)
    assert (row["sessions_ended"], row["sessions_green"]) == (3, 2)
    assert await asyncio.to_thread(main, ["report", "--memory", url]) == 0
    assert f"{delivered[:8]}  AssertionError  delivered 3x; of 3 session(s) ended, 2 green" in (
        capsys.readouterr().out
    )


def test_sessions_list_counts_in_the_singular_and_show_says_why_there_is_no_transcript(
    capsys, data_dir
):
    """`1 matches`; a rehearsal's transcript was "unknown" here, "none" in the history pane."""
    _summary(data_dir, "rehearsed", matched=True, turns=1)
    assert main(["sessions", "list"]) == 0
    line = capsys.readouterr().out
    assert "  1 turn  " in line and "  1 match  " in line
    assert main(["sessions", "show", "rehearsed"]) == 0
    shown = capsys.readouterr().out
    assert "transcript     none (only live sessions are recorded)" in shown.splitlines()
    [entry] = load_history(data_dir)
    assert "transcript: none (only live sessions are recorded)" in detail(entry)


def _refuse_constant(name: str) -> None:
    raise AssertionError(f"not JSON: {name}")


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"[1, 2]", "not a JSON object"),
        (b"\xff\xfe", "not UTF-8 JSON"),
        (b'{"session_id": "bad", "cost_usd": "lots"}', "bad cost_usd: 'lots'"),
        (b'{"session_id": "bad", "seconds_to_green": Infinity}', "bad seconds_to_green: inf"),
        (b'{"session_id": "bad", "seconds_to_green": 1e999}', "bad seconds_to_green: inf"),
        (b'{"session_id": "bad", "turns": NaN}', "bad turns: nan"),
        (b'{"session_id": "bad", "started_at": 7}', "bad started_at: 7"),
    ],
)
@pytest.mark.parametrize(
    "argv", [["sessions", "list"], ["sessions", "list", "--json"], ["report"], ["report", "--json"]]
)
def test_a_summary_that_cannot_be_read_is_skipped_with_one_warning(
    capsys, data_dir, content, why, argv
):
    """It was a traceback ('list' has no .items(), a cost of "lots" formatted as money), or
    JSON output with Infinity in it, which no JSON reader takes."""
    _summary(data_dir, "good", matched=False, turns=1)
    bad = summary_path(data_dir / "transcripts", "bad")
    bad.write_bytes(content)
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert err == f"astra-memory: warning: skipped the session summary {bad}: {why}\n"
    if "--json" in argv:
        json.loads(out, parse_constant=_refuse_constant)
    if argv[0] == "sessions":
        assert "good" in out and "bad" not in out


def test_a_transcript_or_ledger_line_that_cannot_be_read_adds_nothing(capsys, data_dir):
    (data_dir / "transcripts").mkdir(parents=True)
    (data_dir / "transcripts" / "binary.jsonl").write_bytes(b"\xff\xfe\n")
    (data_dir / "transcripts" / "deep.jsonl").write_text("[" * 100_000 + "\n")
    (data_dir / "ledger.jsonl").write_bytes(
        b'{"session_id": "old", "cost_usd": "lots"}\n{"session_id": "old", "cost_usd": 0.5, '
        b'"at": 7}\n\xff\n'
    )
    assert main(["sessions", "list", "--json"]) == 0
    listed = {entry["session_id"]: entry for entry in json.loads(capsys.readouterr().out)}
    assert set(listed) == {"binary", "deep", "old"}
    assert (listed["old"]["cost_usd"], listed["old"]["started_at"]) == (0.5, None)


def test_sessions_and_report_json_stay_valid_at_the_edge_of_a_float(capsys, data_dir):
    """`report --json` printed Infinity: the median of two durations of 1e308 was their
    sum, halved. And `sessions list` counted ledger lines that `ledger` refuses: two of
    1e308 each summed to an infinite cost."""
    for number in range(MIN_PER_SIDE + 1):
        for side, matched in (("with", True), ("without", False)):
            name = f"{side}-{number}"
            _summary(data_dir, name, matched=matched, turns=3)
            path = summary_path(data_dir / "transcripts", name)
            path.write_text(
                path.read_text().replace('"seconds_to_green": 3.0', '"seconds_to_green": 1e308')
            )
    (data_dir / "ledger.jsonl").write_text(
        '{"session_id": "a", "cost_usd": 0.25}\n' + '{"session_id": "b", "cost_usd": 1e308}\n' * 2
    )
    assert main(["report", "--json"]) == 0
    sessions = json.loads(capsys.readouterr().out, parse_constant=_refuse_constant)["sessions"]
    assert sessions["enough"] and sessions["with_match"]["seconds_to_green"] == 1e308
    assert main(["sessions", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out, parse_constant=_refuse_constant)
    costs = {entry["session_id"]: entry["cost_usd"] for entry in listed}
    assert costs["a"] == 0.25 and "b" not in costs


def test_every_summary_field_says_what_it_may_hold():
    """The reader keeps only the fields it can check: a new one without a check is dropped."""
    from app.sessions.history import _SUMMARY_FIELDS

    assert set(_SUMMARY_FIELDS) == set(SessionEntry.__dataclass_fields__) - {"summarised"}
