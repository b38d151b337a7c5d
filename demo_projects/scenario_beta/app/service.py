"""Channel names and the registry of who listens on each channel."""

from __future__ import annotations


def normalize_channel_name(name: str) -> str:
    """Return the canonical form of a channel or category name.

    Canonical names are lower-case with words joined by ``_``, so ``"Audit-Log"``,
    ``"audit log"`` and ``" AUDIT_LOG "`` all name the channel ``"audit_log"``.
    """
    return "_".join(name.strip().lower().split())


class ChannelRegistry:
    """The channels known to the router, keyed by their canonical name."""

    def __init__(self) -> None:
        self._subscribers: dict[str, list[str]] = {}

    def subscribe(self, channel: str, subscriber: str) -> None:
        """Add ``subscriber`` to ``channel``; the channel is created on first use."""
        key = normalize_channel_name(channel)
        self._subscribers.setdefault(key, []).append(subscriber)

    def subscribers(self, channel: str) -> list[str]:
        """Return the subscribers of ``channel`` in subscription order."""
        return list(self._subscribers.get(normalize_channel_name(channel), []))

    def channels(self) -> list[str]:
        """Return the canonical names of all channels, sorted."""
        return sorted(self._subscribers)
