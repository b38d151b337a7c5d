"""Acceptance tests for token expiry."""

from datetime import UTC, datetime, timedelta

from app.tokens import AccessToken

ISSUED = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def test_token_payload_without_offset_is_utc():
    token = AccessToken.from_payload({"token": "abc", "expires_at": "2030-01-01T13:00:00"})
    assert token.expires_at == ISSUED + timedelta(hours=1)
    assert token.remaining(ISSUED) == timedelta(hours=1)


def test_token_expires_at_its_expiry_time():
    token = AccessToken("abc", expires_at=ISSUED + timedelta(hours=1))
    assert not token.is_expired(ISSUED)
    assert token.is_expired(ISSUED + timedelta(hours=1))


def test_fresh_token_is_not_expired_now():
    token = AccessToken("abc", expires_at=datetime.now(UTC) + timedelta(hours=1))
    assert not token.is_expired()


def test_old_token_is_expired_now():
    token = AccessToken("abc", expires_at=datetime.now(UTC) - timedelta(minutes=5))
    assert token.is_expired()
