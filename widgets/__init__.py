"""Dashboard widgets: they render session data and post Messages; they never do the work.

Each loads when first asked for (`from widgets import PaneLog` works as usual), so the
memory browser's first frame does not wait for the session panes' RichLog and what it
imports.
"""

import importlib

_MODULES = {
    "BudgetPanel": "budget_panel",
    "MatchesLog": "matches_log",
    "PaneLog": "pane_log",
    "RecordView": "record_view",
    "SessionHeader": "session_header",
    "TestOutputLog": "output_pane",
    "TurnsLog": "turns_log",
    "data_cell": "record_view",
}

__all__ = sorted(_MODULES)


def __getattr__(name: str) -> object:
    if name not in _MODULES:
        raise AttributeError(f"module 'widgets' has no attribute {name!r}")
    return getattr(importlib.import_module(f"widgets.{_MODULES[name]}"), name)
