"""Bytes on disk per episode spent on the audit trail, at a few store sizes.

``python scripts/audit_bytes.py [--mode batch|single] N...`` loads N episodes of the bench
corpus (``bench/workload.py``, about 128 characters each) into a fresh SQLite store, closes
it and prints one JSON line per size: the audit files (active, sealed parts, manifest), the
database pages of ``audit_log`` and ``audit_hashes`` (``dbstat``), and the whole folder,
each per episode. It measures whichever ``anneal_memory`` the interpreter imports.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import workload as wl  # noqa: E402

import anneal_memory as am  # noqa: E402


def measure(n: int, mode: str, locomo: str) -> dict[str, Any]:
    vocab = wl.Vocabulary.from_texts(wl.locomo_texts(locomo))
    tmp = tempfile.mkdtemp(prefix="audit-bytes-")
    try:
        db = os.path.join(tmp, "bench.db")
        store = am.Store(db, project_name="bench")
        items = list(wl.episodes(vocab, n))
        if mode == "batch":
            for i in range(0, n, 1000):
                store.record_many(items[i:i + 1000])
        else:
            for item in items:
                store.record(**item)
        store.close()
        files = wl.dir_bytes(tmp)
        conn = sqlite3.connect(db)
        pages = dict(conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        conn.close()
        audit_files = sum(v for k, v in files.items() if ".audit." in k)
        audit_db = sum(v for k, v in pages.items() if k in ("audit_log", "audit_hashes"))
        return {"episodes": n, "mode": mode, "package": am.__file__,
                "audit_files_per_episode": round(audit_files / n, 1),
                "audit_db_per_episode": round(audit_db / n, 1),
                "audit_per_episode": round((audit_files + audit_db) / n, 1),
                "free_pages": free,
                "store_per_episode": round(sum(files.values()) / n, 1)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sizes", nargs="*", type=int, default=[1000, 10000])
    p.add_argument("--mode", choices=("batch", "single"), default="batch")
    p.add_argument("--locomo-dir", default=os.environ.get(  # as bench/run.py
        "ANNEAL_BENCH_LOCOMO", str(ROOT.parent / "shared" / "data" / "locomo")))
    args = p.parse_args()
    for n in args.sizes:
        print(json.dumps(measure(n, args.mode, args.locomo_dir)))


if __name__ == "__main__":
    main()
