"""Placeholder: filled in by its issue."""

from . import app  # noqa: F401
