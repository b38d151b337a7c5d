"""Test counts as the operator reads them. No imports: the dashboard's widgets use it
before the heavy layers load (tests/test_layers.py)."""


def counts_text(passed: int | None, failed: int | None) -> str:
    """'3 passed, 1 failed', or what is unknown where the test runner's output did not say."""
    if passed is None and failed is None:
        return "counts unknown"
    return ", ".join(
        f"{count} {kind}" if count is not None else f"{kind} unknown"
        for count, kind in ((passed, "passed"), (failed, "failed"))
    )
