"""Every theme Textual ships draws the dashboard: the panes take their colours from the
theme's variables, whatever names it gives them (the ANSI themes' "ansi_green" is not a
Rich colour, and once ended the app)."""

from __future__ import annotations

import pytest
from textual.app import App

from app.dashboard.screens.dashboard import DashboardScreen
from tests.app.pilot_helpers import rows
from tests.app.test_snapshots import SnapshotHost, fixed_events
from widgets import TestOutputLog, TurnsLog

THEMES = sorted(App().available_themes)


def test_textual_ships_the_ansi_themes():
    assert {"ansi-dark", "ansi-light", "textual-dark", "textual-light"} <= set(THEMES)


@pytest.mark.parametrize("theme", THEMES)
async def test_every_theme_draws_the_dashboard(theme):
    host = SnapshotHost(DashboardScreen(), fixed_events())
    async with host.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        host.theme = theme  # what choosing (or only previewing) it in the palette does
        await pilot.pause()
        await pilot.pause()
        assert host.is_running and host.theme == theme
        assert any("FAILED" in row for row in rows(host.screen.query_one(TestOutputLog)))
        assert rows(host.screen.query_one(TurnsLog))


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
def test_snapshot_dashboard_ansi(snap_compare, size):
    host = SnapshotHost(DashboardScreen(), fixed_events(), theme="ansi-dark")
    assert snap_compare(host, terminal_size=size)


def test_snapshot_dashboard_light_narrow(snap_compare):
    host = SnapshotHost(DashboardScreen(), fixed_events(), theme="textual-light")
    assert snap_compare(host, terminal_size=(80, 24))
