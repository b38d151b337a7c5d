"""What the dashboard's model process says (the first export's steps, the fallback's
warning) shows in the header status; it arrives from a reader thread, off the loop."""

from __future__ import annotations

import asyncio
import threading

from app.errors import CommandError
from app.sessions.options import SessionOptions
from app.sessions.queue import SessionPlan, SessionQueue


class View:
    def __init__(self) -> None:
        self.statuses: list[str] = []
        self.notices: list[tuple[str, str]] = []

    def show_status(self, status: str) -> None:
        self.statuses.append(status)

    def notify(self, message: str, *, title: str = "", severity: str = "information", **_):
        self.notices.append((message, severity))


async def test_the_model_process_steps_and_its_warning_reach_the_status(settings):
    view = View()
    queue = SessionQueue(settings, SessionOptions(), [], view)
    says = queue._model_says(asyncio.get_running_loop())
    for message in ("exporting it to ONNX (x.onnx)", "warning: the ONNX embedder is unavailable"):
        thread = threading.Thread(target=says, args=(message,))
        thread.start()
        thread.join()
    await asyncio.sleep(0)
    assert view.statuses == [
        "embedding model: exporting it to ONNX (x.onnx)",
        "embedding model: warning: the ONNX embedder is unavailable",
    ]
    assert queue.status == view.statuses[-1]
    assert view.notices == [("warning: the ONNX embedder is unavailable", "warning")]


def test_news_after_the_app_closed_its_loop_are_dropped(settings):
    loop = asyncio.new_event_loop()
    view = View()
    says = SessionQueue(settings, SessionOptions(), [], view)._model_says(loop)
    loop.close()
    says("checking the export against sentence-transformers")
    assert view.statuses == []


async def test_a_session_is_built_off_the_loop(settings, tmp_path):
    """Building a session copies or branches its workspace and probes the sandbox: on the
    loop, that stalled the dashboard 65-90 ms (bench/bench_tui.py)."""
    on_the_loop: list[bool] = []

    class Backend:
        def agent(self, *_args) -> None:
            on_the_loop.append(threading.current_thread() is threading.main_thread())
            raise CommandError("stopped before it ran", 2)

    class SessionView(View):
        def supervisor(self, options):
            return None

        def forward_event(self, event) -> None:
            pass

    view = SessionView()
    queue = SessionQueue(settings, SessionOptions(), [], view)
    queue.backend = Backend()  # type: ignore[assignment]
    await queue._run_session(SessionPlan(SessionOptions(), tmp_path, "s1"))
    assert on_the_loop == [False]
    assert view.notices == [("stopped before it ran", "error")]
