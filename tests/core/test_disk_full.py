"""Disk full and I/O errors lose nothing, on every write path (issue 52, item 3).

Each path runs in a child process under ``resource.setrlimit(RLIMIT_FSIZE)`` (SIGXFSZ
ignored, so a write past the limit fails with EFBIG as a full disk fails with ENOSPC:
the real write, mid-stream, not a mock). The limit sweeps from a few KB to past the
store's size, so the failure lands in every file the call writes (the database, its
write-ahead log, the continuity file, the audit files, an export, a new store). Each
failed call must raise a typed error, leave the store and its files as they were (its
content, its continuity, its audit chain valid, no stray file), and the next call,
without the limit, must work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from test_cli import continuity, wrapped_store

from anneal_memory import AuditTrail, Store, prepare_wrap

CHILD = textwrap.dedent("""
    import json, resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    code = sys.argv[2]
    if code.startswith("cli:"):
        from anneal_memory.cli.main import main
        sys.exit(main(json.loads(code[4:])))
    from anneal_memory import AnnealMemoryError
    try:
        exec(code)
    except AnnealMemoryError as exc:
        print(f"anneal-memory: error: {exc}", file=sys.stderr)
        sys.exit(1)
""")

#: file-size limits swept per path: from under one page to past a small store's size
LIMITS = (2_000, 9_000, 30_000, 70_000, 110_000, 160_000, 260_000, 600_000)


def _child(limit: int, code: str, cwd: Path) -> tuple[int, str]:
    env = {**os.environ, "ANNEAL_OPERATOR": "1"}
    env.pop("ANNEAL_MEMORY_DB", None)
    p = subprocess.run([sys.executable, "-c", CHILD, str(limit), code], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stderr


def _cli(argv: list[str]) -> str:
    return "cli:" + json.dumps(argv)


def state(folder: Path, db: Path, outputs: tuple[str, ...] = ()) -> dict[str, Any]:
    """What must not change when a call fails: the store's content as its export shows
    it, its continuity, wraps and audit chain (valid, same head), and the files beside
    it by name and, for the continuity and audit files, by content."""
    with Store(db, read_only=True) as s:
        doc = s.export()
        doc.pop("exported_at", None)
        text = s.load_continuity()
        wraps = s.status().total_wraps
        content = s.verify_content()
    res = AuditTrail.verify(db)
    files = {p.name: p.read_bytes() if p.name.endswith((".md", ".jsonl", ".json")) else None
             for p in folder.iterdir() if p.is_file() and p.name not in outputs
             and not p.name.endswith(("-wal", "-shm", ".lock"))}
    return {"doc": json.dumps(doc, sort_keys=True, default=str), "continuity": text,
            "wraps": wraps, "content_ok": content.valid, "audit_ok": res.valid,
            "audit_entries": res.total_entries, "files": files}


def _template(tmp_path: Path, *, open_wrap: bool = False) -> Path:
    """A store with wraps, continuity, a namespace and (``open_wrap``) a prepared wrap
    whose token is in ``token.txt``; closed so its audit files hold every entry."""
    base = tmp_path / "template"
    base.mkdir()
    db = base / "memory.db"
    wrapped_store(db)
    with Store(db) as s:
        for i in range(40):
            s.record(f"note {i}: the upload queue retried with backoff " + "x" * 300,
                     "observation")
        s.scoped({"user": "alice"}).record("alice prefers short answers", "context")
        if open_wrap:
            w = prepare_wrap(s)
            (tmp_path / "token.txt").write_text(w["wrap_token"])
            (tmp_path / "today.txt").write_text(w["package"]["today"])
    return db


def wrapped(folder: Path) -> Path:
    folder.mkdir()
    wrapped_store(folder / "memory.db")
    return folder / "memory.db"


def _sweep(tmp_path: Path, code: Any, *, open_wrap: bool = False,
           outputs: tuple[str, ...] = (), then: Any = None) -> dict[str, int]:
    """Run ``code(folder, db)`` (the child's code) on a fresh copy of the template at
    every limit; check each failure lost nothing and the next call works. Returns how
    many limits failed and succeeded (a sweep where nothing failed tests nothing)."""
    template = _template(tmp_path, open_wrap=open_wrap)
    seen = {"failed": 0, "succeeded": 0}
    for limit in LIMITS:
        folder = tmp_path / f"at-{limit}"
        shutil.copytree(template.parent, folder)
        db = folder / template.name
        before = state(folder, db, outputs)
        rc, err = _child(limit, code(folder, db), folder)
        if rc == 0:
            seen["succeeded"] += 1
            continue
        seen["failed"] += 1
        assert rc == 1, f"limit {limit}: not a clean refusal (rc {rc}): {err[-2000:]}"
        assert err.startswith("anneal-memory: error: "), err[-2000:]
        assert "Traceback" not in err and "internal error" not in err, err[-2000:]
        assert "corrupt" not in err and "damaged" not in err, err[-2000:]
        assert any(w in err.lower() for w in ("disk", "space", "too large", "full")), err
        after = state(folder, db, outputs)
        assert after == before, f"limit {limit}: the failed call changed the store ({err})"
        for name in outputs:  # an output the call was making is not left half-written
            out = folder / name
            assert not out.exists(), f"limit {limit}: a torn {name} was left behind"
            assert not list(folder.glob(f".{name}.*")), f"limit {limit}: a temp file remains"
        assert not list(folder.glob("*.tmp")) and not list(folder.glob(".*.tmp")), \
            f"limit {limit}: temp files left: {list(folder.glob('.*.tmp'))}"
        rc, err = _child(2**40, code(folder, db), folder)  # the next call works
        assert rc == 0, f"limit {limit}: the next call failed: {err[-2000:]}"
        if then is not None:
            then(folder, db)
        assert AuditTrail.verify(db).valid
    assert seen["failed"] >= 2, f"the sweep hit too few failures to test anything: {seen}"
    return seen


def test_record_keeps_every_acknowledged_episode(tmp_path: Path) -> None:
    """The reference: records up to the failure are kept (each was acknowledged), the
    failing one raises StoreError, the chain stays valid, the next record works."""
    template = _template(tmp_path)
    code = textwrap.dedent("""
        from anneal_memory import Store
        with Store("memory.db") as s:
            for i in range(60):
                print(s.record(f"streamed note {i} " + "y" * 2000, "observation").id,
                      flush=True)
    """)
    failed = 0
    for limit in LIMITS:
        folder = tmp_path / f"at-{limit}"
        shutil.copytree(template.parent, folder)
        env = {**os.environ}
        env.pop("ANNEAL_MEMORY_DB", None)
        p = subprocess.run([sys.executable, "-c", CHILD, str(limit), code], cwd=folder,
                           env=env, capture_output=True, text=True, timeout=120)
        acked = p.stdout.split()
        if p.returncode == 0:
            continue
        failed += 1
        assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr[-2000:]
        with Store(folder / "memory.db") as s:
            assert len(s.get_many(acked)) == len(acked), f"limit {limit}: lost an episode"
            s.record("the next call works", "observation")
        assert AuditTrail.verify(folder / "memory.db").valid
    assert failed >= 2


def test_a_wrap_save(tmp_path: Path) -> None:
    def code(folder: Path, db: Path) -> str:
        token = (tmp_path / "token.txt").read_text()
        today = (tmp_path / "today.txt").read_text()
        text = continuity("deadbeef", 1, today, "retry backoff fixed flaky upload").replace(
            "- fixing uploads\n", "- fixing uploads\n" + "- the queue is stable now\n" * 300)
        return textwrap.dedent(f"""
            from anneal_memory import Store, validated_save_continuity
            with Store("memory.db") as s:
                validated_save_continuity(s, {text!r}, wrap_token={token!r},
                                          allow_unlinked=True)
        """)

    def saved(folder: Path, db: Path) -> None:
        with Store(db, read_only=True) as s:
            assert "the queue is stable now" in (s.load_continuity() or "")
            assert s.status().total_wraps == 3

    _sweep(tmp_path, code, open_wrap=True, then=saved)


def test_an_export(tmp_path: Path) -> None:
    def ok(folder: Path, db: Path) -> None:
        assert len(json.loads((folder / "out.json").read_text())["episodes"]) >= 40

    _sweep(tmp_path, lambda folder, db: _cli(["--db", "memory.db", "export", "-o", "out.json"]),
           outputs=("out.json",), then=ok)


def test_an_export_over_an_older_one_keeps_the_older_one(tmp_path: Path) -> None:
    template = _template(tmp_path)
    old = template.parent / "out.json"
    old.write_text('{"older": true}\n')
    failed = 0
    for limit in LIMITS[:5]:
        rc, err = _child(limit, _cli(["--db", "memory.db", "export", "-o", "out.json"]),
                         template.parent)
        if rc:
            failed += 1
            assert rc == 1 and "Traceback" not in err, err
            assert old.read_text() == '{"older": true}\n'
    assert failed


def test_an_export_to_sqlite(tmp_path: Path) -> None:
    def ok(folder: Path, db: Path) -> None:
        with Store(folder / "copy.db", read_only=True) as c:
            assert c.status().total_wraps == 2
        assert AuditTrail.verify(folder / "copy.db").valid

    _sweep(tmp_path, lambda folder, db: _cli(["--db", "memory.db", "export", "-f", "sqlite",
                                              "-o", "copy.db"]),
           outputs=("copy.db", "copy.audit.jsonl", "copy.continuity.md"), then=ok)


def test_migrate_store(tmp_path: Path) -> None:
    def ok(folder: Path, db: Path) -> None:
        with Store(folder / "moved.db", read_only=True) as c:
            assert c.status().total_wraps == 2

    _sweep(tmp_path, lambda folder, db: _cli(["migrate-store", "memory.db", "moved.db"]),
           outputs=("moved.db", "moved.audit.jsonl"), then=ok)


def test_import_restore_into_a_new_store(tmp_path: Path) -> None:
    def code(folder: Path, db: Path) -> str:
        return _cli(["--db", "restored.db", "import", "--restore", "../backup.json"])

    def ok(folder: Path, db: Path) -> None:
        with Store(folder / "restored.db", read_only=True) as r:
            assert r.status().total_wraps == 2 and r.load_continuity()

    with Store(wrapped(tmp_path / "b"), read_only=True) as s:
        (tmp_path / "backup.json").write_text(s.export_json())
    _sweep(tmp_path, code, outputs=("restored.db", "restored.audit.jsonl",
                                    "restored.continuity.md"), then=ok)


def test_erase(tmp_path: Path) -> None:
    def code(folder: Path, db: Path) -> str:
        return textwrap.dedent("""
            from anneal_memory import Store
            with Store("memory.db") as s:
                ids = [e.id for e in s.recall(keyword="upload", limit=50).episodes]
                s.erase(ids)
        """)

    def ok(folder: Path, db: Path) -> None:
        with Store(db, read_only=True) as s:
            assert not s.recall(keyword="upload").episodes

    _sweep(tmp_path, code, then=ok)


@pytest.mark.parametrize("limit", [2_000])
def test_the_sweep_itself_sees_a_loss(tmp_path: Path, limit: int) -> None:
    """The harness can fail: a call that writes a file outside any transaction and then
    hits the limit leaves a change that ``state`` sees."""
    template = _template(tmp_path)
    before = state(template.parent, template)
    code = textwrap.dedent("""
        from pathlib import Path
        Path("memory.continuity.md").write_text("# torn\\n" + "z" * 10_000)
    """)
    rc, _err = _child(limit, code, template.parent)
    assert rc != 0
    assert state(template.parent, template) != before
