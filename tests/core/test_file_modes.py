"""Files are private (issue 29 item 5): every file the store creates (the database, its
-wal and -shm, the audit trail and manifest, locks, continuities, sidecars, exports) is
created 0600, whatever the process umask lets through."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from anneal_memory import CrystalStore, MemorySession, SporeStore, Store
from anneal_memory.testing import scripted_compress


def _modes(folder: Path) -> dict[str, str]:
    return {p.name: oct(p.stat().st_mode & 0o777) for p in sorted(folder.iterdir())
            if p.is_file()}


@pytest.fixture(autouse=True)
def open_umask():
    old = os.umask(0o022)  # the usual default: 0644 unless the library asks for less
    yield
    os.umask(old)


def test_every_file_a_store_writes_is_the_owners_only(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Store(db) as s:
        ses = MemorySession(s, namespace={"user": "alice"})
        ses.store.record("alice's note about the garden shed", "observation")
        assert ses.wrap(scripted_compress).status == "saved"
        root = MemorySession(s)
        root.store.record("the root's note", "observation")
        assert root.wrap(scripted_compress).status == "saved"
        SporeStore(db).add(type="task", text="a task in the sidecar file")
        CrystalStore(db).crystallize("p", level=4, text="a crystal in the sidecar file")
        s.export_json(tmp_path / "export.json")
        during = _modes(tmp_path)
    after = _modes(tmp_path)
    for name in ("memory.db", "memory.db-wal", "memory.audit.lock", "memory.continuity.md",
                 "memory.spores.json", "memory.crystal.json", "export.json"):
        assert name in during, (name, during)
    assert "memory.audit.jsonl" in after and "memory.audit.manifest.json" in after
    for modes in (during, after):
        assert {n: m for n, m in modes.items() if m != "0o600"} == {}


def test_cli_exports_are_private(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"

    def run(*args: str) -> None:
        r = subprocess.run([sys.executable, "-m", "anneal_memory", "--db", str(db), *args],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr

    run("record", "a note")
    run("export", "-o", str(tmp_path / "e.json"))
    run("export", "-f", "markdown", "-o", str(tmp_path / "e.md"))
    run("export", "-f", "sqlite", "-o", str(tmp_path / "copy.db"))
    assert {n: m for n, m in _modes(tmp_path).items() if m != "0o600"} == {}
