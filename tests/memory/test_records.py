"""The records check their fields as they are made (memory.checked): what a store row or an
import line holds comes back equal, and a bad value is refused with the field's path."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.checked import FieldError
from memory.records import MemoryRecord, MemorySearchResult, TestEvidence

NOW = datetime(2026, 12, 7, 15, 30, 0, 123456, tzinfo=UTC)
RED = TestEvidence(command="pytest", exit_code=1, passed=0, failed=1)
RECORD = MemoryRecord(
    memory_id="0badc0de-0000-4000-8000-000000000001",
    fix_description="Strip whitespace around each origin.",
    error_type="AssertionError",
    file_paths=["app/cors.py"],  # a list, as JSON gives it: kept as a tuple
    outcome="pytest passed",
    session_id="s1",
    timestamp=NOW,
    evidence={"command": "pytest", "exit_code": 0, "passed": 3, "failed": 0, "failing": RED},
)


def test_a_record_round_trips_through_the_json_a_store_row_holds():
    body = RECORD.to_json()
    assert json.loads(body)["timestamp"] == "2026-12-07T15:30:00.123456Z"
    assert list(json.loads(body))[:3] == ["memory_id", "scope", "fix_description"]
    again = MemoryRecord.from_json(body)
    assert again == RECORD and hash(again) == hash(RECORD)
    assert again.file_paths == ("app/cors.py",) and again.evidence.failing == RED


def test_rows_written_with_an_offset_instead_of_z_still_load():
    data = {**RECORD.to_dict(), "timestamp": "2026-12-07T16:30:00.123456+01:00"}
    assert MemoryRecord.from_dict(data).timestamp == NOW
    plus_one = replace(RECORD, timestamp=NOW.astimezone(timezone(timedelta(hours=1))))
    assert plus_one.to_dict()["timestamp"] == "2026-12-07T16:30:00.123456+01:00"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"timestamp": "2026-12-07T15:30:00"}, "timestamp: must include a timezone"),
        ({"timestamp": 1765121400}, "timestamp: should be an ISO 8601 timestamp"),
        ({"expires_at": "next week"}, "expires_at: should be an ISO 8601 timestamp"),
        ({"file_paths": "app/cors.py"}, "file_paths: should be a list"),
        ({"file_paths": ["a.py", 3]}, "file_paths.1: should be a string"),
        ({"provenance": "trusted"}, "provenance: should be one of 'test-confirmed', "),
        ({"stale_cleared_red": True}, "stale_cleared_red: should be an integer"),
        ({"stale_cleared_red": 1.5}, "stale_cleared_red: should be an integer"),
        ({"evidence": {"command": "pytest"}}, "evidence.exit_code: field required"),
        ({"evidence": "passed"}, "evidence: should be an object"),
        (
            {"evidence": {**RED.to_dict(), "failing": {**RED.to_dict(), "failed": "1"}}},
            "evidence.failing.failed: should be an integer",
        ),
        (
            {"confirmations": [{"session_id": "s2", "confirmed_at": "2026-12-07"}]},
            "confirmations.0.confirmed_at: must include a timezone",
        ),
    ],
)
def test_a_bad_field_is_refused_with_its_path(changes, message):
    with pytest.raises(FieldError) as refused:
        MemoryRecord.from_dict({**RECORD.to_dict(), **changes})
    assert str(refused.value).startswith(message)


def test_a_whole_float_is_an_integer_and_a_corrupt_row_is_refused_not_a_crash():
    # a server's JSON may carry 3 as 3.0; a row nested past Python's limit is only corrupt
    evidence = {**RECORD.evidence.to_dict(), "exit_code": 0.0, "passed": 3.0}
    loaded = MemoryRecord.from_dict({**RECORD.to_dict(), "evidence": evidence})
    assert (loaded.evidence.exit_code, loaded.evidence.passed) == (0, 3) and loaded == RECORD
    with pytest.raises(FieldError, match="nested too deep"):
        MemoryRecord.from_json("[" * 100_000 + "]" * 100_000)


def test_a_missing_field_is_named_and_unknown_keys_are_ignored():
    data = {**RECORD.to_dict(), "added_by_a_later_version": 1}
    assert MemoryRecord.from_dict(data) == RECORD
    del data["session_id"]
    with pytest.raises(FieldError, match=r"^session_id: field required$"):
        MemoryRecord.from_dict(data)


def test_construction_and_replace_check_too():
    with pytest.raises(FieldError, match=r"^timestamp: must include a timezone$"):
        replace(RECORD, timestamp=datetime(2026, 12, 7))
    with pytest.raises(FieldError, match=r"^rank: should be at least 1$"):
        MemorySearchResult(record=RECORD, score=0.5, rank=0)
    assert MemorySearchResult(record=RECORD, score=1, rank=1).score == 1.0
