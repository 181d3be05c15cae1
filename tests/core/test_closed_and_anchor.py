"""A closed Store answers with the library's StoreError on every call (never the raw
sqlite3.ProgrammingError), and AuditTrail.verify takes the anchor forms its docstrings
list: the AuditHead that AuditTrail.head() returns and the JSON of `audit head --json`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from anneal_memory import AuditTrail, Store, StoreError, prepare_wrap


@pytest.mark.parametrize("call", [
    lambda s: s.record("later", "observation"),
    lambda s: s.recall(keyword="first"),
    lambda s: s.status(),
    lambda s: s.get("0" * 12),
    lambda s: s.load_continuity(),
    lambda s: s.export(),
    lambda s: s.delete("0" * 12),
    lambda s: s.scoped({"user": "alice"}).record("x", "observation"),
    lambda s: prepare_wrap(s),
    lambda s: s.namespaces(),
])
def test_a_closed_store_raises_store_error(tmp_path: Path, call) -> None:
    s = Store(tmp_path / "m.db")
    s.record("first fact", "observation")
    s.close()
    with pytest.raises(StoreError, match="is closed"):
        call(s)
    with Store(tmp_path / "m.db") as again:  # nothing changed
        assert again.status().total_episodes == 1


def _store(tmp_path: Path) -> Path:
    db = tmp_path / "m.db"
    with Store(db) as s:
        for i in range(5):
            s.record(f"fact {i}", "observation")
    return db


def test_verify_takes_the_audit_head_object(tmp_path: Path) -> None:
    db = _store(tmp_path)
    head = AuditTrail.head(db)
    assert AuditTrail.verify(db, anchor=head).valid
    forged = type(head)(seq=head.seq, hash="f" * 64, ts=head.ts)
    assert not AuditTrail.verify(db, anchor=forged).valid


def test_verify_takes_the_json_text_of_audit_head(tmp_path: Path) -> None:
    db = _store(tmp_path)
    text = subprocess.run([sys.executable, "-m", "anneal_memory", "--db", str(db), "audit",
                           "head", "--json"], capture_output=True, text=True,
                          check=True).stdout
    assert AuditTrail.verify(db, anchor=text).valid
    assert AuditTrail.verify(db, anchor=json.dumps(json.loads(text))).valid
    bad = json.dumps({**json.loads(text), "hash": "0" * 64})
    assert not AuditTrail.verify(db, anchor=bad).valid
