"""docs/observability.md's Python blocks run as written, with the SDK they configure (the
core docs test leaves a group that imports opentelemetry to this suite)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "core"))  # the docs runner the core docs test uses
# the documents whose Python blocks configure an OpenTelemetry SDK (the core docs test
# checks this list)
OTEL_DOCS = ["docs/observability.md"]


@pytest.mark.parametrize("doc", OTEL_DOCS)
def test_tracing_blocks_run_as_written(doc: str, tmp_path: Path) -> None:
    from docblocks import groups, run

    res = run(groups()[(doc, "python")], "python", tmp_path / "py")
    assert res.returncode == 0, f"{doc}:\n{res.stdout}\n{res.stderr}"
    assert "update_memory Harbour record" in res.stdout
    res = run(groups()[(doc, "shell")], "shell", tmp_path / "sh")
    assert res.returncode == 0, f"{doc}:\n{res.stdout}\n{res.stderr}"
    assert res.stdout.split() == ["1"]  # the CLI's one record, one update_memory span
