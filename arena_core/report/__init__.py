"""Renderers: the only code that lays out tables and documents for people."""

from arena_core.report.text import render_json, render_table

__all__ = ["render_json", "render_table"]
