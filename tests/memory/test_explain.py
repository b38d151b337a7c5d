"""The one line that says why a match ranked: the shell's long form, the panes' short one."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from memory.records import MemoryRecord, MemorySearchResult
from memory.retrieval import ranking
from memory.retrieval.explain import COMPACT_WIDTH, explanation, query_reading

RECORD = MemoryRecord(
    memory_id="m1",
    fix_description="Strip whitespace around each comma-separated origin in the CORS origin list.",
    error_type="AssertionError",
    file_paths=("app/cors.py", "app/config/settings.py"),
    outcome="ok",
    symptom="E       AssertionError: assert ' https://b.example' == 'https://b.example'",
    session_id="s",
    timestamp=datetime(2026, 1, 1, tzinfo=UTC),
)
QUERY = (
    "E       AssertionError: assert ' https://c.example' == 'https://c.example'\n"
    "app/cors.py: the second origin of the CORS list keeps its whitespace around the comma"
)


def result(vector_rank: int | None, keyword_rank: int | None) -> MemorySearchResult:
    return MemorySearchResult(
        record=RECORD, score=0.61234, rank=1, vector_rank=vector_rank, keyword_rank=keyword_rank
    )


def test_why_matched_names_the_shared_words_files_and_signature():
    why = ranking.why_matched(QUERY, RECORD)
    assert {"whitespace", "origin"} <= set(why.terms)
    assert why.paths == ["app/cors.py"]
    assert why.signature and set(why.signature) <= set(RECORD.signature)


def test_the_long_form_names_every_part_and_says_none_where_nothing_is_shared():
    line = explanation(QUERY, result(2, None))
    assert line.startswith("why: cosine 0.6123 · vector rank #2 · ")
    assert "keyword rank not among its candidates" in line
    assert "shared paths: app/cors.py · " in line and "app/config/settings.py" not in line
    assert "whitespace" in line and "shared signature: " in line
    assert "shared signature: none" not in line  # both show the same assertion shape
    unrelated = explanation("KeyError in billing/ledger.go", result(5, 9))
    assert unrelated.endswith("shared terms: none · shared paths: none · shared signature: none")


def test_the_compact_form_fits_a_pane_row_files_first_then_shapes_then_long_words():
    line = explanation(QUERY, result(2, 1), compact=True)
    # no cosine: the pane shows it beside the line; the shape cut at a space, then "…"
    assert line == "why: vector #2 · keyword #1 · paths cors.py · signature leading…"
    assert len(line) <= COMPACT_WIDTH
    words = explanation("comma whitespace origin list cors", result(3, 1), compact=True)
    assert words == "why: vector #3 · keyword #1 · terms whitespace, origin, comma, list…"
    loader = replace(RECORD, file_paths=("app/settings_loader.py",))
    found = MemorySearchResult(record=loader, score=0.5, rank=1, vector_rank=2, keyword_rank=1)
    shorter = explanation("AssertionError in settings_loader.py: each", found, compact=True)
    # "assertionerror" does not fit after the file: left out, and the shorter word shown
    assert shorter == "why: vector #2 · keyword #1 · paths settings_loader.py · terms each…"
    bare = explanation("KeyError in billing/ledger.go", result(None, None), compact=True)
    assert bare == "why: vector - · keyword -"


def test_a_secret_the_record_kept_is_redacted_before_the_line_is_cut():
    token = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"  # a GitHub token's shape: 36 after ghp_
    leaky = replace(RECORD, file_paths=(f"conf/{token}.json",))
    found = MemorySearchResult(record=leaky, score=0.5, rank=1, vector_rank=1, keyword_rank=1)
    query = f"KeyError reading conf/{token}.json"
    for compact in (False, True):
        line = explanation(query, found, compact=compact)
        assert "[REDACTED]" in line and "a1B2c3D4e5" not in line


def test_the_query_reading_names_its_kind_weight_and_parts():
    reading = query_reading(
        'Traceback (most recent call last):\n  File "app/main.py", line 3, in run\n'
        '  File "/venv/lib/python3.11/site-packages/httpx/_client.py", line 9, in send\n'
        "KeyError: 'token'"
    )
    assert reading == (
        "read as: traceback · keyword weight 5 · path weight 1 · exception: KeyError: 'token' · "
        "project frames: app/main.py run · 1 library frame"
    )
    assert query_reading("E   assert 1 == 2").startswith("read as: test report · keyword weight 1")


def test_a_store_url_is_shortened_for_a_title_line(monkeypatch):
    from memory.text import short_url

    monkeypatch.setenv("HOME", "/home/dev")
    url = "sqlite:////home/dev/.local/share/astra-codebase-memory/memory.sqlite3"
    assert short_url(url, 80) == "sqlite:///~/.local/share/astra-codebase-memory/memory.sqlite3"
    cut = short_url(url, 30)
    assert len(cut) == 30 and cut.startswith("sqlite:///~") and cut.endswith("memory.sqlite3")
    secret = short_url("vectorai://bob:hunter2-long-password@db.example.com:6574/c", 24)
    assert "hunter" not in secret and "…" in secret  # masked before it is cut
