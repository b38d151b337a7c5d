"""The gates as a table, and the cost guard's arithmetic against a real ledger file."""

from __future__ import annotations

import json
import math

import pytest

from agent.budget import (
    PRICES,
    BudgetExceededError,
    Charge,
    CostGuard,
    Ledger,
    LedgerUnreadableError,
    LongContext,
    Price,
    UnknownPriceError,
    estimate_tokens,
    price_for,
)
from agent.gates import edit_refusal, final_answer_refusal, store_refusal
from agent.turns import Usage, parse_turn, read_usage
from memory.embedding.embedder import EmbedderUnavailableError
from memory.embedding.model_files import resolve_model_path

OK = "python -m pytest -q passed with exit code 0 (4 passed)"


@pytest.mark.parametrize(
    ("delivered", "outcome", "latest", "refused_because"),
    [
        (False, OK, OK, "search_codebase_memory first"),
        (True, OK, None, "no passing test run"),
        (True, "tests passed", OK, "exact confirmed_outcome"),
        (True, OK, OK, None),
    ],
)
def test_store_gate(delivered, outcome, latest, refused_because):
    refusal = store_refusal(delivered, outcome, latest)
    assert (refusal is None) if refused_because is None else refused_because in refusal


@pytest.mark.parametrize(("delivered", "refused"), [(False, True), (True, False)])
def test_edit_and_final_answer_gates(delivered, refused):
    assert (edit_refusal(delivered) is not None) is refused
    assert (final_answer_refusal(delivered) is not None) is refused


FLAT = Price(10.0, 50.0)


def guard(tmp_path, *, session=None, total=None, price=FLAT) -> CostGuard:
    return CostGuard(
        price,
        Ledger(tmp_path / "ledger.jsonl"),
        session_id="s",
        model="m",
        session_limit_usd=session,
        total_limit_usd=total,
    )


PAYLOAD = {"input": "x" * 3000, "max_output_tokens": 1000}  # ~1001 tokens in, 1000 out


def test_worst_case_counts_context_and_the_largest_answer(tmp_path):
    cost_guard = guard(tmp_path)
    first = cost_guard.worst_case(PAYLOAD)
    assert first == pytest.approx((1009 * 10 + 1000 * 50) / 1e6, rel=0.01)
    cost_guard.charge_response(Usage(input_tokens=2000, output_tokens=500), first)
    chained = PAYLOAD | {"previous_response_id": "resp_1"}
    assert cost_guard.worst_case(chained) == pytest.approx(
        Price(10.0, 50.0).cost(estimate_tokens(chained) + 2500, 1000)
    )
    # unchained (no storage), the payload itself carries the conversation: counted once
    assert cost_guard.worst_case(PAYLOAD) == first


def test_preflight_refuses_what_could_cross_the_session_limit(tmp_path):
    cost_guard = guard(tmp_path, session=0.07)
    cost_guard.preflight(PAYLOAD)
    cost_guard.charge_response(Usage(input_tokens=1000, output_tokens=200), 0.06)  # $0.02
    with pytest.raises(BudgetExceededError, match="session has spent"):
        cost_guard.preflight(PAYLOAD)


def test_a_response_without_usage_is_charged_its_worst_case(tmp_path):
    cost_guard = guard(tmp_path, session=1.0)
    worst = cost_guard.preflight(PAYLOAD)
    assert cost_guard.charge_response(None, worst).basis == "missing_usage"
    assert cost_guard.session_cost_usd == worst
    assert Ledger(tmp_path / "ledger.jsonl").total() == pytest.approx(worst)


def test_the_total_limit_counts_earlier_sessions_in_the_ledger(tmp_path):
    Ledger(tmp_path / "ledger.jsonl").record("earlier", "m", Charge(0.95))
    with pytest.raises(BudgetExceededError, match="ASTRA_BUDGET_USD"):
        guard(tmp_path, total=1.0).preflight(PAYLOAD)
    assert guard(tmp_path, total=1.1).preflight(PAYLOAD) > 0


def test_ledger_survives_a_torn_line_and_sums_by_session(tmp_path):
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.record("a", "m", Charge(0.5, input_tokens=10, output_tokens=1))
    ledger.record("a", "m", Charge(0.25, input_tokens=10, output_tokens=1))
    with ledger.path.open("a") as out:
        out.write('{"session_id": "b", "cost')
    assert ledger.total() == pytest.approx(0.75)
    assert ledger.by_session()["a"]["requests"] == 2
    assert oct(ledger.path.stat().st_mode & 0o777) == "0o600"


BAD_LEDGER_LINES = (
    '{"session_id": "b", "cost_usd": -5}',
    '{"session_id": "c", "cost_usd": NaN}',
    '{"session_id": "d", "cost_usd": Infinity}',
    '{"session_id": "e", "cost_usd": "lots"}',
    '{"session_id": "f", "cost_usd": 1e999}',
    '{"session_id": "g", "cost_usd": 1, "input_tokens": -3}',
    '{"session_id": "h"}',
    "[0.5]",
    "{not json",
)


