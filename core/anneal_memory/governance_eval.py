"""Run the governed memory's five deterministic experiments and write JSON, Markdown
and a redacted JSONL trace: ``run(output)``, public as ``anneal_memory.eval.run``. The
command line is ``anneal-memory eval`` (``python -m anneal_memory.eval`` runs the same
command): exit status 0 when every safety count is zero, 1 when one is not, 2 on a usage
error. Both call this module, which sits below the CLI and that package.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._fileio import atomic_write_text

if TYPE_CHECKING:
    from .governance.report import EvalDocument

FILES = ("governance-eval.json", "governance-eval.md", "governance-trace.jsonl")


def run(output: str | Path) -> EvalDocument:
    """Run the experiments and write the three reports into ``output``."""
    from .governance.experiments import run_all
    from .governance.report import document, to_json, to_jsonl, to_markdown

    results, trace = run_all()
    doc = document(results)
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in zip(FILES, (to_json(doc), to_markdown(doc), to_jsonl(trace))):
        atomic_write_text(out / name, text)
    return doc
