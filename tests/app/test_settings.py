"""Settings from the environment and a `.env` file: precedence, empty values, bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config.settings import DEFAULT_MODEL, Secret, Settings
from app.errors import CommandError

KEY = "sk-live-test-0123456789abcdefghij"


def test_environment_wins_over_the_env_file_and_empty_means_unset(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text(
        f"OPENAI_API_KEY={KEY}\nASTRA_MODEL=from-file\nASTRA_BUDGET_USD=2.5\n"
        "# a comment\nASTRA_DATA_DIR='/srv/astra data'\n",
        encoding="utf-8",
    )
    settings = Settings.from_environment(
        {"ASTRA_MODEL": "from-env", "ASTRA_MEMORY_URL": ""}, env_file=env_file
    )
    assert settings.astra_model == "from-env"
    assert settings.astra_budget_usd == 2.5
    assert settings.astra_data_dir == Path("/srv/astra data")
    assert settings.astra_memory_url is None
    assert settings.memory_url == "sqlite:////srv/astra data/memory.sqlite3"
    assert settings.openai_api_key is not None
    assert settings.openai_api_key.get_secret_value() == KEY


def test_an_empty_variable_leaves_the_env_files_value_and_names_match_in_any_case(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("ASTRA_BUDGET_USD=5\nastra_model=lower-case-name\n", encoding="utf-8")
    settings = Settings.from_environment({"ASTRA_BUDGET_USD": ""}, env_file=env_file)
    assert settings.astra_budget_usd == 5.0
    assert settings.astra_model == "lower-case-name"


def test_defaults_without_any_configuration(tmp_path):
    settings = Settings.from_environment({}, env_file=tmp_path / "missing.env")
    assert settings.openai_api_key is None
    assert settings.astra_model == DEFAULT_MODEL
    assert settings.astra_budget_usd is None
    assert settings.memory_url.endswith("memory.sqlite3")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ASTRA_BUDGET_USD", "lots"),
        ("ASTRA_BUDGET_USD", "-1"),
        ("ASTRA_BUDGET_USD", "nan"),
        ("ASTRA_PRICE_INPUT_PER_MILLION", "inf"),
        ("ASTRA_PRICE_CACHED_INPUT_PER_MILLION", "-2"),
    ],
)
def test_a_bad_number_names_its_variable(name, value):
    with pytest.raises(CommandError) as caught:
        Settings.from_environment({name: value}, env_file=None)
    assert caught.value.code == 2
    assert name in str(caught.value) and value in str(caught.value)


def test_the_key_never_shows_in_a_repr():
    settings = Settings(openai_api_key=Secret(KEY))
    assert KEY not in repr(settings) and KEY not in str(settings.openai_api_key)


def test_the_minimum_relevance_is_a_label_and_defaults_to_possible():
    assert Settings.from_environment({}, env_file=None).astra_min_relevance == "possible"
    given = Settings.from_environment({"ASTRA_MIN_RELEVANCE": "Strong"}, env_file=None)
    assert given.astra_min_relevance == "strong"
    with pytest.raises(CommandError, match="ASTRA_MIN_RELEVANCE"):
        Settings.from_environment({"ASTRA_MIN_RELEVANCE": "great"}, env_file=None)
