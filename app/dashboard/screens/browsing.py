"""The base of the memory browser's screens, apart from them: the app asks "is this a
browser?" without importing the browser, whose tables would slow a session's first frame."""

from __future__ import annotations

from textual.screen import Screen


class BrowsingScreen(Screen):
    """A screen of the memory browser (its records, or its review of proposals): from one,
    `m` would open a second browser."""

    def show_status(self) -> None:
        """The app's status changed (store opening, model loading, an error): show it where
        this screen shows it, if anywhere."""
