"""Configuration from the environment (and a `.env` file), built once by the CLI.

The names are public contracts (see README): OPENAI_API_KEY, OPENAI_BASE_URL, ASTRA_MODEL,
ASTRA_MEMORY_URL, ASTRA_DATA_DIR, ASTRA_BUDGET_USD, plus ASTRA_EMBEDDING_MODEL_PATH and
ASTRA_PRICE_INPUT_PER_MILLION / ASTRA_PRICE_OUTPUT_PER_MILLION (USD, for unpriced models).
"""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from agent.budget import Price

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-6-astra"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_ignore_empty=True, extra="ignore")

    openai_api_key: SecretStr | None = None
    openai_base_url: str = DEFAULT_BASE_URL
    astra_model: str = DEFAULT_MODEL
    astra_memory_url: str | None = None
    astra_data_dir: Path = Field(
        default_factory=lambda: Path(platformdirs.user_data_dir("astra-codebase-memory"))
    )
    astra_budget_usd: float | None = Field(default=None, ge=0)
    astra_embedding_model_path: Path | None = None
    astra_price_input_per_million: float | None = Field(default=None, ge=0)
    astra_price_output_per_million: float | None = Field(default=None, ge=0)

    @property
    def price_override(self) -> Price | None:
        """Prices given in the environment, for a model whose price we do not know."""
        given = (self.astra_price_input_per_million, self.astra_price_output_per_million)
        if None in given:
            return None
        return Price(*given)

    @property
    def data_dir(self) -> Path:
        return self.astra_data_dir.expanduser()

    @property
    def memory_url(self) -> str:
        """ASTRA_MEMORY_URL, or the embedded store inside the data dir."""
        return self.astra_memory_url or f"sqlite:///{self.data_dir / 'memory.sqlite3'}"
