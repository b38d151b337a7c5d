"""The config file: kept between runs, overridden by the environment and flags, and the
theme chosen in the dashboard saved to it."""

from __future__ import annotations

import json

from app.cli.main import main
from app.config.file import config_path, load_config
from app.dashboard.app import AstraApp
from tests.app.pilot_helpers import idle_app, wait_for
from tests.app.test_dashboard_cli import cli_env
from tests.app.test_memory_cli import data_dir, one_error_line, run

__all__ = ["cli_env", "data_dir"]  # fixtures


def test_path_is_under_the_platform_config_dir(capsys, config_home):
    code, out, _ = run(capsys, "config", "path")
    assert code == 0 and out.strip() == str(config_home / "astra-codebase-memory" / "config.toml")


def test_set_then_show_says_where_each_value_comes_from(capsys, data_dir, tmp_path):
    assert run(capsys, "config", "set", "scope", "team")[0] == 0
    assert run(capsys, "config", "set", "budget_usd", "2.5")[0] == 0
    assert run(capsys, "config", "set", "memory_url", f"sqlite:///{tmp_path}/kept.sqlite3")[0] == 0
    shown = json.loads(run(capsys, "config", "show", "--json")[1])["values"]
    assert shown["scope"] == {"value": "team", "from": "config file"}
    assert shown["budget_usd"] == {"value": 2.5, "from": "config file"}
    assert shown["memory_url"]["value"] == f"sqlite:///{tmp_path}/kept.sqlite3"
    assert shown["theme"]["from"] == "default"
    assert 'scope = "team"' in config_path().read_text()


def test_the_config_files_store_is_used_and_the_environment_overrides_it(
    capsys, data_dir, tmp_path, monkeypatch
):
    run(capsys, "config", "set", "memory_url", f"sqlite:///{tmp_path}/kept.sqlite3")
    assert f"store: sqlite:///{tmp_path}/kept.sqlite3" in run(capsys, "memory", "stats")[1]
    monkeypatch.setenv("ASTRA_MEMORY_URL", f"sqlite:///{tmp_path}/env.sqlite3")
    assert f"store: sqlite:///{tmp_path}/env.sqlite3" in run(capsys, "memory", "stats")[1]
    shown = json.loads(run(capsys, "config", "show", "--json")[1])["values"]
    assert shown["memory_url"]["from"] == "environment ASTRA_MEMORY_URL"


def test_bad_values_are_refused_in_one_line(capsys, data_dir):
    code, _, err = run(capsys, "config", "set", "budget_usd", "-1")
    assert code == 2 and "budget_usd" in one_error_line(err)
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text("colour = 'red'\n")
    code, _, err = run(capsys, "memory", "list")
    assert code == 2 and "unknown key 'colour'" in one_error_line(err)


def test_the_dashboard_takes_scope_and_theme_from_the_config_and_flags_win(capsys, cli_env):
    run(capsys, "config", "set", "scope", "team")
    run(capsys, "config", "set", "theme", "nord")
    assert main([]) == 0
    assert main(["tui", "--scope", "mine"]) == 0
    first, second = cli_env.apps
    assert first.sessions.scope == "team" and first.theme == "nord"
    assert second.sessions.scope == "mine"


async def test_a_theme_chosen_in_the_dashboard_is_saved(settings, url, tmp_path):
    app = idle_app(settings, url)
    app.keep_theme(None, tmp_path / "config.toml")
    async with app.run_test() as pilot:
        # chosen once the browser is up, as the operator would (the command palette): a
        # theme changed while Textual mounts the scope picker can fail that mount
        await wait_for(pilot, lambda: app.screen.query("#scope"))
        app.theme = "ansi-light"
        await wait_for(pilot, lambda: load_config(tmp_path / "config.toml").theme == "ansi-light")


def test_a_theme_chosen_in_the_demo_is_saved(cli_env, monkeypatch):
    """The demo's dashboard forgot it: the next launch started in the old theme."""

    async def choose_a_theme(self: AstraApp, **kwargs) -> int:
        async with self.run_test() as pilot:
            self.theme = "ansi-light"
            await wait_for(pilot, lambda: load_config(config_path()).theme == "ansi-light")
        return 0

    monkeypatch.setattr(AstraApp, "run_async", choose_a_theme)
    main(["demo"])
    assert load_config(config_path()).theme == "ansi-light"


