"""The Textual dashboard: the App (`app`), its shared styles (`app.tcss`), one screen or modal per
file (`screens/`), its Supervisor (`supervisor`) and its non-UI half (`backend`).

May import `widgets`, `app.sessions`, `app.config`, and `agent`/`memory` from `backend` only,
which loads after the first frame. The CLI opens it; nothing below imports it.
"""
