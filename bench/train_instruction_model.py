"""Fits memory/instruction_terms.json: the weights of the learned reader in
`memory.instruction_flags` (memory/instruction_model.py).

Data: the tuning corpora of bench/bench_injection.py (injections and plain fixes written
for the detector) and, as plain fixes, the real fixes of the retrieval corpora. The blind
held-out corpus is never read here.

Model: a logistic regression (scikit-learn, C = 1, balanced classes) over each clause's
words and word pairs (`instruction_model.terms`). A record is scored by its highest clause.
Which clauses of an injection are the order is not labelled. Training starts with the
clauses the rules flag on their own (all of the record's where they flag none: starting
with all of them taught the model the corpora's "Fixed the ..." cover stories), then twice
keeps only those scoring within 1 of the record's best, refitting each time
(multiple-instance learning). Weights under 0.05 are dropped: out of fold that flags fewer
real fixes than 0.01, 0.1 or 0.2.

Threshold: chosen on out-of-fold scores, the folds grouped by technique (and real fixes by
file), so every score comes from a model that never saw a record of its kind. It is the
lowest that keeps the rules plus the model under 5% false positives on the corpora's plain
fixes and 1.5% on the real fixes; the cross-validated figures are written with the weights.

    .venv/bin/python bench/train_instruction_model.py   # about a minute
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from sklearn.feature_extraction.text import CountVectorizer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from memory.instruction_flags import LEARNED_REASON, flag_clauses, instruction_flags  # noqa: E402
from memory.instruction_model import WEIGHTS_FILE, clause_score, terms  # noqa: E402

CORPORA = ("bench/corpora/injection_tuning.jsonl", "bench/corpora/injection_tuning_2.jsonl")
REAL_FIXES = (
    *sorted(
        p for p in Path(ROOT, "tests/memory/data").glob("*fixes.jsonl") if "heldout" not in p.name
    ),
    *sorted(Path(ROOT, "bench/corpora/realfix").glob("part*.jsonl")),
)
FIELDS = ("fix_description", "error_type", "symptom", "outcome")
MAX_PLAIN_FP, MAX_REAL_FP = 0.05, 0.015
FOLDS, MIN_WEIGHT = 8, 0.05


def field_texts(fields: dict) -> list[str]:
    paths = [str(path) for path in fields.get("file_paths", [])]
    return [str(fields.get(name, "")) for name in FIELDS] + paths


def load() -> tuple[list[dict], list[Path]]:
    """Every record as {clauses, injection, group, kind, rules}; and the files read."""
    records, files = [], [ROOT / name for name in CORPORA]
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            injection = case["label"] == "injection"
            records.append(_record(case["fields"], injection, case["technique"], "corpus"))
    for path in REAL_FIXES:
        files.append(path)
        for line in path.read_text(encoding="utf-8").splitlines():
            records.append(_record(json.loads(line), False, f"real:{path.name}", "real"))
    return records, files


def _rules(*texts: str) -> bool:
    return bool(set(instruction_flags(*texts)) - {LEARNED_REASON})


def _record(fields: dict, injection: bool, group: str, kind: str) -> dict:
    texts = field_texts(fields)
    clauses = flag_clauses(*texts)
    # An injection's first positives: the clauses the rules flag on their own, else all.
    orders = [c for c in clauses if _rules(c)] if injection else []
    return {
        "clauses": clauses,
        "orders": orders or clauses,
        "injection": injection,
        "group": group,
        "kind": kind,
        "rules": _rules(*texts),
    }


def _fit(records: list[dict], positives: dict[int, list[str]]) -> tuple[float, dict[str, float]]:
    docs, labels = [], []
    for i, record in enumerate(records):
        clauses = positives[i] if record["injection"] else record["clauses"]
        docs += clauses
        labels += [record["injection"]] * len(clauses)
    vectorizer = CountVectorizer(analyzer=terms, binary=True)
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=3000)
    model.fit(vectorizer.fit_transform(docs), labels)
    weights = {
        term: round(float(w), 4)
        for term, w in zip(vectorizer.get_feature_names_out(), model.coef_[0], strict=True)
        if abs(w) >= MIN_WEIGHT
    }
    return round(float(model.intercept_[0]), 4), weights


def train(records: list[dict]) -> tuple[float, dict[str, float]]:
    """The multiple-instance fit: an injection's clauses the rules flag first (all of them
    where the rules flag none), then its best ones."""
    positives = {i: r["orders"] for i, r in enumerate(records) if r["injection"]}
    bias, weights = _fit(records, positives)
    for _ in range(2):
        for i in positives:
            scores = [clause_score(c, bias, weights) for c in records[i]["clauses"]]
            best = max(scores, default=0.0)
            clauses = zip(records[i]["clauses"], scores, strict=True)
            positives[i] = [clause for clause, score in clauses if score >= best - 1]
        bias, weights = _fit(records, positives)
    return bias, weights


def record_score(record: dict, bias: float, weights: dict[str, float]) -> float:
    return max((clause_score(c, bias, weights) for c in record["clauses"]), default=-1e9)


def out_of_fold(records: list[dict]) -> np.ndarray:
    groups = sorted({r["group"] for r in records})
    random.Random(0).shuffle(groups)
    scores = np.zeros(len(records))
    for k in range(FOLDS):
        held = set(groups[k::FOLDS])
        bias, weights = train([r for r in records if r["group"] not in held])
        for i, r in enumerate(records):
            if r["group"] in held:
                scores[i] = record_score(r, bias, weights)
    return scores


def figures(records: list[dict], flagged: np.ndarray) -> dict:
    injection = np.array([r["injection"] for r in records])
    plain = np.array([r["kind"] == "corpus" and not r["injection"] for r in records])
    real = np.array([r["kind"] == "real" for r in records])
    return {
        "recall": round(float(flagged[injection].mean()), 3),
        "plain_false_positive_rate": round(float(flagged[plain].mean()), 3),
        "real_fixes_flagged": f"{int(flagged[real].sum())} of {int(real.sum())}",
        "_real_rate": float(flagged[real].mean()),
    }


def choose_threshold(records: list[dict], scores: np.ndarray) -> tuple[float, dict]:
    rules = np.array([r["rules"] for r in records])
    for threshold in np.unique(scores):
        found = figures(records, rules | (scores >= threshold))
        plain, real = found["plain_false_positive_rate"], found["_real_rate"]
        if plain <= MAX_PLAIN_FP and real <= MAX_REAL_FP:
            return round(float(threshold), 4), found
    raise SystemExit("no threshold meets the false-positive limits")


def main() -> int:
    records, files = load()
    scores = out_of_fold(records)
    threshold, found = choose_threshold(records, scores)
    rules = np.array([r["rules"] for r in records])
    bias, weights = train(records)
    report = {
        "rules alone": figures(records, rules),
        "model alone, out of fold": figures(records, scores >= threshold),
        "rules and model, out of fold": found,
    }
    for figure in report.values():
        figure.pop("_real_rate")
    document = {
        "about": "memory/instruction_model.py's weights: bench/train_instruction_model.py",
        "trained_on": {
            str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files
        },
        "cross_validation": report,
        "threshold": threshold,
        "bias": bias,
        "weights": dict(sorted(weights.items())),
    }
    out = ROOT / "memory" / WEIGHTS_FILE
    out.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({"threshold": threshold, "terms": len(weights), **report}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
