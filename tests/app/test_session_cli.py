"""`astra-memory run`, `demo --headless` and `ledger` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli.main import main
from app.sessions.options import DEMO_PROJECTS
from tests.agent.responses_server import ResponsesServer

KEY = "sk-live-test-0123456789abcdefghij"


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ASTRA_DATA_DIR", str(tmp_path / "data"))
    for name in ("ASTRA_MEMORY_URL", "OPENAI_API_KEY", "ASTRA_BUDGET_USD", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "data"


REHEARSAL = DEMO_PROJECTS / "rehearsals" / "scenario_alpha.jsonl"


def json_events(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_run_rehearsal_json_ends_with_the_report(capsys, data_dir, alpha, real_embedder):
    code = main(
        ["run", "--workspace", str(alpha), "--replay", str(REHEARSAL), "--store", "yes", "--json"]
    )
    events = json_events(capsys.readouterr().out)
    report = events[-1]
    assert code == 0
    assert report["event"] == "report" and report["status"] == "completed"
    assert {
        "session_id",
        "model_requests",
        "tool_calls",
        "memory_searches",
        "stored_memory_ids",
        "tests",
        "tokens",
        "cost_usd",
    } <= set(report)
    assert report["tests"] == {"exit_code": 0, "passed": 4, "failed": 0}
    assert len(report["stored_memory_ids"]) == 1
    assert {e["event"] for e in events} >= {
        "session_started",
        "model_responded",
        "memory_matched",
        "test_output",
        "test_finished",
        "store_decided",
    }


def test_a_relative_workspace_is_recorded_absolute(capsys, data_dir, alpha, monkeypatch):
    """`--workspace .` was recorded as `.`: the history could not say which project."""
    monkeypatch.chdir(alpha / "app")
    main(["run", "--workspace", "..", "--replay", str(REHEARSAL), "--store", "no", "--json"])
    [started] = [e for e in json_events(capsys.readouterr().out) if e["event"] == "session_started"]
    assert started["workspace"] == str(alpha.resolve())


def test_run_with_store_ask_and_no_terminal_declines(capsys, data_dir, alpha, real_embedder):
    code = main(["run", "--workspace", str(alpha), "--replay", str(REHEARSAL), "--json"])
    report = json_events(capsys.readouterr().out)[-1]
    assert code == 0 and report["stored_memory_ids"] == []
    assert main(["memory", "list", "--json", "--limit", "0"]) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--replay", "missing.jsonl"], "cannot use rehearsal script"),
        ([], "needs --replay"),
        (["--live", "--approve-live-cost"], "needs OPENAI_API_KEY"),
    ],
)
def test_run_configuration_errors_exit_2(capsys, data_dir, alpha, argv, message):
    code = main(["run", "--workspace", str(alpha), *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_run_unknown_model_price_cannot_go_live(capsys, data_dir, alpha, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    code = main(["run", "--workspace", str(alpha), "--live", "--model", "mystery-1"])
    assert code == 2 and "no known price" in capsys.readouterr().err


def test_given_prices_let_an_unknown_model_run_live(capsys, data_dir, alpha, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ASTRA_PRICE_INPUT_PER_MILLION", "1")
    monkeypatch.setenv("ASTRA_PRICE_OUTPUT_PER_MILLION", "2")
    with ResponsesServer() as server:
        server.enqueue_response(
            [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "?"}],
                }
            ],
            usage={"input_tokens": 1_000_000, "output_tokens": 0, "total_tokens": 1_000_000},
        )
        code = main(
            [
                "run",
                "--workspace",
                str(alpha),
                "--live",
                "--approve-live-cost",
                "--model",
                "mystery-1",
                "--base-url",
                server.base_url,
                "--json",
            ]
        )
    report = json_events(capsys.readouterr().out)[-1]
    assert code == 4 and report["status"] == "gate"  # answered before any memory search
    assert report["cost_usd"] == pytest.approx(1.0)


def test_live_run_records_a_transcript_without_the_key(
    capsys, data_dir, alpha, monkeypatch, real_embedder
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    turns = [json.loads(line) for line in REHEARSAL.read_text().splitlines()]
    with ResponsesServer() as server:
        for turn in turns:
            server.enqueue_response(
                turn["output"],
                usage={"input_tokens": 900, "output_tokens": 80, "total_tokens": 980},
            )
        code = main(
            [
                "run",
                "--workspace",
                str(alpha),
                "--live",
                "--approve-live-cost",
                "--base-url",
                server.base_url,
                "--store",
                "yes",
                "--budget-usd",
                "2",
                "--json",
            ]
        )
        headers = [received.headers for received in server.requests]
    report = json_events(capsys.readouterr().out)[-1]
    assert code == 0 and report["cost_usd"] == pytest.approx(
        len(turns) * (900 * 10 + 80 * 50) / 1e6
    )
    assert all(h.get("Authorization", h.get("authorization")) == f"Bearer {KEY}" for h in headers)
    [transcript] = (data_dir / "transcripts").glob("*.jsonl")
    text = transcript.read_text()
    assert len(text.splitlines()) == len(turns) and KEY not in text
    assert oct(transcript.stat().st_mode & 0o777) == "0o600"
    for folder in (data_dir,):
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix in {".jsonl", ".json", ".txt", ".log"}:
                assert KEY not in path.read_text(errors="ignore"), path
    assert main(["ledger"]) == 0
    assert report["session_id"] in capsys.readouterr().out


def test_live_run_without_approval_sends_nothing(capsys, data_dir, alpha, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ResponsesServer() as server:
        code = main(
            ["run", "--workspace", str(alpha), "--live", "--base-url", server.base_url, "--json"]
        )
        assert server.requests == []
    assert code == 2
    assert json_events(capsys.readouterr().out)[-1]["status"] == "declined"


def test_demo_headless_runs_the_experiment_end_to_end(capsys, data_dir, real_embedder):
    code = main(["demo", "--headless"])
    out = capsys.readouterr().out
    assert code == 0, out
    for check in (
        "alpha passed its tests and stored a confirmed fix",
        "beta started a new response chain",
        "beta retrieved alpha's fix, the same cause: a comma-separated value keeps the space",
        "beta searched memory before its first edit",
        "beta's fix passes the original, untouched tests",
    ):
        assert f"✓ {check}" in out
    # Each session prints its own checks in its turn, and its first red run is the
    # preflight's (no file changed in between), not a second one; beta's, made while alpha
    # worked, is taken by both. Beta's store check counts what alpha stored.
    alpha, beta = out.split("session beta")
    assert "0 record(s), writable" in alpha and "1 record(s), writable" in beta
    for turn in (alpha, beta):
        assert turn.count("ok     test command:") == 1
        assert turn.count("no file changed since the preflight ran the tests") == 1
        assert turn.index("ok     test command:") < turn.index("turn 1 completed")


def test_a_ledger_it_cannot_count_is_said_and_stops_a_live_session(
    capsys, data_dir, alpha, monkeypatch
):
    """`ledger` prints what it can and warns in one line; a live session with a total limit
    refuses to start, as the budget it would leave cannot be known."""
    data_dir.mkdir()
    (data_dir / "ledger.jsonl").write_text(
        '{"session_id": "a", "cost_usd": 0.5}\n{"session_id": "b", "cost_usd": NaN}\n'
        '{"session_id": "c", "cost_usd": "lots"}\n'
    )
    assert main(["ledger"]) == 0
    out, err = capsys.readouterr()
    assert "total $0.5000" in out and err.count("\n") == 1
    assert "2 line(s) of the ledger" in err and "(line 2: cost_usd nan" in err
    assert main(["ledger", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["refused_lines"]) == 2
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ASTRA_BUDGET_USD", "5")
    with ResponsesServer() as server:
        argv = ["run", "--workspace", str(alpha), "--live", "--approve-live-cost", "--no-sandbox"]
        code = main([*argv, "--base-url", server.base_url])
        assert server.requests == []
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert f"the ledger {data_dir / 'ledger.jsonl'} holds 2 line(s)" in err and "line 2" in err


def test_ledger_lines_whose_sum_would_overflow_are_refused_and_the_json_stays_valid(
    capsys, data_dir
):
    """Each 1e308 is finite; two of them sum to infinity, which no JSON can hold."""
    data_dir.mkdir()
    (data_dir / "ledger.jsonl").write_text(
        '{"session_id": "a", "cost_usd": 0.25}\n' + '{"session_id": "b", "cost_usd": 1e308}\n' * 2
    )
    assert main(["ledger", "--json"]) == 0
    out, _ = capsys.readouterr()
    report = json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in --json"))
    assert len(report["refused_lines"]) == 2
    assert "more than any one request can cost" in report["refused_lines"][0]
    assert main(["ledger"]) == 0
    assert "total $0.2500" in capsys.readouterr().out
