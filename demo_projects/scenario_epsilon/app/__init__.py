"""Scenario epsilon: shopping carts for a checkout service."""
