"""The ranking policy both stores share: rare words within a postings budget, and fusion."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.records import MemoryRecord
from memory.retrieval import ranking
from memory.retrieval.rerank import exception_type


def counter(counts: dict[str, int]):
    return lambda word, cap: min(counts.get(word, 0), cap)


@pytest.mark.parametrize(
    ("records", "counts", "expected"),
    [
        # ceiling max(50, 1% of 1000) = 50: "common" is over it, "missing" matches nothing
        (1000, {"common": 400, "mid": 40, "rare": 2}, ["rare", "mid"]),
        # ceiling 10,000; rarest first until the 3,000 postings are spent
        (1_000_000, {"x": 2500, "y": 600, "z": 100}, ["z", "y"]),
    ],
)
def test_rare_words_are_the_rarest_within_the_postings_budget(records, counts, expected):
    words = [*counts, "missing"]
    assert ranking.rare_words(words, records, counter(counts)) == expected


def test_an_id_high_in_both_rankings_beats_one_first_in_only_one():
    fused = ranking.fuse(["a", "b", "c"], ["b", "d"], [], ranking.TEST_REPORT_WEIGHTS)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    cosine = {"a": 0.9, "b": 0.5, "c": 0.4, "d": 0.3}
    assert ranking.best_fused(fused, cosine, min_score=-1.0, top_k=3) == ["b", "a", "d"]


@pytest.mark.parametrize(
    ("query", "weights"),
    [
        ("E       assert 'a' == 'b'\ntests/test_x.py:3: AssertionError", (1.0, 0.0)),
        (
            "ImportError: cannot import name 'ungettext_lazy' from 'django.utils.translation'",
            (5.0, 1.0),
        ),
        (
            'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\nKeyError: 1',
            (5.0, 1.0),
        ),
    ],
)
def test_words_and_files_count_more_in_a_reported_error_than_in_the_projects_test_report(
    query, weights
):
    assert ranking.weights(query)[:2] == weights


@pytest.mark.parametrize(
    ("nearest", "vote"),
    [(-1.0, 0.0), (0.3, 0.0), (0.45, 0.0), (0.525, 0.5), (0.6, 1.0), (0.9, 1.0)],
)
def test_the_vectors_vote_as_strongly_as_the_nearest_candidate_is_near(nearest, vote):
    assert ranking.weights("KeyError: 1", nearest).vector == pytest.approx(vote)


def test_among_strangers_the_vector_order_decides_nothing():
    """A test report's words weigh as the vectors: the vectors' first wins when a record is
    near in meaning, the words' first when none is (nearest cosine 0.3)."""
    by_vector, by_keyword = ["v", "k"], ["k", "v"]
    near = ranking.fuse(by_vector, by_keyword, [], ranking.weights("E  assert 1", 0.8))
    far = ranking.fuse(by_vector, by_keyword, [], ranking.weights("E  assert 1", 0.3))
    assert near["v"] == near["k"]  # equal votes: the cosine breaks the tie
    assert far["k"] > far["v"]


def test_a_reported_errors_keyword_first_beats_the_vector_first():
    """Weight 3: first by words and 20th by vector beats first by vector and tenth by words;
    at equal weights the vector's first wins."""
    by_vector = ["v", *(f"vector-{n}" for n in range(18)), "k"]
    by_keyword = ["k", *(f"word-{n}" for n in range(8)), "v"]
    reported = ranking.fuse(by_vector, by_keyword, [], ranking.REPORTED_WEIGHTS)
    equal = ranking.fuse(by_vector, by_keyword, [], ranking.TEST_REPORT_WEIGHTS)
    assert max(reported, key=reported.__getitem__) == "k"
    assert max(equal, key=equal.__getitem__) == "v"


def test_the_path_ranking_takes_files_named_whole_rarest_first():
    query = (
        'File "/srv/venv/lib/python3.11/site-packages/aiohttp/client.py", line 49\n'
        "TypeError: bad timeout (see requirements.txt, CHAID/column.py)"
    )
    files = {
        "pinned": ["requirements.txt"],
        "also-pinned": ["requirements.txt", "setup.py"],
        "client": ["aiohttp/client.py"],
        "folder": ["CHAID/"],
        "longer": ["aiohttp/client.pyi", "other/aiohttp/client.py.bak"],
        "short": ["ra/"],
        "none": [],
    }
    assert ranking.path_ranking(query, files) == ["client", "folder", "pinned", "also-pinned"]


def test_a_named_file_lifts_its_record_in_a_reported_error_only():
    """Second by vector and by words, but the only record whose file the traceback names:
    first for a reported error; a test report leaves the order to vectors and words."""
    by_vector, by_keyword, by_path = ["a", "b", "c"], ["a", "b"], ["b"]
    reported = ranking.fuse(by_vector, by_keyword, by_path, ranking.REPORTED_WEIGHTS)
    assert max(reported, key=reported.__getitem__) == "b"
    own = ranking.fuse(by_vector, by_keyword, by_path, ranking.TEST_REPORT_WEIGHTS)
    assert max(own, key=own.__getitem__) == "a"


