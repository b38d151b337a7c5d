"""Textual widgets of the dashboard: they render data and post Messages, nothing more."""
