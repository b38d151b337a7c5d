"""Scenario zeta: invoice totals for a billing service."""
