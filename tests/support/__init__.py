"""Test helpers shared by unit, integration and benchmark code (not tests themselves)."""
