"""A kill at each step of a wrap save leaves the file and the database agreeing: the old
continuity with the wrap still open, or the new one with the wrap saved and audited."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from anneal_memory import AuditTrail, Store, prepare_wrap, validated_save_continuity
from anneal_memory.storage.roles import Meta
from anneal_memory.testing import backend_of

from wraphelp import doc

CHILD = textwrap.dedent("""
    import os, sys
    import anneal_memory.store as store_mod
    from anneal_memory import Store, prepare_wrap, validated_save_continuity
    from anneal_memory.audit import AuditTrail
    db, point, new_text = sys.argv[1], sys.argv[2], sys.argv[3]

    def die_after(obj, name):
        orig = getattr(obj, name)
        def wrapped(*a, **k):
            out = orig(*a, **k)
            os._exit(9)
        setattr(obj, name, wrapped)

    def die_before(obj, name):
        def wrapped(*a, **k):
            os._exit(9)
        setattr(obj, name, wrapped)

    with Store(db) as s:
        s.record("the second session decided to cache the quotes", "decision")
        w = prepare_wrap(s)
        if point == "staged":            # new file staged (fsynced), not committed
            die_after(store_mod.Store, "_stage_continuity")
        elif point == "committed":       # committed, audit not mirrored, file still staged
            die_before(AuditTrail, "after_commit")
        elif point == "mirrored":        # committed and mirrored, file still staged
            die_before(store_mod.Store, "_flush_continuity")
        elif point == "temp-written":    # committed, the staged file about to be renamed
            die_before(os, "replace")
        elif point == "file-written":    # renamed into place (the record still names it)
            die_after(os, "replace")
        validated_save_continuity(s, new_text, wrap_token=w["wrap_token"])
    print("saved")
""")

POINTS = ["staged", "committed", "mirrored", "temp-written", "file-written", "none"]


@pytest.mark.parametrize("point", POINTS)
def test_a_kill_at_each_save_step_leaves_file_and_database_agreeing(tmp_path: Path,
                                                                    point: str) -> None:
    db = tmp_path / "m.db"
    old, new = doc(context="- the OLD continuity"), doc(context="- the NEW continuity")
    with Store(db) as s:
        s.record("the first session chose SQLite", "decision")
        w = prepare_wrap(s)
        validated_save_continuity(s, old, wrap_token=w["wrap_token"])
    proc = subprocess.run([sys.executable, "-c", CHILD, str(db), point, new],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == (0 if point == "none" else 9), proc.stderr
    # the file as the kill left it, before any reconciliation
    on_disk = (tmp_path / "m.continuity.md").read_text("utf-8")
    for leftover in tmp_path.glob(".m.*.tmp"):  # make a killed writer's copy look old
        os.utime(leftover, (time.time() - 3600, time.time() - 3600))
    with Store(db) as s:
        status = s.status()
        text = s.load_continuity()
        saved = status.total_wraps == 2
        assert saved is (point != "staged"), point  # each kill lands where it says
        assert text == (new if saved else old), point
        assert (tmp_path / "m.continuity.md").read_text("utf-8") == text
        assert status.wrap_in_progress is (not saved)
        assert status.episodes_since_wrap == (0 if saved else 1)
        events = [e["event"] for e in s.audit_trail.entries()]
        assert events.count("continuity_saved") == (2 if saved else 1)
        assert Meta(backend_of(s)).get_meta("pending_blob:.continuity.md") is None
        assert not list(tmp_path.glob(".m.*.tmp"))
        if not saved:  # the open wrap can still be saved, and nothing was lost
            validated_save_continuity(s, new)  # the wrap still open (its token is optional)
            assert s.load_continuity() == new
    assert AuditTrail.verify(db).valid
    if point in ("committed", "mirrored", "temp-written"):
        assert on_disk == old  # the kill came before the file: reconciling wrote it
