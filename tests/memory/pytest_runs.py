"""A failure as a whole pytest run prints it: what a model pastes when told to search with
"the observed failure output". Deterministic for a seed."""

from __future__ import annotations

import random
import re

OTHER_TEST_FILES = (
    "tests/test_api.py",
    "tests/test_cli.py",
    "tests/test_config.py",
    "tests/test_models.py",
    "tests/test_utils.py",
    "tests/test_views.py",
    "tests/integration/test_db.py",
    "tests/integration/test_queue.py",
)
_TEST_FILE = re.compile(r"((?:[\w.-]+/)*test_\w+\.py)")
_TEST_NAME = re.compile(r"::(\w+)")
_BANNER = 80


def banner(title: str, fill: str = "=") -> str:
    return f" {title} ".center(_BANNER, fill)


def whole_run(failure: str, seed: int) -> str:
    """`failure` between the session header and progress lines before it and the short
    summary after it, as `pytest` prints a run with one failing test."""
    rng = random.Random(seed)
    named = _TEST_FILE.search(failure)
    failing = named.group(1) if named else "tests/test_app.py"
    files = sorted({*rng.sample(OTHER_TEST_FILES, 5), failing})
    progress, total = [], 0
    for number, path in enumerate(files, start=1):
        count = rng.randint(3, 30)
        total += count
        dots = "".join("F" if path == failing and i == count // 2 else "." for i in range(count))
        progress.append(f"{path} {dots}".ljust(75) + f"[{100 * number // len(files):>3}%]")
    test = _TEST_NAME.search(failure)
    return "\n".join(
        [
            banner("test session starts"),
            f"platform linux -- Python 3.11.{rng.randint(2, 9)}, pytest-8.3.2, pluggy-1.5.0",
            "rootdir: /home/dev/src/project",
            "configfile: pyproject.toml",
            "plugins: anyio-4.4.0, cov-5.0.0, mock-3.14.0",
            f"collected {total} items",
            "",
            *progress,
            "",
            banner("FAILURES"),
            banner(test.group(1) if test else "test_case", "_"),
            failure,
            banner("short test summary info"),
            banner(f"1 failed, {total - 1} passed in {rng.uniform(0.2, 4):.2f}s"),
        ]
    )
