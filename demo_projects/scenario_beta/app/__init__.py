"""Scenario beta: routes audit and notification events to named channels."""
