"""The operator CLI: ``anneal-memory [--db PATH] [--project-name NAME] COMMAND ...``."""

from __future__ import annotations

from collections.abc import Sequence

from .main import main as _main


def main(argv: Sequence[str] | None = None) -> int:
    """The ``anneal-memory`` command; with ``OTEL_TRACES_EXPORTER`` (or another exporter
    variable) set and the OpenTelemetry SDK installed, its memory operations are traced."""
    from .. import tracing

    tracing.configure_from_env()
    return _main(argv)


__all__ = ["main"]