def test_a_ledger_line_it_cannot_count_is_refused_and_never_summed(tmp_path):
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.record("a", "m", Charge(0.5))
    with ledger.path.open("a") as out:
        out.write("".join(line + "\n" for line in BAD_LEDGER_LINES))
    ledger.record("a", "m", Charge(0.25))
    lines = ledger.read()
    assert [why.split(":")[0] for why in lines.refused] == [f"line {n}" for n in range(2, 11)]
    assert "line 2: cost_usd -5 is not a finite number" in lines.refused[0]
    assert ledger.total() == pytest.approx(0.75) and list(ledger.by_session()) == ["a"]


def test_the_total_limit_is_not_guessed_from_a_ledger_it_cannot_count(tmp_path):
    """A refused line may be money spent: it must not count as money left."""
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.path.write_text('{"session_id": "x", "cost_usd": -100}\n')
    with pytest.raises(LedgerUnreadableError, match=r"ledger\.jsonl holds 1 line\(s\).*line 1"):
        guard(tmp_path, total=1.0).preflight(PAYLOAD)
    assert guard(tmp_path, session=1.0).preflight(PAYLOAD) > 0  # no total limit to guess


def test_unknown_model_needs_given_prices():
    with pytest.raises(UnknownPriceError, match="ASTRA_PRICE_INPUT_PER_MILLION"):
        price_for("mystery")
    assert price_for("mystery", Price(1, 2)) == Price(1, 2)
    assert price_for("gpt-6-astra") == Price(10.0, 50.0, cached_input_per_million=1.0)


ASTRA = PRICES["gpt-6-astra"]


def usage(input_tokens, output_tokens, cached=0, reasoning=0):
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
    }


def test_cached_input_is_charged_at_its_own_rate(tmp_path):
    cost_guard = guard(tmp_path, price=ASTRA)
    counts = read_usage(usage(10_000, 500, cached=9_000, reasoning=300))
    charge = cost_guard.charge_response(counts, 1.0)
    assert charge.cost_usd == (1_000 * 10 + 9_000 * 1 + 500 * 50) / 1_000_000
    assert charge.basis == "usage" and charge.problem is None
    [line] = Ledger(tmp_path / "ledger.jsonl").charges()
    assert {key: line[key] for key in ("cached_input_tokens", "reasoning_tokens", "basis")} == {
        "cached_input_tokens": 9_000,
        "reasoning_tokens": 300,
        "basis": "usage",
    }


def test_unset_cached_rate_bills_cached_input_as_input():
    assert Price(10.0, 50.0).cost(1_000, 0, 900) == Price(10.0, 50.0).cost(1_000, 0)


def test_the_long_context_rule_scales_the_whole_request():
    price = Price(10.0, 50.0, 1.0, LongContext(1_000, 2.0, 1.5))
    assert price.cost(1_000, 100, 500) == (500 * 10 + 500 * 1 + 100 * 50) / 1e6
    assert price.cost(2_000, 100, 500) == pytest.approx(
        ((1_500 * 10 + 500 * 1) * 2.0 + 100 * 50 * 1.5) / 1e6
    )


def test_the_worst_case_bounds_any_usage_the_request_can_have(tmp_path):
    price = Price(10.0, 50.0, 1.0, LongContext(500, 2.0, 1.5))
    cost_guard = guard(tmp_path, price=price)
    worst = cost_guard.worst_case(PAYLOAD)
    for input_tokens in (1, 499, 501, 1_000):
        for cached in (0, input_tokens):
            assert price.cost(input_tokens, 1_000, cached) <= worst


@pytest.mark.parametrize(
    "bad",
    [
        usage(-5, 10),
        usage("12", 10),
        usage(100, math.inf),
        usage(100, math.nan),
        usage(100, True),
        usage(100, 10.5),
        usage(100, 10, cached=101),
        usage(100, 10, reasoning=11),
        usage(100, 10, cached=-1),
        {"input_tokens": 1, "output_tokens": 1, "input_tokens_details": "many"},
        "lots",
    ],
)
def test_malformed_usage_is_charged_the_worst_case_and_says_so(tmp_path, bad):
    cost_guard = guard(tmp_path, session=1.0)
    worst = cost_guard.preflight(PAYLOAD)
    turn = parse_turn({"id": "resp_1", "output": [], "usage": bad})
    assert turn.usage is None and turn.usage_problem
    charge = cost_guard.charge_response(turn.usage, worst, problem=turn.usage_problem)
    assert (charge.cost_usd, charge.basis) == (worst, "malformed_usage")
    assert charge.problem
    [line] = Ledger(tmp_path / "ledger.jsonl").charges()
    assert (line["cost_usd"], line["basis"]) == (worst, "malformed_usage")
    # the next worst case carries all of that request's worst tokens as context
    chained = PAYLOAD | {"previous_response_id": "resp_1"}
    held = estimate_tokens(PAYLOAD) + 1_000
    expected = Price(10.0, 50.0).cost(held + estimate_tokens(chained), 1_000)
    assert cost_guard.worst_case(chained) == expected


