"""``python -m anneal_memory.eval``: run the governed memory's five deterministic
experiments and write JSON, Markdown and a redacted JSONL trace.

Exit status 0 when every safety count is zero, 1 when one is not, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ._fileio import atomic_write_text

FILES = ("governance-eval.json", "governance-eval.md", "governance-trace.jsonl")


def run(output: str | Path) -> dict[str, object]:
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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="anneal-memory eval",
                                description="Deterministic evaluation of governed memory.")
    p.add_argument("--output", "-o", default="anneal-memory-eval",
                   help="folder for the reports (default: ./anneal-memory-eval)")
    try:
        args = p.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    doc = run(args.output)
    for name in FILES:
        print(Path(args.output) / name)
    if not doc["safety_ok"]:
        print("anneal-memory eval: a safety count is not zero: see governance-eval.md",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
