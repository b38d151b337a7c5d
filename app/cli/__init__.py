"""The `astra-memory` command line: the parser (`main`), the flags several commands share
(`arguments`, `history_flags`), the Rich consoles, and one module per command (`commands/`).

May import everything below it: `app.config`, `app.sessions`, `app.dashboard` (only in the
commands that open it), `agent`, `memory`. Nothing imports the CLI but the console script.
"""
