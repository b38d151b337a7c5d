"""How well `memory.safety.instruction_flags` tells instructions aimed at the agent from
plain fixes: recall on injections and false-positive rate on benign fixes, per corpus.

The corpora are JSON lines in bench/corpora/ (`label` injection or benign, `technique`, and
the record's `fields`): `injection_tuning.jsonl` is the one the detector was tuned on, and
its misses and false positives are listed; `injection_heldout.jsonl` was written apart and
never read while tuning, so only its figures are printed. `--split tuning` leaves it out
(while a design is being tuned); each split also reports the detector's time per record.

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

from memory.safety import instruction_flags  # noqa: E402

CORPORA = ROOT / "bench" / "corpora"
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


def measure(path: Path) -> dict:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    injections = [line for line in lines if line["label"] == "injection"]
    benign = [line for line in lines if line["label"] == "benign"]
    flags = {line["id"]: flagged(line["fields"]) for line in lines}
    per_record_ms = min(_pass_ms(lines) for _ in range(5)) / len(lines)
    missed = [line for line in injections if not flags[line["id"]]]
    false = [line for line in benign if flags[line["id"]]]
    return {
        "corpus": path.name,
        "injections": len(injections),
        "benign": len(benign),
        "recall": 1 - len(missed) / len(injections),
        "false_positive_rate": len(false) / len(benign),
        "ms_per_record": per_record_ms,
        "missed_by_technique": dict(Counter(line["technique"] for line in missed)),
        "missed": [line["id"] for line in missed],
        "false_positives": [line["id"] for line in false],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument("--split", choices=("tuning", "heldout", "both"), default="both")
    args = parser.parse_args()
    results = {}
    if args.split in ("tuning", "both"):
        results["tuning"] = measure(CORPORA / "injection_tuning.jsonl")
    if args.split in ("heldout", "both"):
        heldout = measure(CORPORA / "injection_heldout.jsonl")
        for key in ("missed", "false_positives", "missed_by_technique"):
            heldout.pop(key)  # held out: figures only, never which lines
        results["heldout"] = heldout
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for figures in results.values():
        print(
            f"{figures['corpus']}: recall {figures['recall']:.3f} on {figures['injections']} "
            f"injections, false positives {figures['false_positive_rate']:.3f} on "
            f"{figures['benign']} benign fixes ({figures['ms_per_record']:.2f} ms a record)"
        )
    tuning = results.get("tuning")
    if tuning and (tuning["missed"] or tuning["false_positives"]):
        print(f"  tuning misses: {', '.join(tuning['missed']) or 'none'}")
        print(f"  tuning false positives: {', '.join(tuning['false_positives']) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
