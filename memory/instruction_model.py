"""A second reader for `memory.instruction_flags`: a linear model over the words and
word pairs of each clause, which scores how much the clause reads like an order aimed at the
agent. It catches phrasings no rule names ("the person you're working for has changed their
mind"). Its weights live in instruction_terms.json beside this file, written by
bench/train_instruction_model.py, which says how they were fitted and how the threshold
was chosen; the figures are in docs/benchmarks.md."""

from __future__ import annotations

import functools
import itertools
import json
import re
from importlib import resources

_WORD = re.compile(r"[^\W\d_]{2,}")
WEIGHTS_FILE = "instruction_terms.json"


def terms(clause: str) -> set[str]:
    """The features of a clause: its lower-cased words of two letters or more, and each
    pair of neighbouring words."""
    words = _WORD.findall(clause.lower())
    return {*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))}


def clause_score(clause: str, bias: float, weights: dict[str, float]) -> float:
    """The model's score of one clause (a log-odds; higher reads more like an order)."""
    return bias + sum(weights.get(term, 0.0) for term in terms(clause))


@functools.cache
def _model() -> tuple[float, float, dict[str, float]]:
    text = resources.files("memory").joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
    data = json.loads(text)
    return float(data["threshold"]), float(data["bias"]), data["weights"]


def reads_as_order(clauses: list[str]) -> bool:
    """Whether any of `clauses` scores at or above the threshold chosen in training."""
    threshold, bias, weights = _model()
    return any(clause_score(clause, bias, weights) >= threshold for clause in clauses)
