"""Scenario gamma: pagination for a listing API."""
