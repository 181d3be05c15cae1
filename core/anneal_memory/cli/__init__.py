"""The operator CLI: ``anneal-memory [--db PATH] [--project-name NAME] COMMAND ...``."""

from .main import main

__all__ = ["main"]
