"""Access tokens issued by the auth service, with an expiry time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True)
class AccessToken:
    """A bearer token and the moment it stops being valid (timezone-aware, UTC)."""

    value: str
    expires_at: datetime

    @classmethod
    def from_payload(cls, payload: dict[str, str]) -> AccessToken:
        """Build a token from an auth payload such as
        ``{"token": "abc", "expires_at": "2030-01-01T00:00:00+00:00"}``.

        An ``expires_at`` without an offset is taken to be UTC.
        """
        expires_at = datetime.fromisoformat(payload["expires_at"])
        if expires_at.tzinfo is None:
            expires_at = expires_at.replace(tzinfo=UTC)
        return cls(value=payload["token"], expires_at=expires_at)

    def is_expired(self, now: datetime | None = None) -> bool:
        """Whether the token has expired at ``now`` (default: the current time)."""
        now = now or datetime.utcnow()
        return now >= self.expires_at

    def remaining(self, now: datetime) -> timedelta:
        """Time left before expiry at ``now``; zero once the token has expired."""
        return max(self.expires_at - now, timedelta(0))
