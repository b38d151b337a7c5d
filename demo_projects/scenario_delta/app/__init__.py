"""Scenario delta: access tokens that expire."""
