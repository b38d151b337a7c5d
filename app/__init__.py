"""The application: the command line (`cli/`), the dashboard (`dashboard/`), sessions
(`sessions/`) and configuration (`config/`), plus three small modules they share: `errors`,
`console` and `text_fit`. Inside, one way only: cli > dashboard > sessions > config.
"""
