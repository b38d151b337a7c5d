"""`astra-memory memory ...` and `smoke` as a user runs them: output, exit codes, no damage."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.main import main

MINIMAL = {
    "fix_description": "Retry the upload once when the connection resets mid-stream.",
    "error_type": "ConnectionResetError",
    "file_paths": ["uploader/client.py"],
    "symptom": "E   ConnectionResetError: [Errno 104] Connection reset by peer",
}


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ASTRA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("ASTRA_MEMORY_URL", raising=False)
    return tmp_path / "data"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def record_count(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "memory.sqlite3") as conn:
        return conn.execute("SELECT count(*) FROM memories").fetchone()[0]


def write_jsonl(path: Path, *rows: object) -> Path:
    path.write_text(
        "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows)
    )
    return path


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("astra-memory: error: ")
    return lines[0]


# "": an empty flag was taken as no flag, and the default store listed
@pytest.mark.parametrize("url", ["postgres://db/memory", "sqlite://", "memory.sqlite3", ""])
def test_a_malformed_memory_url_is_one_line_and_exit_2(capsys, data_dir, url):
    code, out, err = run(capsys, "memory", "list", "--memory", url)
    assert code == 2 and out == ""
    assert "memory URL" in one_error_line(err)


def test_a_file_that_is_not_a_memory_database_is_left_untouched(capsys, tmp_path, data_dir):
    path = tmp_path / "notes.db"
    path.write_bytes(b"not sqlite at all\n" * 100)
    code, _, err = run(capsys, "memory", "stats", "--memory", f"sqlite:///{path}")
    assert code == 2
    assert "not a memory database" in one_error_line(err)
    assert path.read_bytes() == b"not sqlite at all\n" * 100


def test_bad_environment_value_is_one_line(capsys, data_dir, monkeypatch):
    monkeypatch.setenv("ASTRA_BUDGET_USD", "lots")
    code, _, err = run(capsys, "memory", "list")
    assert code == 2
    assert "ASTRA_BUDGET_USD" in one_error_line(err)


def test_a_list_cut_by_its_limit_says_how_many_it_left_out(capsys, tmp_path, data_dir):
    rows = [{**MINIMAL, "fix_description": f"Retry the upload {n} times."} for n in range(3)]
    assert run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", *rows)))[0] == 0
    code, out, _ = run(capsys, "memory", "list", "--limit", "2")
    assert code == 0
    assert out.strip().splitlines()[-1] == "2 of 3 records, newest first: --limit 0 lists all"
    assert "of 3 records" not in run(capsys, "memory", "list", "--limit", "3")[1]
    assert len(json.loads(run(capsys, "memory", "list", "--limit", "2", "--json")[1])) == 2


def test_import_with_a_bad_line_writes_nothing(capsys, tmp_path, data_dir):
    source = write_jsonl(
        tmp_path / "in.jsonl", MINIMAL, {**MINIMAL, "fix_description": "b"}, "{oops"
    )
    code, _, err = run(capsys, "memory", "import", str(source))
    assert code == 1
    assert "line 3" in one_error_line(err)
    assert record_count(data_dir) == 0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[" * 100_000, "line 3: not valid JSON (nested too deep to read)"),
        (json.dumps(MINIMAL)[:-1] + ', "x": ' + "9" * 5000 + "}", "line 3: not valid JSON (a"),
        (json.dumps({**MINIMAL, "symptom": "x\ud800"}), "line 3: not valid text (an escape"),
    ],
    ids=["nested-100000-deep", "5000-digit-int", "lone-surrogate"],
)
def test_import_of_a_line_json_cannot_hold_is_one_line_and_writes_nothing(
    capsys, tmp_path, data_dir, line, message
):
    """Python's JSON reader raised RecursionError and ValueError here, and the embedder a
    TypeError at half a character: tracebacks."""
    source = write_jsonl(tmp_path / "in.jsonl", MINIMAL, {**MINIMAL, "fix_description": "b"})
    source.write_text(source.read_text() + line + "\n" + json.dumps(MINIMAL) + "\n")
    code, _, err = run(capsys, "memory", "import", str(source))
    assert code == 1 and message in one_error_line(err)
    assert record_count(data_dir) == 0


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({**MINIMAL, "file_paths": "uploader/client.py"}, "list of paths"),
        ({**MINIMAL, "colour": "blue"}, "unknown field"),
        ({"fix_description": "x", "error_type": "E"}, "missing field"),
        ({**MINIMAL, "memory_id": "not-a-uuid"}, "not a UUID"),
        ([1, 2], "JSON object"),
        ({**MINIMAL, "symptom": []}, "symptom must be a string"),  # it was stored as none
        ({**MINIMAL, "symptom": 0}, "symptom must be a string"),
    ],
)
def test_import_names_the_problem(capsys, tmp_path, data_dir, row, message):
    code, _, err = run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", row)))
    assert code == 1
    assert message in one_error_line(err)
    assert record_count(data_dir) == 0


def test_import_from_stdin_tells_a_bad_byte_as_from_a_file(capsys, data_dir, monkeypatch):
    data = json.dumps(MINIMAL).encode() + b"\n\xff\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    code, _, err = run(capsys, "memory", "import", "-")
    assert code == 2 and one_error_line(err).endswith(
        f"cannot read -: byte {len(data) - 2} is not UTF-8 text"
    )
    assert record_count(data_dir) == 0


def test_import_reads_a_file_that_starts_with_a_byte_order_mark(capsys, tmp_path, data_dir):
    """PowerShell and Windows editors save UTF-8 with a BOM: line 1 was "not valid JSON"."""
    source = write_jsonl(tmp_path / "in.jsonl", MINIMAL, {**MINIMAL, "fix_description": "b"})
    source.write_text("\ufeff" + source.read_text(), encoding="utf-8")
    code, _, err = run(capsys, "memory", "import", str(source))
    assert code == 0, err
    assert record_count(data_dir) == 2


def test_unknown_id_is_one_line_and_changes_nothing(capsys, tmp_path, data_dir):
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", MINIMAL)))
    for action in ("show", "delete"):
        code, _, err = run(capsys, "memory", action, "0000dead")
        assert code == 1
        assert "no memory record" in one_error_line(err)
    assert record_count(data_dir) == 1


def test_minimal_records_are_marked_imported_wherever_shown(capsys, tmp_path, data_dir):
    code, out, err = run(
        capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", MINIMAL))
    )
    assert code == 0 and "1 marked imported, not test-confirmed" in out
    assert err == ""  # piped, no progress bar, nor the blank line it left
    [listed] = json.loads(run(capsys, "memory", "list", "--json")[1])
    assert listed["provenance"] == "imported"
    assert "IMPORTED" in run(capsys, "memory", "list")[1]
    shown = run(capsys, "memory", "show", listed["memory_id"][:8])[1]
    assert "IMPORTED, not tested" in shown and "Connection reset by peer" in shown
    found = run(capsys, "memory", "search", "ConnectionResetError: [Errno 104]")[1]
    assert "IMPORTED" in found and listed["memory_id"][:8] in found


def test_export_then_import_elsewhere_keeps_ids_and_fields(capsys, tmp_path, data_dir):
    rows = [
        {**MINIMAL, "fix_description": f"fix number {n}", "scope": f"s{n % 2}"} for n in range(5)
    ]
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", *rows)))
    exported = tmp_path / "export.jsonl"
    assert run(capsys, "memory", "export", "--out", str(exported))[0] == 0
    other = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    assert run(capsys, "memory", "import", str(exported), "--memory", other)[0] == 0
    before = json.loads(run(capsys, "memory", "list", "--json")[1])
    after = json.loads(run(capsys, "memory", "list", "--json", "--memory", other)[1])
    assert len(before) == 5
    assert sorted(r["memory_id"] for r in before) == sorted(r["memory_id"] for r in after)

    def comparable(rows):
        return sorted(json.dumps({**row, "audit": None}, sort_keys=True) for row in rows)

    assert comparable(before) == comparable(after)


@pytest.mark.parametrize("target", ["memory.sqlite3", "memory.sqlite3-wal", "link.jsonl"])
def test_export_never_writes_over_the_database(capsys, tmp_path, data_dir, target):
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", MINIMAL)))
    (data_dir / "link.jsonl").symlink_to(data_dir / "memory.sqlite3")
    size = (data_dir / "memory.sqlite3").stat().st_size

    code, _, err = run(capsys, "memory", "export", "--out", str(data_dir / target))

    assert code == 1 and "refusing to export over" in one_error_line(err)
    assert (data_dir / "memory.sqlite3").stat().st_size == size
    assert record_count(data_dir) == 1


def test_a_record_with_line_separators_exports_and_imports_back(capsys, tmp_path, data_dir):
    row = {**MINIMAL, "fix_description": "Split on \\n only:\u2028 and \u0085 are text."}
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", row)))
    exported = tmp_path / "export.jsonl"
    assert run(capsys, "memory", "export", "--out", str(exported))[0] == 0
    other = f"sqlite:///{tmp_path / 'other.sqlite3'}"

    assert run(capsys, "memory", "import", str(exported), "--memory", other)[0] == 0

    after = json.loads(run(capsys, "memory", "list", "--json", "--memory", other)[1])
    assert after[0]["fix_description"] == row["fix_description"]


def test_an_import_conflict_is_reported_and_the_record_kept(capsys, tmp_path, data_dir):
    confirmed = {
        "memory_id": "0d5e4bb0-3d9e-5a8e-9c55-7a1b2c3d4e5f",
        "scope": "default",
        **MINIMAL,
        "outcome": "pytest passed with exit code 0 (1 passed)",
        "session_id": "s1",
        "timestamp": "2025-01-02T00:00:00+00:00",
        "evidence": {"command": "pytest", "exit_code": 0, "passed": 1, "failed": 0},
    }
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "a.jsonl", confirmed)))
    weaker = {**MINIMAL, "memory_id": confirmed["memory_id"], "fix_description": "other"}

    code, out, err = run(capsys, "memory", "import", str(write_jsonl(tmp_path / "b.jsonl", weaker)))

    assert code == 0 and "imported 0 record(s)" in out
    assert err.startswith(f"conflict: {confirmed['memory_id']} is test-confirmed"), err
    assert len(err.splitlines()) == 1  # no blank line left by the progress bar
    kept = json.loads(run(capsys, "memory", "show", confirmed["memory_id"], "--json")[1])
    assert kept["provenance"] == "test-confirmed" and kept["evidence"]["passed"] == 1


def test_export_to_stdout_is_jsonl(capsys, tmp_path, data_dir):
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", MINIMAL)))
    code, out, err = run(capsys, "memory", "export")
    assert code == 0 and "exported 1 record" in err
    assert json.loads(out.strip())["fix_description"] == MINIMAL["fix_description"]


def test_delete_removes_the_record(capsys, tmp_path, data_dir):
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", MINIMAL)))
    [listed] = json.loads(run(capsys, "memory", "list", "--json")[1])
    assert run(capsys, "memory", "delete", listed["memory_id"], "--yes")[0] == 0
    assert record_count(data_dir) == 0
    assert json.loads(run(capsys, "memory", "stats", "--json")[1])["records"] == 0


def test_eval_json_has_the_contract_keys(capsys, tmp_path, data_dir):
    rows = [MINIMAL, {**MINIMAL, "fix_description": "Pin the TLS version of the upload client."}]
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", *rows)))
    listed = json.loads(run(capsys, "memory", "list", "--json")[1])
    queries = write_jsonl(
        tmp_path / "q.jsonl",
        *(
            {"query": "ConnectionResetError: [Errno 104] Connection reset by peer", "expect": i}
            for i in (listed[0]["memory_id"], listed[1]["memory_id"][:8])
        ),
    )
    code, out, _ = run(capsys, "memory", "eval", str(queries), "--json")
    report = json.loads(out)
    assert code == 0
    assert set(report) == {
        *("recall_at_1", "recall_at_3", "mrr", "queries", "misses"),
        *("calibration", "bm25", "vector"),
    }
    assert (report["recall_at_1"], report["queries"], len(report["misses"])) == (0.5, 2, 1)
    # two queries, the same text, each expecting another record: one of each is right
    for peer in ("bm25", "vector"):
        assert (report[peer]["recall_at_1"], report[peer]["recall_at_3"]) == (0.5, 1.0)
    labelled = report["calibration"]
    assert sum(figures["matches"] for figures in labelled.values()) == 4  # 2 queries x 2 records
    assert sum(figures["right"] for figures in labelled.values()) == 2


def test_eval_prints_plain_bm25_beside_the_memory_and_each_label_s_precision(
    capsys, tmp_path, data_dir
):
    rows = [
        MINIMAL,
        {**MINIMAL, "fix_description": "Pin the TLS version of the upload client (pyupload)."},
        {**MINIMAL, "fix_description": "Decode the CSV export as UTF-8 with a BOM."},
    ]
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", *rows)))
    tls = next(
        r["memory_id"]
        for r in json.loads(run(capsys, "memory", "list", "--json")[1])
        if "pyupload" in r["fix_description"]
    )
    queries = write_jsonl(tmp_path / "q.jsonl", {"query": "pyupload TLS handshake", "expect": tls})
    code, out, _ = run(capsys, "memory", "eval", str(queries))
    assert code == 0
    assert "plain BM25 (bm25s): queries 1 · recall@1 1.000" in out
    assert "vectors alone: queries 1" in out
    assert "labels of the top 3, how often right:" in out
    assert re.search(r"strong: (1\.00 \(1 of 1\)|- \(0 of 0\))", out)


def test_eval_with_a_bad_line_names_the_field(capsys, tmp_path, data_dir):
    code, _, err = run(
        capsys, "memory", "eval", str(write_jsonl(tmp_path / "q.jsonl", {"query": "x"}))
    )
    assert code == 1 and "line 1: expect: Field required" in one_error_line(err)


def test_eval_says_a_line_is_not_json_in_imports_words(capsys, tmp_path, data_dir):
    for command in ("eval", "import"):
        code, _, err = run(capsys, "memory", command, str(write_jsonl(tmp_path / "q.jsonl", "x")))
        assert code == 1 and "line 1: not valid JSON (Expecting value)" in one_error_line(err)
        code, _, err = run(capsys, "memory", command, str(write_jsonl(tmp_path / "q.jsonl", [1])))
        assert code == 1 and "line 1: expected a JSON object" in one_error_line(err)
        half = {"query": "x\ud800", "expect": "0badc0de"} if command == "eval" else {}
        source = write_jsonl(tmp_path / "q.jsonl", half or {**MINIMAL, "symptom": "x\udc00"})
        code, _, err = run(capsys, "memory", command, str(source))
        assert code == 1 and "line 1: not valid text" in one_error_line(err)


def test_eval_refuses_an_expect_it_could_never_find(capsys, tmp_path, data_dir):
    """An unknown id is exit 1 and an ambiguous prefix exit 2, as for every id; a record in
    another scope than the one searched is exit 1, naming its scope."""
    prefix = two_records_sharing_a_prefix(capsys, tmp_path)
    run(
        capsys,
        "memory",
        "import",
        str(write_jsonl(tmp_path / "o.jsonl", MINIMAL)),
        "--scope",
        "other",
    )
    [elsewhere] = json.loads(run(capsys, "memory", "list", "--scope", "other", "--json")[1])
    query = "ConnectionResetError: [Errno 104] Connection reset by peer"
    for expect, code, words in (
        ("ffff", 1, "query 2: expect 'ffff' is no memory record"),
        (prefix, 2, f"query 2: expect {prefix!r} matches"),
        ("", 2, "query 2: expect is empty"),
        (" ", 2, "query 2: expect is empty"),
        (elsewhere["memory_id"][:8], 1, "is in scope 'other'"),
    ):
        rows = [{"query": query, "expect": elsewhere["memory_id"], "scope": "other"}]
        rows.append({"query": query, "expect": expect})
        argv = ("memory", "eval", str(write_jsonl(tmp_path / "q.jsonl", *rows)))
        got, out, err = run(capsys, *argv)
        assert (got, out) == (code, ""), err
        assert words in one_error_line(err)
    assert "pass --scope other" in err


def test_top_k_out_of_range_is_a_usage_error(capsys, data_dir):
    with pytest.raises(SystemExit) as exited:
        main(["memory", "search", "x", "--top-k", "11"])
    line = one_error_line(capsys.readouterr().err)
    assert exited.value.code == 2 and "argument --top-k: must be from 1 to 10, got 11" in line
    assert line.endswith("(see astra-memory memory search --help)")  # as every usage error


def test_smoke_store_then_verify_in_another_process(capsys, tmp_path, data_dir, real_embedder):
    """Stored here, verified by a fresh process (the model loaded once in each), then gone."""
    code, out, err = run(capsys, "smoke", "store")
    assert code == 0, err
    memory_id = out.strip()
    assert "found it at rank 1" in err
    # whole, not wrapped at Rich's 80 columns mid-command: copied from a log, it must run
    assert f"Next: astra-memory smoke verify --memory-id {memory_id}\n" in err
    verified = subprocess.run(
        [sys.executable, "-m", "app.cli.main", "smoke", "verify", "--memory-id", memory_id],
        capture_output=True,
        text=True,
        env=dict(os.environ),  # data_dir set ASTRA_DATA_DIR
        timeout=300,
    )
    assert verified.returncode == 0, verified.stderr
    assert f"verified {memory_id}: persisted, searchable, now deleted\n" in verified.stdout
    code, _, err = run(capsys, "smoke", "verify", "--memory-id", memory_id)
    assert code == 1 and "no smoke record" in err


def test_an_unwritable_export_path_is_one_line_naming_it(capsys, tmp_path, data_dir):
    """Not the temporary file beside it: '/no/such/.x.jsonl.anunm0sj.tmp'."""
    (tmp_path / "folder").mkdir()
    for out, words in (
        (tmp_path / "no" / "such" / "x.jsonl", "No such file or directory"),
        (tmp_path / "folder", "Is a directory"),
    ):
        code, _, err = run(capsys, "memory", "export", "--out", str(out))
        assert code == 2 and one_error_line(err).endswith(f"cannot write {out}: {words}"), err
    assert list((tmp_path / "folder").iterdir()) == []


def test_a_data_dir_that_is_a_file_is_one_line(capsys, tmp_path, monkeypatch):
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("ASTRA_DATA_DIR", str(blocker))
    monkeypatch.delenv("ASTRA_MEMORY_URL", raising=False)
    code, _, err = run(capsys, "memory", "stats")
    assert code == 2 and "cannot create" in one_error_line(err)


def test_search_looks_in_one_scope_or_every_scope_and_explains_each_match(
    capsys, tmp_path, data_dir
):
    run(
        capsys,
        "memory",
        "import",
        str(write_jsonl(tmp_path / "in.jsonl", MINIMAL)),
        "--scope",
        "demo-1",
    )
    query = "ConnectionResetError: [Errno 104] in uploader/client.py"
    assert "No matches in scope 'default'" in run(capsys, "memory", "search", query)[1]
    assert "Retry the upload" in run(capsys, "memory", "search", query, "--scope", "demo-1")[1]
    code, out, _ = run(capsys, "memory", "search", query, "--all-scopes", "--explain")
    assert code == 0 and "scope demo-1" in out and "Retry the upload" in out
    assert "why: cosine 0." in out and "vector rank #1" in out
    assert "shared paths: uploader/client.py" in out
    assert "shared terms: connectionreseterror" in out
    reading = "read as: message · keyword weight 5 · path weight 1 · exception: ConnectionReset"
    assert reading in out
    code, out, _ = run(capsys, "memory", "search", query, "--scope", "demo-1", "--json")
    [match] = json.loads(out)
    assert code == 0 and match["rank"] == 1 and match["vector_rank"] == 1
    assert match["label"] in ("strong", "possible") and match["possibly_stale"] is False
    assert match["fix_description"].startswith("Retry the upload")
    assert "why" not in match and "reading" not in match
    argv = ("memory", "search", query, "--scope", "demo-1", "--json", "--explain")
    [explained] = json.loads(run(capsys, *argv)[1])
    assert explained == {**match, "why": explained["why"], "reading": explained["reading"]}
    assert explained["why"].startswith("why: cosine 0.") and "vector rank #1" in explained["why"]
    assert explained["reading"].startswith("read as: message · keyword weight 5")
    with pytest.raises(SystemExit) as stopped:
        main(["memory", "search", query, "--scope", "a", "--all-scopes"])
    assert stopped.value.code == 2
    assert "not allowed with" in one_error_line(capsys.readouterr().err)


def piped(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_a_query_piped_in_is_searched_as_the_same_query_given_whole(
    capsys, monkeypatch, tmp_path, data_dir
):
    """`pytest 2>&1 | astra-memory memory search -`: '-' was searched as the text '-'."""
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", MINIMAL)))
    query = "tests/test_client.py:8: in test_upload\nE   ConnectionResetError: [Errno 104]\n"
    given = run(capsys, "memory", "search", query, "--json", "--explain")
    piped(monkeypatch, query.encode())
    from_stdin = run(capsys, "memory", "search", "-", "--json", "--explain")
    assert given[0] == from_stdin[0] == 0
    assert json.loads(from_stdin[1]) == json.loads(given[1])
    assert json.loads(given[1])[0]["fix_description"].startswith("Retry the upload")
    for data, words in ((b" \n\t", "is empty"), (b"E   KeyError \xff", "byte 13 is not UTF-8")):
        piped(monkeypatch, data)
        code, _, err = run(capsys, "memory", "search", "-")
        assert code == 2 and words in one_error_line(err)


def deliver_to_red_sessions(data_dir: Path, memory_id: str, sessions: int, first: int = 0) -> None:
    """The audit as sessions leave it: the record delivered, then each session ended red
    (sessions red-`first` onwards)."""
    from memory.records import MemorySearchResult
    from memory.stores.protocol import open_store

    async def deliver() -> None:
        store = open_store(f"sqlite:///{data_dir / 'memory.sqlite3'}")
        try:
            record = await store.get(memory_id)
            for number in range(first, first + sessions):
                found = MemorySearchResult(record=record, score=0.8, rank=1)
                await store.record_deliveries(f"red-{number}", None, [found])
                await store.mark_session_outcome(f"red-{number}", False)
        finally:
            await store.close()

    asyncio.run(deliver())


def test_unstale_clears_the_possibly_stale_mark(capsys, tmp_path, data_dir, monkeypatch):
    monkeypatch.setenv("ASTRA_STALE_AFTER", "2")
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", MINIMAL)))
    [listed] = json.loads(run(capsys, "memory", "list", "--json")[1])
    memory_id = listed["memory_id"]
    deliver_to_red_sessions(data_dir, memory_id, 2)
    assert "POSSIBLY STALE" in run(capsys, "memory", "show", memory_id[:8])[1]
    assert json.loads(run(capsys, "memory", "show", memory_id, "--json")[1])["possibly_stale"]
    assert "POSSIBLY STALE" in run(capsys, "memory", "list")[1]

    code, out, _ = run(capsys, "memory", "unstale", memory_id[:8])
    assert code == 0 and "not stale" in out
    assert "POSSIBLY STALE" not in run(capsys, "memory", "show", memory_id[:8])[1]
    shown_json = json.loads(run(capsys, "memory", "show", memory_id, "--json")[1])
    assert shown_json["possibly_stale"] is False and shown_json["audit"]
    deliver_to_red_sessions(data_dir, memory_id, 1, first=2)  # one more red: 1 of 2, clear
    assert "POSSIBLY STALE" not in run(capsys, "memory", "show", memory_id)[1]


def test_an_import_line_cannot_say_how_many_red_sessions_were_cleared(
    capsys, tmp_path, data_dir, monkeypatch
):
    """The count stood for another store's deliveries: a line of -5 marked a record
    possibly stale with nothing delivered here, and one of 10**30 kept it from ever being."""
    monkeypatch.setenv("ASTRA_STALE_AFTER", "2")
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", MINIMAL)))
    exported = json.loads(run(capsys, "memory", "export")[1])
    memory_id = exported["memory_id"]
    for first, cleared in ((0, -5), (2, 10**30)):
        line = {**exported, "stale_cleared_red": cleared}
        assert run(capsys, "memory", "import", str(write_jsonl(tmp_path / "x.jsonl", line)))[0] == 0
        assert "POSSIBLY STALE" not in run(capsys, "memory", "show", memory_id)[1]
        deliver_to_red_sessions(data_dir, memory_id, 2, first)
        assert "POSSIBLY STALE" in run(capsys, "memory", "show", memory_id)[1]
        assert run(capsys, "memory", "unstale", memory_id)[0] == 0  # cleared: 2, then 4


def test_a_bad_stale_after_is_one_line_and_exit_2(capsys, data_dir, monkeypatch):
    monkeypatch.setenv("ASTRA_STALE_AFTER", "0")
    code, _, err = run(capsys, "memory", "list")
    assert code == 2 and "ASTRA_STALE_AFTER" in one_error_line(err)


def two_records_sharing_a_prefix(capsys, tmp_path) -> str:
    """Imports records until two ids share their first character; returns that character."""
    rows = [{**MINIMAL, "fix_description": f"Retry the upload, variant {n}."} for n in range(40)]
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "many.jsonl", *rows)))
    ids = [r["memory_id"] for r in json.loads(run(capsys, "memory", "list", "--json")[1])]
    firsts = [memory_id[0] for memory_id in ids]
    return next(c for c in firsts if firsts.count(c) > 1)


@pytest.mark.parametrize(
    "argv",
    [
        ("memory", "show"),
        ("memory", "delete", "--yes"),
        ("memory", "unstale"),
        ("smoke", "verify", "--memory-id"),
    ],
)
def test_an_ambiguous_id_prefix_is_one_line_and_exit_2(capsys, tmp_path, data_dir, argv):
    prefix = two_records_sharing_a_prefix(capsys, tmp_path)
    before = record_count(data_dir)
    command = [*argv[:2], prefix, *argv[2:]] if argv[0] == "memory" else [*argv, prefix]
    code, out, err = run(capsys, *command)
    assert code == 2 and out == ""
    assert "matches" in one_error_line(err)
    assert record_count(data_dir) == before


def test_piped_output_is_neither_wrapped_nor_cut_nor_padded(capsys, tmp_path, data_dir):
    """The README: output piped to another program or a file is not wrapped. The diff, the
    fix (its leading-space quote included) and the list's and search's fix lines stay whole,
    whatever COLUMNS says, and no line ends in the spaces a table pads with."""
    fix = "Strip each origin, so ' https://b.example' matches." + " Then say why at length." * 8
    diff = "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-" + "x" * 150 + "\n+" + "y" * 150 + "\n"
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "in.jsonl", MINIMAL)))
    row = {**json.loads(run(capsys, "memory", "export")[1]), "fix_description": fix, "diff": diff}
    run(capsys, "memory", "import", str(write_jsonl(tmp_path / "full.jsonl", row)))
    short = row["memory_id"][:8]
    query = "ConnectionResetError: [Errno 104] Connection reset by peer"
    for argv in (("show", short), ("list",), ("search", query), ("stats",)):
        code, out, _ = run(capsys, "memory", *argv)
        assert code == 0 and "…" not in out, argv
        assert all(line == line.rstrip() for line in out.splitlines()), argv
        if argv[0] != "stats":
            assert any(line.endswith(fix) for line in out.splitlines()), argv
    out = run(capsys, "memory", "show", short)[1]
    assert f"-{'x' * 150}" in out.splitlines() and f"+{'y' * 150}" in out.splitlines()


@pytest.mark.parametrize(
    "argv",
    [
        ("memory", "search", "x"),
        ("memory", "list"),
        ("memory", "export"),
        ("memory", "import", "-"),
        ("memory", "eval", "q.jsonl"),
        ("run", "--workspace", "."),
    ],
)
def test_an_empty_scope_is_a_usage_error(capsys, data_dir, argv):
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--scope", " "])
    assert stopped.value.code == 2
    assert "--scope: the scope is empty" in one_error_line(capsys.readouterr().err)


def test_a_scope_listed_empty_says_where_other_records_are(capsys, tmp_path, data_dir):
    """`memory list --scope S` of an empty scope said only "No memory records"."""
    source = str(write_jsonl(tmp_path / "in.jsonl", MINIMAL))
    run(capsys, "memory", "import", source, "--scope", "demo-20260101-000000-abc123")
    code, out, _ = run(capsys, "memory", "list", "--scope", "nosuch")
    assert code == 0 and out.splitlines() == [
        "No memory records. (scope nosuch)",
        "1 record(s) in other scopes (demo-20260101-000000-abc123 1): pass another --scope, or "
        "none for all",
    ]


def test_a_search_that_finds_nothing_says_where_other_records_are(capsys, tmp_path, data_dir):
    """After the demo, `memory search` in scope default said only "No matches"."""
    source = str(write_jsonl(tmp_path / "in.jsonl", MINIMAL))
    run(capsys, "memory", "import", source, "--scope", "demo-20260101-000000-abc123")
    code, out, _ = run(capsys, "memory", "search", "origin whitespace")
    assert code == 0 and out.splitlines() == [
        "No matches in scope 'default'.",
        "1 record(s) in other scopes (demo-20260101-000000-abc123 1): pass --scope S or "
        "--all-scopes",
    ]
    assert json.loads(run(capsys, "memory", "search", "origin whitespace", "--json")[1]) == []
    run(capsys, "memory", "import", source)
    out = run(capsys, "memory", "search", "x", "--scope", "default", "--min-score", "0.99")[1]
    assert "1 record(s) in other scopes" in out
