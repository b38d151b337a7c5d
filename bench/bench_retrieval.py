"""The memory's ranking beside its peers, per corpus and split, in one run.

Every corpus goes through the product's own path: `memory import` into a fresh SQLite store,
then `memory eval --json`, which ranks each query the memory's way, by plain BM25 (`bm25s`)
and by the vectors alone over the same records, and counts how often each label was right.

    .venv/bin/python bench/bench_retrieval.py                  # every corpus, both splits
    .venv/bin/python bench/bench_retrieval.py --split tuning   # what a design may look at

The real-failure corpus (`bench/corpora/realfix/part*.jsonl`) is split by project, by a hash
of the project's name, so nobody chooses which project is held out. The figures go to
`bench/results/retrieval.json` (git-ignored).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.cli.main import main  # noqa: E402

DATA = ROOT / "tests" / "memory" / "data"
REALFIX = ROOT / "bench" / "corpora" / "realfix"
RESULTS = ROOT / "bench" / "results" / "retrieval.json"
HELDOUT_SHARE = 0.4  # of the real-failure corpus's projects, by hash

# name: (split, records file, queries file, scope the queries search)
CORPORA = {
    "same codebase": ("tuning", "recurrence_fixes", "recurrence_queries", "default"),
    "cross-project": ("tuning", "fixes", "queries", "eval"),
    "real-world dev": ("tuning", "realworld_dev_fixes", "realworld_dev_queries", "realworld-dev"),
    "real-world dev 2": (
        "tuning",
        "realworld_dev2_fixes",
        "realworld_dev2_queries",
        "realworld-dev2",
    ),
    "same codebase, held out": (
        "held-out",
        "recurrence_heldout_fixes",
        "recurrence_heldout_queries",
        "default",
    ),
    "cross-project, held out": ("held-out", "heldout_fixes", "heldout_queries", "heldout"),
    "real-world held out": (
        "held-out",
        "realworld_heldout_fixes",
        "realworld_heldout_queries",
        "realworld-heldout",
    ),
    "real-world held out 2": (
        "held-out",
        "realworld_heldout2_fixes",
        "realworld_heldout2_queries",
        "realworld-heldout2",
    ),
    "real-world held out 3": (
        "held-out",
        "realworld_heldout3_fixes",
        "realworld_heldout3_queries",
        "realworld-heldout3",
    ),
}


def realfix_split(project: str) -> str:
    """`held-out` for about HELDOUT_SHARE of the projects, by their name's hash alone."""
    digest = int(hashlib.sha256(project.casefold().encode()).hexdigest()[:8], 16)
    return "held-out" if digest / 0xFFFFFFFF < HELDOUT_SHARE else "tuning"


def realfix_files(
    split: str, folder: Path, *, per_project: bool = False
) -> tuple[Path, Path, dict[str, int]] | None:
    """The real-failure corpus's `split` as `memory import` and `memory eval` files in
    `folder`: every entry a record (pairs and distractors), every pair's query a query. All
    in one scope, or (`per_project`) each project's in its own, as a session searches its
    repository's scope."""
    entries = [
        json.loads(line)
        for part in sorted(REALFIX.glob("part*.jsonl"))
        for line in part.read_text().splitlines()
        if line.strip()
    ]
    chosen = [e for e in entries if realfix_split(e["project"]) == split]
    if not chosen:
        return None
    name = f"realfix-{split}{'-per-project' if per_project else ''}"
    records, queries = folder / f"{name}-fixes.jsonl", folder / f"{name}.jsonl"
    with records.open("w") as fixes, queries.open("w") as asked:
        for entry in chosen:
            scope = f"realfix-{split}-{entry['project']}" if per_project else f"realfix-{split}"
            memory_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"realfix:{entry['id']}"))
            record = {
                "memory_id": memory_id,
                "scope": scope,
                **{key: entry[key] for key in ("fix_description", "error_type", "file_paths")},
            }
            if entry.get("symptom"):
                record["symptom"] = entry["symptom"]
            fixes.write(json.dumps(record) + "\n")
            if entry["kind"] == "pair":
                query = {"query": entry["query"], "expect": memory_id, "group": entry["project"]}
                if per_project:
                    query["scope"] = scope
                asked.write(json.dumps(query) + "\n")
    projects = {e["project"] for e in chosen}
    counts = {
        "projects": len(projects),
        "pairs": sum(e["kind"] == "pair" for e in chosen),
        "distractors": sum(e["kind"] == "distractor" for e in chosen),
    }
    return records, queries, counts


def evaluate(records: Path, queries: Path, scope: str, folder: Path) -> dict:
    """`memory import` then `memory eval --json` in a fresh data folder; the report."""
    os.environ["ASTRA_DATA_DIR"] = str(folder)
    os.environ.pop("ASTRA_MEMORY_URL", None)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        if main(["memory", "import", str(records)]) != 0:
            raise SystemExit(f"memory import {records} failed")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["memory", "eval", str(queries), "--scope", scope, "--json"])
    if code != 0:
        raise SystemExit(f"memory eval {queries} failed ({code})")
    return json.loads(out.getvalue())


def figures(report: dict) -> str:
    return f"{report['recall_at_1']:.3f} / {report['recall_at_3']:.3f} / {report['mrr']:.3f}"


def run(splits: list[str]) -> dict:
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        jobs = [
            (name, split, DATA / f"{records}.jsonl", DATA / f"{queries}.jsonl", scope, None)
            for name, (split, records, queries, scope) in CORPORA.items()
            if split in splits
        ]
        for split in splits:
            for per_project in (False, True):
                made = realfix_files(split, Path(scratch), per_project=per_project)
                if made:
                    records, queries, counts = made
                    name = f"real failures, {split}{', per project' if per_project else ''}"
                    jobs.append((name, split, records, queries, f"realfix-{split}", counts))
        for number, (name, split, records, queries, scope, counts) in enumerate(jobs):
            folder = Path(scratch) / str(number)
            folder.mkdir()
            report = evaluate(records, queries, scope, folder)
            results[name] = {"split": split, "counts": counts, **report}
            print(
                f"{name:38} {split:9} q={report['queries']:3}  memory {figures(report)}  "
                f"bm25 {figures(report['bm25'])}  vector {figures(report['vector'])}",
                flush=True,
            )
            calibration = "  ".join(
                f"{label} {c['right']}/{c['matches']}" for label, c in report["calibration"].items()
            )
            print(f"{'':48} labels of the top 3, right/all: {calibration}", flush=True)
    return results


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["tuning", "held-out"], action="append")
    args = parser.parse_args()
    results = run(args.split or ["tuning", "held-out"])
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main_cli()
