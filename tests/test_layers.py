"""The layer rules at run time, beside the import-linter contracts in pyproject.toml.

Every product module, found by walking the packages (so a new module is checked too), is
imported in a fresh interpreter, layer by layer: agent/ and memory/ load neither Textual
nor the app and widgets, widgets/ never load the app. The import graph has no cycles, even
through TYPE_CHECKING imports, which `lint-imports` is told to skip. The commands that open
the dashboard import nothing heavy before its first frame.
"""

from __future__ import annotations

import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("app", "widgets", "agent", "memory")
# What importing a layer's modules must not load: the layers above it, and Textual below the UI.
MUST_NOT_LOAD = {
    "memory": {"agent", "widgets", "app", "textual"},
    "agent": {"widgets", "app", "textual"},
    "widgets": {"app"},
    "app": set(),
}

PROBE = """
import importlib, sys
forbidden = set(sys.argv[1].split(",")) - {""}
for name in sys.argv[2:]:
    importlib.import_module(name)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in forbidden)
    if loaded:
        sys.exit(f"importing {name} loaded {loaded}")
"""


def modules_of(package: str) -> list[str]:
    """The package and every module below it, as pkgutil finds them in this checkout."""
    found = pkgutil.walk_packages([str(ROOT / package)], prefix=package + ".")
    return [package, *(module.name for module in found)]


def test_the_walk_finds_every_layer_and_its_new_modules():
    found = {package: modules_of(package) for package in PRODUCT}
    assert "memory.stores.migrations" in found["memory"]
    assert "memory.retrieval.ranking" in found["memory"]
    assert "app.dashboard.screens.memory_browser" in found["app"]  # subpackages are walked too
    assert all(len(modules) > 1 for modules in found.values())


@pytest.mark.parametrize("layer", PRODUCT)
def test_every_module_of_a_layer_imports_nothing_from_above_it(layer):
    forbidden = ",".join(sorted(MUST_NOT_LOAD[layer]))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, forbidden, *modules_of(layer)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def import_cycles() -> set[frozenset[str]]:
    """Each group of product modules that import one another, TYPE_CHECKING included."""
    graph = grimp.build_graph(*PRODUCT, exclude_type_checking_imports=False, cache_dir=None)
    cycles = set()
    for module in graph.modules:
        imported = graph.find_upstream_modules(module)
        importers = graph.find_downstream_modules(module)
        if imported & importers:
            cycles.add(frozenset({module} | (imported & importers)))
    return cycles


def test_no_import_cycles_type_checking_imports_included():
    assert import_cycles() == set()


def test_the_dashboard_commands_load_no_heavy_layer_before_the_first_frame():
    heavy = {
        "agent",
        "numpy",
        "pydantic",
        "httpx",
        "httpx2",
        "openai",
        "torch",
        "sentence_transformers",
        "grpc",
        "pygments",  # rich.syntax, the edit modal's: 10 ms
        "markdown_it",  # Textual's Markdown, the help screen's: 30 ms
    }
    probe = (
        "import sys, app.cli.main, app.cli.commands.tui, app.cli.commands.demo;"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r});"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


FIRST_FRAME = """
import sys
from textual.app import App

display = App._display

def probe(app, screen, renderable):
    display(app, screen, renderable)
    if renderable is not None and screen.query("Footer") and not hasattr(app, "loaded"):
        app.loaded = sorted(m for m in sys.argv[1].split(",") if m in sys.modules)
        print("LOADED", app.loaded)
        app.call_later(app.exit)

App._display = probe
run_async = App.run_async

async def headless(app, **kwargs):
    return await run_async(app, headless=True, size=(120, 40))

App.run_async = headless
import app.cli.commands.tui  # its stdin is no terminal; the headless driver needs none
app.cli.commands.tui.require_terminal = lambda instead: None
from app.cli.main import main
main(sys.argv[2:])
"""


def test_the_idle_dashboard_shows_the_browser_before_loading_the_session_panes(tmp_path):
    """Idle, the first frame is the memory browser's: the session's screen, its panes (a
    RichLog, which brings rich.pretty and attrs) and its modals load when first used."""
    session_only = (
        "app.dashboard.screens.dashboard",
        "app.dashboard.supervisor",
        "app.dashboard.screens.new_session_modal",
        "widgets.pane_log",
        "rich.pretty",
    )
    assert first_frame_loads(tmp_path, session_only) == "LOADED []"


def test_a_session_shows_its_dashboard_before_loading_the_browser_and_modals(tmp_path):
    """With --workspace, the first frame is the session's: the memory browser (its tables),
    the modals, attrs (which RichLog's rich.pretty would import) and the files a config or
    .env file would need load when first used."""
    browser_only = (
        "app.dashboard.screens.memory_browser",
        "app.dashboard.screens.pending_screen",
        "app.dashboard.screens.record_modal",
        "app.dashboard.screens.confirm_modal",
        "attr",
        "dotenv",
        "tomllib",
    )
    workspace = tmp_path / "alpha"
    shutil.copytree(ROOT / "demo_projects" / "scenario_alpha", workspace)
    rehearsal = ROOT / "demo_projects" / "rehearsals" / "scenario_alpha.jsonl"
    command = ("tui", "--workspace", str(workspace), "--replay", str(rehearsal))
    assert first_frame_loads(tmp_path, browser_only, command) == "LOADED []"


def first_frame_loads(tmp_path: Path, modules: tuple[str, ...], command: tuple[str, ...] = ()):
    """Which of these modules `astra-memory COMMAND` had loaded by its first frame."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ASTRA_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME, ",".join(modules), *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )
    loaded = [line for line in done.stdout.splitlines() if line.startswith("LOADED")]
    assert loaded, done.stdout[-2000:] + done.stderr[-2000:]
    return loaded[0]