@pytest.mark.parametrize(
    ("min_score", "top_k", "expected"),
    [(-1.0, 10, ["b", "a"]), (-1.0, 1, ["b"]), (0.32, 10, ["b"]), (0.4, 10, [])],
)
def test_ties_go_to_cosine_and_min_score_filters_on_cosine(min_score, top_k, expected):
    # a and b tie on the fused score
    fused = ranking.fuse(["a", "b"], ["b", "a"], [], ranking.TEST_REPORT_WEIGHTS)
    cosine = {"a": 0.3, "b": 0.35}
    assert ranking.best_fused(fused, cosine, min_score, top_k) == expected


@pytest.mark.parametrize(
    ("rank", "cosine", "vector_rank", "keyword_rank", "second", "label"),
    [
        (1, 0.45, 1, 1, 0.30, "strong"),
        (1, 0.95, 1, 1, None, "possible"),  # the only candidate: it leads no one
        (1, 0.45, 1, 1, 0.40, "possible"),  # both agree, but a neighbour is nearly as near
        (1, 0.62, 1, 1, 0.55, "possible"),
        (1, 0.35, 1, 1, 0.10, "possible"),  # both agree, but the vectors are far apart
        (1, 0.9, 1, None, 0.2, "possible"),  # a close vector the keywords do not confirm
        (1, 0.5, 2, 1, 0.6, "possible"),
        (1, 0.34, 1, 1, 0.1, "weak"),  # the nearest of a store that holds no answer
        (2, 0.34, 2, 2, 0.4, "weak"),
        (2, 0.5, 3, 2, 0.6, "possible"),
        (2, 0.8, 2, None, 0.9, "weak"),
        (3, 0.5, 4, 1, 0.7, "weak"),
    ],
)
def test_relevance_labels_read_whether_the_rankings_agree_and_the_nearest_leads(
    rank, cosine, vector_rank, keyword_rank, second, label
):
    assert ranking.relevance(rank, cosine, vector_rank, keyword_rank, second) == label


def test_the_runner_up_is_the_second_best_cosine_of_the_candidates():
    assert ranking.runner_up([0.2, 0.7, 0.5]) == 0.5
    assert ranking.runner_up([0.7]) is None


@pytest.mark.parametrize(
    ("label", "minimum", "passes"),
    [
        ("strong", "possible", True),
        ("possible", "possible", True),
        ("weak", "possible", False),
        ("weak", "weak", True),
        ("possible", "strong", False),
    ],
)
def test_at_least_orders_the_labels(label, minimum, passes):
    assert ranking.at_least(label, minimum) is passes


def test_a_reported_errors_joined_names_are_phrases_a_test_reports_are_not():
    reported = "cannot import name 'six' from 'django.utils' (django-controlcenter, my_app)"
    report = "E   KeyError: 'six'\nFAILED tests/test_app.py::test_django_controlcenter"
    assert ranking.query_words(reported)[:3] == [
        "django controlcenter",  # a project's name: a phrase, and closed up
        "djangocontrolcenter",
        "myapp",  # code's name: closed up only, its parts are words already
    ]
    assert "controlcenter" in ranking.query_words(reported)
    assert not [word for word in ranking.query_words(report) if " " in word]


def test_a_phrase_counts_only_where_its_words_stand_together():
    def fix(name: str, description: str) -> MemoryRecord:
        return MemoryRecord(
            memory_id=name,
            scope="s",
            fix_description=description,
            error_type="ImportError",
            file_paths=(),
            outcome="passed",
            session_id="s",
            timestamp=datetime(2026, 11, 1, tzinfo=UTC),
        )

    apart = fix("apart", "Django's control panel: the controlcenter view of controlcenter")
    together = fix("together", "Upgrade django-controlcenter to 0.3.0")
    query = "ImportError in django-controlcenter"
    assert ranking.keyword_ranking(query, [apart, together]) == ["together", "apart"]
    assert ranking.keyword_ranking("ImportError in controlcenter", [apart, together])[0] == "apart"


def test_a_long_report_looks_up_at_most_eight_joined_names():
    packages = ", ".join(f"pkg-v{n}" for n in range(20))
    names = [word for word in ranking.query_words(f"ImportError in {packages}") if " " in word]
    assert names == [f"pkg v{n}" for n in range(8)]


def test_a_tracebacks_code_names_leave_room_for_the_package_it_names():
    frames = "".join(
        f'  File "/venv/lib/site-packages/app/run.py", line {n}, in do_step_{n}\n'
        for n in range(10)
    )
    words = ranking.query_words(f"Traceback:\n{frames}ModuleNotFoundError: pyas2-lib")
    assert {"pyas2 lib", "pyas2lib"} <= set(words)
    assert "site packages" not in words and "sitepackages" not in words


def test_query_exception_type_is_read_from_its_last_exception_line() -> None:
    assert exception_type("Debugger fails: `getuser()` now raises `OSError`") == "oserror"
    assert exception_type('File "a.py", line 1, in f\nsqlalchemy.exc.NoSuchColumnError: x') == (
        "nosuchcolumnerror"
    )
    assert exception_type("nothing named here") == ""
