"""Sessions: their options (`options`), wiring one from settings and flags (`builder`), the
dashboard's non-UI half (`backend`) and its queue of sessions (`queue`), a session in a
terminal or pipe (`headless`), and the history of past ones (`history`).

Imports `agent`, `memory`, `app.config` and the shared `app` modules; never Textual (the
dashboard drives a queue through callbacks), so the CLI and the dashboard share all of it.
"""
