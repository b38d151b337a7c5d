"""`astra-memory run --live` against the loopback Responses server: the issue-10 flags and
environment reach the requests, timeouts and retries end sessions as the README says, and
`ledger` shows what was charged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent import transport, turns
from app.cli.main import main
from app.sessions.options import DEFAULT_MAX_OUTPUT_TOKENS, REQUEST_TIMEOUT_S
from tests.agent.responses_server import (
    ResponsesServer,
    error_body,
    message_item,
    response_body,
    usage_body,
)

KEY = "sk-dummy-0123456789abcdefghij"


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ASTRA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("ASTRA_MEMORY_URL", "ASTRA_BUDGET_USD", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env
    return tmp_path / "data"


def live_run(alpha: Path, server: ResponsesServer, *flags: str) -> int:
    return main(
        [
            "run",
            "--workspace",
            str(alpha),
            "--live",
            "--approve-live-cost",
            "--base-url",
            server.base_url,
            "--json",
            *flags,
        ]
    )


def json_events(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_a_request_timeout_exits_1_with_the_worst_case_in_the_ledger(capsys, data_dir, alpha):
    with ResponsesServer() as server:
        server.enqueue(response_body([message_item("too late")]), delay_s=3.0)
        code = live_run(alpha, server, "--request-timeout", "1")
        assert len(server.requests) == 1  # not retried
    events = json_events(capsys.readouterr().out)
    report = events[-1]
    worst = next(e for e in events if e["event"] == "model_requested")["worst_case_usd"]
    assert code == 1 and report["status"] == "api_error"
    assert report["cost_usd"] == worst > 0
    [line] = [json.loads(text) for text in (data_dir / "ledger.jsonl").read_text().splitlines()]
    assert (line["basis"], line["cost_usd"], line["session_id"]) == (
        "unknown_outcome",
        worst,
        report["session_id"],
    )
    assert main(["ledger"]) == 0
    assert "1 unknown outcome" in capsys.readouterr().out


def test_flags_and_environment_shape_every_request(capsys, data_dir, alpha, monkeypatch):
    monkeypatch.setenv("ASTRA_RESPONSE_STORAGE", "off")
    monkeypatch.setenv("ASTRA_PRICE_INPUT_PER_MILLION", "2")
    monkeypatch.setenv("ASTRA_PRICE_CACHED_INPUT_PER_MILLION", "0.5")
    monkeypatch.setenv("ASTRA_PRICE_OUTPUT_PER_MILLION", "8")
    with ResponsesServer() as server:
        server.enqueue(error_body("Slow down", "rate_limit_error"), 429, {"retry-after-ms": "10"})
        server.enqueue_response(
            [message_item("Done.")],
            usage=usage_body(1_000_000, 100_000, cached_tokens=800_000, reasoning_tokens=50_000),
        )
        code = live_run(
            alpha,
            server,
            "--model",
            "mystery-1",
            "--reasoning-effort",
            "high",
            "--max-output-tokens",
            "9000",
        )
        sent = [received.body for received in server.requests]
    events = json_events(capsys.readouterr().out)
    assert code == 4  # a final answer before any memory search
    [retried] = [e for e in events if e["event"] == "request_retried"]
    assert (retried["attempt"], retried["delay_s"], retried["reason"]) == (1, 0.01, "HTTP 429")
    body = sent[-1]
    assert (body["reasoning"], body["max_output_tokens"]) == ({"effort": "high"}, 9000)
    assert body["store"] is False and body["parallel_tool_calls"] is False
    report = events[-1]
    assert report["cost_usd"] == pytest.approx(0.2 * 2 + 0.8 * 0.5 + 0.1 * 8)
    assert report["tokens"] == {
        "input": 1_000_000,
        "cached_input": 800_000,
        "output": 100_000,
        "reasoning": 50_000,
        "total": 1_100_000,
    }


def test_the_default_output_cap_fits_the_budget_given(capsys, data_dir, alpha):
    """The README's `--live --budget-usd 1`: 25,000 output tokens would cost $1.25 at
    $50 per million, so the cap is lowered to what the dollar buys, and the quote says so."""
    with ResponsesServer() as server:
        server.enqueue_response([message_item("Done.")], usage=usage_body(1_000, 100))
        code = live_run(alpha, server, "--budget-usd", "1")
        [body] = [received.body for received in server.requests]
    captured = capsys.readouterr()
    events = json_events(captured.out)
    assert code == 4  # it ran: a final answer before any memory search
    cap = body["max_output_tokens"]
    assert 15_000 < cap < DEFAULT_MAX_OUTPUT_TOKENS
    [requested] = [e for e in events if e["event"] == "model_requested"]
    assert 0.99 < requested["worst_case_usd"] <= 1.0


def test_a_budget_too_small_for_a_turn_stops_before_the_question(capsys, data_dir, alpha):
    with ResponsesServer() as server:
        code = live_run(alpha, server, "--budget-usd", "0.02")
        fixed = live_run(alpha, server, "--budget-usd", "1", "--max-output-tokens", "25000")
        assert server.requests == []
    events = json_events(capsys.readouterr().out)
    reports = [e for e in events if e["event"] == "report"]
    assert (code, fixed) == (3, 3) and [r["status"] for r in reports] == ["budget", "budget"]
    notes = [e["message"] for e in events if e["event"] == "note"]
    assert any("fewer than the 2000 a turn needs; raise --budget-usd" in n for n in notes)
    assert any("up to $1.26" in n and "lower --max-output-tokens" in n for n in notes)


def test_no_store_flag_and_the_defaults(capsys, data_dir, alpha):
    with ResponsesServer() as server:
        server.enqueue_response([message_item("Done.")])
        live_run(alpha, server, "--no-store")
        [body] = [received.body for received in server.requests]
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "low"}
    assert body["max_output_tokens"] == DEFAULT_MAX_OUTPUT_TOKENS
    # app/sessions/options.py repeats the agent's defaults: the dashboard starts without it
    assert (DEFAULT_MAX_OUTPUT_TOKENS, REQUEST_TIMEOUT_S) == (
        turns.DEFAULT_MAX_OUTPUT_TOKENS,
        transport.REQUEST_TIMEOUT_S,
    )


def test_the_headless_printer_shows_retries_tokens_and_refusals(capsys, data_dir, alpha):
    with ResponsesServer() as server:
        server.enqueue(error_body("Busy", "server_error"), 503, {"retry-after-ms": "10"})
        server.enqueue_response(
            [
                {
                    "type": "message",
                    "id": "m",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "refusal", "refusal": "Not doing that."}],
                }
            ],
            usage=usage_body(500, 40, cached_tokens=300, reasoning_tokens=30),
        )
        code = main(
            ["run", "--workspace", str(alpha), "--live", "--approve-live-cost",
             "--base-url", server.base_url]
        )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    assert "HTTP 503: retry 1 in 0.0s" in out
    assert "500+40 tokens (300 cached, 30 reasoning)" in out
    assert "refused: Not doing that." in out and "refused (exit 1)" in out


@pytest.mark.parametrize(
    ("argv", "env", "says"),
    [
        (["--reasoning-effort", "huge"], {}, "invalid choice"),
        (["--max-output-tokens", "0"], {}, "must be 1 or more"),
        (["--request-timeout", "0"], {}, "more than 0 seconds"),
        (["--request-timeout", "nan"], {}, "more than 0 seconds"),
        ([], {"ASTRA_RESPONSE_STORAGE": "maybe"}, "ASTRA_RESPONSE_STORAGE"),
        ([], {"ASTRA_PRICE_CACHED_INPUT_PER_MILLION": "-1"}, "CACHED_INPUT"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(capsys, data_dir, alpha, monkeypatch, argv, env, says):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        code = main(["run", "--workspace", str(alpha), "--live", *argv])
    except SystemExit as exit_:  # argparse's own exit
        code = exit_.code
    assert code == 2
    assert says in capsys.readouterr().err


def doctor_lines(capsys, *flags: str) -> tuple[int, list[str]]:
    code = main(["doctor", "--live", *flags])
    return code, [line for line in capsys.readouterr().out.splitlines() if "base url" in line]


def test_doctor_reaches_the_base_url_with_an_unpaid_request(capsys, data_dir):
    with ResponsesServer(key=KEY) as server:
        code, lines = doctor_lines(
            capsys, "--base-url", server.base_url, "--allow-insecure-base-url"
        )
        assert server.requests == [] and server.gets == ["/v1/models"]
    assert code == 0
    assert lines == [f"ok     base url: {server.base_url}: reached, 1 models; lists gpt-6-astra"]


def test_doctor_fails_a_refused_key_an_unreachable_url_and_plain_http(capsys, data_dir):
    with ResponsesServer(key="sk-someone-elses-0123456789") as server:
        refused = doctor_lines(capsys, "--base-url", server.base_url)
        assert server.gets == ["/v1/models"]
    in_clear = doctor_lines(capsys, "--base-url", "http://10.255.255.1/v1")  # never sent
    unreachable = doctor_lines(capsys, "--base-url", "http://127.0.0.1:9/v1")
    assert [code for code, _ in (refused, in_clear, unreachable)] == [2, 2, 2]
    [[refusal], [clear], [away]] = [lines for _, lines in (refused, in_clear, unreachable)]
    assert (
        refusal.startswith("FAILED base url: Responses API 401") and "Incorrect API key" in refusal
    )
    assert KEY not in refusal
    assert clear.startswith("FAILED base url:") and "not https" in clear
    assert away.startswith(
        "FAILED base url: Responses API: could not reach http://127.0.0.1:9/v1/models"
    )
