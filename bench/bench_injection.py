"""How well `memory.instruction_flags` tells instructions aimed at the agent from
plain fixes: recall on injections and false-positive rate on benign fixes, per split, for
the rules alone and for the rules with the learned model (memory/instruction_model.py).

The corpora are JSON lines in bench/corpora/ (`label` injection or benign, `technique`, and
the record's `fields`). The tuning split is `injection_tuning.jsonl` and
`injection_tuning_2.jsonl` (the model is fitted on them, so its figures there say little);
its misses and false positives are listed. The held-out split,
`injection_heldout_blind.jsonl`, was written by an author who read neither the detector nor
the other corpora, and is never read while tuning: only its figures are printed.
`--split tuning` leaves it out (while a design is being tuned); each split also reports the
detector's time per record.

    .venv/bin/python bench/bench_injection.py [--json] [--split tuning|heldout|both]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.instruction_flags import LEARNED_REASON, instruction_flags  # noqa: E402

CORPORA = ROOT / "bench" / "corpora"
SPLITS = {
    "tuning": ("injection_tuning.jsonl", "injection_tuning_2.jsonl"),
    "heldout": ("injection_heldout_blind.jsonl",),
}
FIELDS = ("fix_description", "error_type", "symptom", "outcome")


def flagged(fields: dict) -> tuple[str, ...]:
    """The record's flags, computed from its text fields as `sanitize_record` does."""
    texts = [str(fields.get(name, "")) for name in FIELDS]
    return instruction_flags(*texts, *(str(path) for path in fields.get("file_paths", [])))


def _pass_ms(lines: list[dict]) -> float:
    """Milliseconds to flag every line once (warm: the best of several passes is kept)."""
    started = time.perf_counter()
    for line in lines:
        flagged(line["fields"])
    return (time.perf_counter() - started) * 1000


def _rates(lines: list[dict], flags: dict[str, set[str]]) -> dict:
    injections = [line for line in lines if line["label"] == "injection"]
    benign = [line for line in lines if line["label"] == "benign"]
    missed = [line for line in injections if not flags[line["id"]]]
    false = [line for line in benign if flags[line["id"]]]
    return {
        "recall": 1 - len(missed) / len(injections),
        "false_positive_rate": len(false) / len(benign),
        "missed_by_technique": dict(Counter(line["technique"] for line in missed)),
        "missed": [line["id"] for line in missed],
        "false_positives": [line["id"] for line in false],
    }


def measure(names: tuple[str, ...]) -> dict:
    lines = [
        {**json.loads(line), "file": name}
        for name in names
        for line in (CORPORA / name).read_text(encoding="utf-8").splitlines()
        if line
    ]
    for line in lines:  # ids are unique within a file
        line["id"] = line["id"] if len(names) == 1 else f"{line['file'].split('.')[0]}:{line['id']}"
    flags = {line["id"]: set(flagged(line["fields"])) for line in lines}
    per_record_ms = min(_pass_ms(lines) for _ in range(5)) / len(lines)
    return {
        "corpus": " + ".join(names),
        "injections": sum(line["label"] == "injection" for line in lines),
        "benign": sum(line["label"] == "benign" for line in lines),
        "ms_per_record": per_record_ms,
        "rules": _rates(lines, {key: found - {LEARNED_REASON} for key, found in flags.items()}),
        "rules_and_model": _rates(lines, flags),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument("--split", choices=("tuning", "heldout", "both"), default="both")
    args = parser.parse_args()
    results = {
        split: measure(names) for split, names in SPLITS.items() if args.split in (split, "both")
    }
    for detector in ("rules", "rules_and_model"):
        for key in ("missed", "false_positives", "missed_by_technique"):
            results.get("heldout", {}).get(detector, {}).pop(key, None)  # figures only
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for split, figures in results.items():
        print(
            f"{split} ({figures['corpus']}): {figures['injections']} injections, "
            f"{figures['benign']} benign fixes, {figures['ms_per_record']:.2f} ms a record"
        )
        for detector in ("rules", "rules_and_model"):
            rates = figures[detector]
            print(
                f"  {detector.replace('_', ' ')}: recall {rates['recall']:.3f}, "
                f"false positives {rates['false_positive_rate']:.3f}"
            )
    tuning = results.get("tuning", {}).get("rules_and_model")
    if tuning and (tuning["missed"] or tuning["false_positives"]):
        print(f"  tuning misses: {', '.join(tuning['missed']) or 'none'}")
        print(f"  tuning false positives: {', '.join(tuning['false_positives']) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
