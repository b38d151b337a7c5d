"""The gates as a table, and the cost guard's arithmetic against a real ledger file."""

from __future__ import annotations

import pytest

from agent.budget import BudgetExceededError, CostGuard, Ledger, Price, UnknownPriceError, price_for
from agent.gates import edit_refusal, final_answer_refusal, store_refusal
from agent.turns import Usage
from memory.embedder import EmbedderUnavailableError, resolve_model_path

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


def guard(tmp_path, *, session=None, total=None) -> CostGuard:
    return CostGuard(
        Price(10.0, 50.0),
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
    cost_guard.charge(Usage(input_tokens=2000, output_tokens=500), first)
    assert cost_guard.worst_case(PAYLOAD) == pytest.approx(first + 2500 * 10 / 1e6, rel=0.01)


def test_preflight_refuses_what_could_cross_the_session_limit(tmp_path):
    cost_guard = guard(tmp_path, session=0.07)
    cost_guard.preflight(PAYLOAD)
    cost_guard.charge(Usage(input_tokens=1000, output_tokens=200), 0.06)  # $0.02
    with pytest.raises(BudgetExceededError, match="session has spent"):
        cost_guard.preflight(PAYLOAD)


def test_a_response_without_usage_is_charged_its_worst_case(tmp_path):
    cost_guard = guard(tmp_path, session=1.0)
    worst = cost_guard.preflight(PAYLOAD)
    assert cost_guard.charge(None, worst) == worst
    assert cost_guard.session_cost_usd == worst
    assert Ledger(tmp_path / "ledger.jsonl").total() == pytest.approx(worst)


def test_the_total_limit_counts_earlier_sessions_in_the_ledger(tmp_path):
    Ledger(tmp_path / "ledger.jsonl").record("earlier", "m", 0, 0, 0.95)
    with pytest.raises(BudgetExceededError, match="ASTRA_BUDGET_USD"):
        guard(tmp_path, total=1.0).preflight(PAYLOAD)
    assert guard(tmp_path, total=1.1).preflight(PAYLOAD) > 0


def test_ledger_survives_a_torn_line_and_sums_by_session(tmp_path):
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.record("a", "m", 10, 1, 0.5)
    ledger.record("a", "m", 10, 1, 0.25)
    with ledger.path.open("a") as out:
        out.write('{"session_id": "b", "cost')
    assert ledger.total() == pytest.approx(0.75)
    assert ledger.by_session()["a"]["requests"] == 2
    assert oct(ledger.path.stat().st_mode & 0o777) == "0o600"


def test_unknown_model_needs_given_prices():
    with pytest.raises(UnknownPriceError, match="ASTRA_PRICE_INPUT_PER_MILLION"):
        price_for("mystery")
    assert price_for("mystery", Price(1, 2)) == Price(1, 2)
    assert price_for("gpt-6-astra") == Price(10.0, 50.0)


def test_a_missing_model_folder_is_one_clear_error(tmp_path):
    with pytest.raises(EmbedderUnavailableError, match="ASTRA_EMBEDDING_MODEL_PATH"):
        resolve_model_path(tmp_path / "nowhere")
