"""Dashboard widgets: they render session data and post Messages; they never do the work."""

from widgets.budget_panel import BudgetPanel
from widgets.matches_log import MatchesLog
from widgets.output_pane import TestOutputLog
from widgets.pane_log import PaneLog
from widgets.record_view import RecordView, data_cell
from widgets.session_header import SessionHeader
from widgets.turns_log import TurnsLog

__all__ = [
    "BudgetPanel",
    "MatchesLog",
    "PaneLog",
    "RecordView",
    "SessionHeader",
    "TestOutputLog",
    "TurnsLog",
    "data_cell",
]
