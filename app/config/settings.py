"""Configuration from the environment (and a `.env` file), built once by the CLI.

The `.env` file is the config dir's (`astra-memory config path` shows the folder), or the one
named with `--env-file`; never the current folder's, where a checkout under test could plant
one that sends the key to another server or raises the budget.

The names are public contracts (see README): OPENAI_API_KEY, OPENAI_BASE_URL, ASTRA_MODEL,
ASTRA_MEMORY_URL, ASTRA_DATA_DIR, ASTRA_BUDGET_USD, ASTRA_EMBEDDER (onnx|torch), plus
ASTRA_EMBEDDING_MODEL_PATH and
ASTRA_PRICE_INPUT_PER_MILLION / ASTRA_PRICE_CACHED_INPUT_PER_MILLION /
ASTRA_PRICE_OUTPUT_PER_MILLION (USD, for unpriced models), ASTRA_RESPONSE_STORAGE=off,
ASTRA_MIN_RELEVANCE (strong|possible|weak), ASTRA_STALE_AFTER (red sessions before a
delivered record is possibly stale).

Plain Python rather than pydantic-settings: the dashboard reads its settings before its
first frame, and importing pydantic alone would take longer than that whole frame.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from app.errors import CommandError

if TYPE_CHECKING:
    from memory.embedding.embedder import Embedder

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-6-astra"


class Secret:
    """A value that never shows in a repr, a log line or an error message."""

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__


def budget_usd(value: object) -> float:
    """A spending limit: a finite number of US dollars above 0 (nan, inf, 0 and -1 are not),
    checked here for ASTRA_BUDGET_USD, --budget-usd and the config file alike."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("expected a number of US dollars")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"expected a number of US dollars, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"must be a finite number of US dollars, more than 0, got {value!r}")
    return number


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected a number of US dollars, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"must be 0 or more, got {text!r}")
    return value


def _on_or_off(text: str) -> str:
    if text.lower() not in ("on", "off"):
        raise ValueError(f"expected on or off, got {text!r}")
    return text.lower()


def _set_values(variables: Mapping[str, str | None]) -> dict[str, str]:
    """The non-empty values, by upper-cased name."""
    return {name.upper(): value for name, value in variables.items() if value}


def _env_file_values(path: Path) -> Mapping[str, str | None]:
    """The `.env` file's variables; a file that is not UTF-8 text, or cannot be read, is one
    error naming it (exit 2)."""
    from dotenv import dotenv_values  # only where there is a file: 2 ms of every launch

    try:
        return dotenv_values(path, encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CommandError(
            f"cannot read the .env file {path}: byte {exc.start} is not UTF-8 text", 2
        ) from None
    except OSError as exc:
        raise CommandError(f"cannot read the .env file {path}: {exc.strerror or exc}", 2) from None


def _embedder(text: str) -> str:
    if text.lower() not in ("onnx", "torch"):
        raise ValueError(f"expected onnx or torch, got {text!r}")
    return text.lower()


def relevance_label(text: str) -> str:
    if text.lower() not in ("strong", "possible", "weak"):
        raise ValueError(f"expected strong, possible or weak, got {text!r}")
    return text.lower()


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"expected a whole number of sessions, got {text!r}") from None
    if value < 1:
        raise ValueError(f"must be 1 or more, got {text!r}")
    return value


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("astra-codebase-memory"))


@dataclass(frozen=True)
class Settings:
    openai_api_key: Secret | None = None
    openai_base_url: str = DEFAULT_BASE_URL
    astra_model: str = DEFAULT_MODEL
    astra_memory_url: str | None = None
    astra_data_dir: Path = field(default_factory=_default_data_dir)
    astra_budget_usd: float | None = None
    astra_embedder: str = "onnx"
    astra_embedding_model_path: Path | None = None
    astra_price_input_per_million: float | None = None
    astra_price_cached_input_per_million: float | None = None
    astra_price_output_per_million: float | None = None
    astra_response_storage: str = "on"  # "off": organisations without response storage
    astra_min_relevance: str = "possible"  # weakest match label delivered to the model
    astra_stale_after: int = 3  # red sessions after delivery: the record is possibly stale

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] | None = None, env_file: Path | None = None
    ) -> Settings:
        """The environment over the `.env` file. Names match in any case; an empty value
        counts as unset, so it leaves the `.env` file's value in force.

        A value that cannot be used raises CommandError (exit 2) naming the variable.
        """
        given: dict[str, str] = {}
        if env_file is not None and env_file.is_file():
            given |= _set_values(_env_file_values(env_file))
        given |= _set_values(os.environ if environ is None else environ)
        values: dict[str, object] = {}
        for name in (f.name for f in fields(cls)):
            text = given.get(name.upper())
            if text is None:
                continue
            try:
                values[name] = PARSERS.get(name, str)(text)
            except ValueError as exc:
                raise CommandError(f"bad configuration in {name.upper()}: {exc}", 2) from None
        return cls(**values)

    @property
    def api_key(self) -> str:
        """OPENAI_API_KEY's value, "" when unset."""
        return self.openai_api_key.get_secret_value() if self.openai_api_key else ""

    @property
    def data_dir(self) -> Path:
        return self.astra_data_dir.expanduser()

    def embedder(self) -> Embedder:
        """The embedder of ASTRA_EMBEDDER's kind, loaded once per process: the one sessions
        search with, so every command (doctor and smoke too) checks and uses the same."""
        from memory.embedding.embedder import (
            shared_embedder,  # light to import; the model loads later
        )

        return shared_embedder(
            self.astra_embedding_model_path, kind=self.astra_embedder, data_dir=self.data_dir
        )

    @property
    def memory_url(self) -> str:
        """ASTRA_MEMORY_URL, or the embedded store inside the data dir."""
        return self.astra_memory_url or f"sqlite:///{self.data_dir / 'memory.sqlite3'}"


PARSERS: dict[str, Callable[[str], object]] = {
    "openai_api_key": Secret,
    "astra_data_dir": Path,
    "astra_embedder": _embedder,
    "astra_embedding_model_path": Path,
    "astra_budget_usd": budget_usd,
    "astra_price_input_per_million": _non_negative,
    "astra_price_cached_input_per_million": _non_negative,
    "astra_price_output_per_million": _non_negative,
    "astra_response_storage": _on_or_off,
    "astra_min_relevance": relevance_label,
    "astra_stale_after": _at_least_one,
}
