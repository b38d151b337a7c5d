"""Acceptance tests for channel names and the channel registry."""

from app.service import ChannelRegistry, normalize_channel_name


def test_hyphenated_name_is_normalized():
    assert normalize_channel_name("Audit-Log") == "audit_log"


def test_spaced_name_is_normalized():
    assert normalize_channel_name("  Billing Alerts ") == "billing_alerts"


def test_subscribers_are_found_under_any_spelling():
    registry = ChannelRegistry()
    registry.subscribe("Audit-Log", "security-team")
    assert registry.subscribers("audit log") == ["security-team"]


def test_channels_are_listed_by_canonical_name():
    registry = ChannelRegistry()
    registry.subscribe("Deploys", "ops")
    registry.subscribe("Billing Alerts", "finance")
    assert registry.channels() == ["billing_alerts", "deploys"]
