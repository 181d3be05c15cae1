"""Run the governed memory's five deterministic experiments and write JSON, Markdown
and a redacted JSONL trace: ``run(output)``. The command line is ``anneal-memory eval``
(``python -m anneal_memory.eval`` runs the same command): exit status 0 when every safety
count is zero, 1 when one is not, 2 on a usage error.

The work is done in :mod:`anneal_memory.governance_eval`, below the CLI: this package is
its public name and its ``python -m`` entry, both above the CLI, so no import runs back up.
"""

from __future__ import annotations

from ..governance_eval import FILES, run

__all__ = ["FILES", "run"]