async def test_a_theme_the_config_file_names_that_textual_lacks_is_said_so(settings, url, tmp_path):
    app = idle_app(settings, url)
    app.keep_theme("nosuchtheme", tmp_path / "config.toml")
    async with app.run_test() as pilot:
        await wait_for(pilot, lambda: bool(app._notifications))
        [note] = list(app._notifications)
        assert "nosuchtheme" in note.message and str(tmp_path / "config.toml") in note.message
        assert app.theme == "textual-dark"


def test_set_refuses_a_value_no_command_could_use_and_leaves_the_file(capsys, data_dir, tmp_path):
    run(capsys, "config", "set", "scope", "team")
    before = config_path().read_text()
    for key, value, words in (
        ("memory_url", "bogus://", "unsupported memory URL 'bogus://'"),
        ("memory_url", "sqlite:///:memory:", "sqlite:///:memory: is not supported"),
        ("memory_url", f"sqlite:///{tmp_path}/missing/m.sqlite3", "the folder for the memory"),
        ("theme", "nosuchtheme", "no theme 'nosuchtheme'"),
        ("memory_url", "sqlite:///", "malformed memory URL 'sqlite:///': no database file"),
        ("memory_url", "vectorai://", "malformed memory URL 'vectorai://': expected"),
        ("memory_url", "vectorai://host:notaport", "malformed memory URL 'vectorai://host:"),
        ("scope", "a\nb", "it holds a control character"),  # the file would not load again
    ):
        code, _, err = run(capsys, "config", "set", key, value)
        assert code == 2 and f"bad value for {key}: {words}" in one_error_line(err), err
        assert config_path().read_text() == before
    assert run(capsys, "config", "set", "theme", "nord")[0] == 0


def test_a_relative_memory_url_is_written_as_the_store_it_named(
    capsys, data_dir, tmp_path, monkeypatch
):
    """Written relative, each folder a command ran in would have found its own store."""
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    assert run(capsys, "config", "set", "memory_url", "sqlite:///rel.sqlite3")[0] == 0
    written = f'memory_url = "sqlite:///{tmp_path / "here" / "rel.sqlite3"}"'
    assert written in config_path().read_text()


def test_a_bad_memory_url_in_the_file_names_the_file(capsys, data_dir):
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text('memory_url = "bogus://"\n')
    code, _, err = run(capsys, "memory", "list")
    line = one_error_line(err)
    assert code == 2 and f"memory_url in the config file {config_path()}" in line
    assert "unsupported memory URL 'bogus://'" in line
    shown = json.loads(run(capsys, "config", "show", "--json")[1])["values"]["memory_url"]
    assert shown["value"] == "bogus://" and "unusable" in shown["from"]


def test_a_value_of_bytes_that_are_not_utf8_is_refused_and_the_file_kept(capsys, data_dir):
    """argv's undecodable bytes arrive as lone surrogates: writing them crashed mid-write,
    leaving the config file empty."""
    run(capsys, "config", "set", "theme", "nord")
    before = config_path().read_text()
    code, _, err = run(capsys, "config", "set", "scope", "a\udcff\udcfeb")
    assert code == 2 and "bad value for scope: it holds bytes that are not UTF-8" in one_error_line(
        err
    )
    assert config_path().read_text() == before


def test_show_prints_values_as_text_not_rich_markup(capsys, data_dir):
    assert run(capsys, "config", "set", "scope", "[/]")[0] == 0
    config_path().write_text(config_path().read_text() + 'memory_url = "[bold]x"\n')
    code, out, err = run(capsys, "config", "show")
    assert code == 0 and err == ""
    assert "scope       [/]  (config file)" in out and "[bold]x" in out


def test_a_config_file_that_is_not_utf8_or_toml_is_one_line(capsys, data_dir):
    config_path().parent.mkdir(parents=True, exist_ok=True)
    for content in (b'scope = "\xff"\n', b"scope = \n"):
        config_path().write_bytes(content)
        for argv in (("config", "show"), ("memory", "list"), ("ledger",)):
            code, _, err = run(capsys, *argv)
            assert code == 2 and "cannot read the config file" in one_error_line(err)