def test_an_unknown_outcome_is_charged_the_worst_case_and_marked(tmp_path):
    cost_guard = guard(tmp_path, session=1.0)
    worst = cost_guard.preflight(PAYLOAD)
    charge = cost_guard.charge_unknown(worst)
    assert (charge.cost_usd, charge.basis) == (worst, "unknown_outcome")
    assert cost_guard.session_cost_usd == worst
    ledger = Ledger(tmp_path / "ledger.jsonl")
    [line] = ledger.charges()
    assert line["basis"] == "unknown_outcome" and line["cost_usd"] == worst
    assert ledger.by_session()["s"]["unknown"] == 1


def test_old_ledger_lines_without_cached_or_reasoning_tokens_still_read(tmp_path):
    ledger = Ledger(tmp_path / "ledger.jsonl")
    old = {"at": "2025-01-01T00:00:00+00:00", "session_id": "old", "model": "m"}
    old |= {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.5}
    ledger.path.write_text(json.dumps(old) + "\n")
    ledger.record("old", "m", Charge(0.25, input_tokens=50, cached_input_tokens=40))
    assert ledger.total() == pytest.approx(0.75)
    row = ledger.by_session()["old"]
    assert (row["input_tokens"], row["cached_input_tokens"], row["unknown"]) == (150, 40, 0)


def test_a_missing_model_folder_is_one_clear_error(tmp_path):
    with pytest.raises(EmbedderUnavailableError, match="ASTRA_EMBEDDING_MODEL_PATH"):
        resolve_model_path(tmp_path / "nowhere")


@pytest.mark.parametrize(
    ("session", "total", "capped_by"),
    [
        (None, None, "capped by --max-turns x --max-output-tokens"),
        (0.5, None, "capped by --budget-usd"),
        (0.5, 0.2, "capped by ASTRA_BUDGET_USD"),
        (100.0, 100.0, "capped by --max-turns x --max-output-tokens"),
    ],
)
def test_the_quote_shows_the_worst_case_inputs_and_the_limit_that_caps_it(
    tmp_path, session, total, capped_by
):
    cost_guard = guard(tmp_path, session=session, total=total, price=ASTRA)
    quote = cost_guard.quote(PAYLOAD, 12, sized=False)
    sent = estimate_tokens(PAYLOAD)
    uncapped = sum(ASTRA.cost(sent + turn * 1_000, 1_000) for turn in range(12))
    assert (quote.context_tokens, quote.max_output_tokens, quote.max_turns) == (sent, 1_000, 12)
    assert quote.cached_input_per_million_usd == 1.0
    assert quote.uncapped_worst_case_usd == uncapped
    assert quote.capped_by == capped_by
    assert quote.session_worst_case_usd == min(uncapped, session or uncapped, total or uncapped)


def test_a_sized_output_cap_is_the_largest_the_tighter_limit_leaves(tmp_path):
    payload = {"input": "x" * 3000, "max_output_tokens": 25_000}
    cost_guard = guard(tmp_path, session=0.5, total=0.3)
    fits = cost_guard.output_that_fits(payload)
    sized = payload | {"max_output_tokens": fits}
    assert (
        cost_guard.worst_case(sized)
        <= 0.3
        < cost_guard.worst_case(sized | {"max_output_tokens": fits + 1})
    )
    assert cost_guard.preflight(sized) <= 0.3
    quote = cost_guard.quote(payload, 12, sized=True)
    assert (quote.max_output_tokens, quote.first_output_tokens, quote.output_sized) == (
        25_000,
        fits,
        True,
    )
    assert guard(tmp_path, session=None, total=None).output_that_fits(payload) == 25_000
    roomy = guard(tmp_path, session=100.0, total=None)
    assert roomy.output_that_fits(payload) == 25_000  # never raised above the cap


def test_what_is_left_after_spending_sizes_the_next_cap_and_a_crumb_stops(tmp_path):
    payload = {"input": "x" * 3000, "max_output_tokens": 25_000}
    cost_guard = guard(tmp_path, session=0.5, total=None)
    before = cost_guard.output_that_fits(payload)
    cost_guard.charge_response(Usage(input_tokens=1_000, output_tokens=4_000), 0.0)
    assert cost_guard.output_that_fits(payload) < before
    cost_guard.charge_response(Usage(input_tokens=1_000, output_tokens=5_000), 0.0)
    with pytest.raises(BudgetExceededError, match="fewer than the 2000 a turn needs"):
        cost_guard.output_that_fits(payload)
    with pytest.raises(BudgetExceededError):
        cost_guard.quote(payload, 12, sized=True)  # no quote for a session that cannot start
