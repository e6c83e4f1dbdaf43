"""Scoring: the Arena score (``shared/spec/scoring.md``), as plain classes plus their registration.

Nothing is registered yet: the scorer arrives with model cards and the leaderboard.
"""
