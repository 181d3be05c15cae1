"""Read-only works (issue 52, item 2): a store in a read-only folder, a read-only database
file, and one whose folder is read-only while its write-ahead log still holds committed
pages; every read works (library and CLI), writes are refused naming the real cause.

Tests run as root here, and root ignores mode bits: the read-only folder and file are
read-only bind mounts (``mount --bind`` then ``mount -o remount,ro,bind``), the real
thing (EROFS). Where mounting is not allowed, a non-root user gets the same through mode
bits; root without mount rights cannot make a read-only place at all (skipped, saying so).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_cli
from test_cli import wrapped_store

from anneal_memory import ReadOnlyStoreError, Store, StoreError
from anneal_memory.cli.main import main
from anneal_memory.testing import backend_of

clean_env = test_cli.clean_env


def _mount_ro(src: Path, target: Path) -> bool:
    """Bind ``src`` read-only on ``target`` (a folder or a file); False when not allowed."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    if subprocess.run(["mount", "--bind", str(src), str(target)],
                      capture_output=True).returncode != 0:
        return False
    if subprocess.run(["mount", "-o", "remount,ro,bind", str(target)],
                      capture_output=True).returncode != 0:
        subprocess.run(["umount", str(target)], capture_output=True)
        return False
    return True


def _umount(target: Path) -> None:
    """Unmount, lazily when something still holds the mount (never left mounted)."""
    if subprocess.run(["umount", str(target)], capture_output=True).returncode:
        subprocess.run(["umount", "-l", str(target)], check=True)


@contextlib.contextmanager
def read_only_place(src: Path, target: Path) -> Iterator[Path]:
    """``src`` seen read-only at ``target``: a read-only bind mount, else (not root)
    mode bits; a place that cannot be made read-only here skips the test."""
    if target.is_dir() or src.is_dir():
        target.mkdir(exist_ok=True)
    else:
        target.touch()
    if _mount_ro(src, target):
        try:
            yield target
        finally:
            _umount(target)
        return
    if os.geteuid() == 0:
        pytest.skip("root without mount rights: no read-only place can be made here")
    target.rmdir() if target.is_dir() else target.unlink()
    if src.is_dir():
        shutil.copytree(src, target)
        for p in [target, *target.iterdir()]:
            p.chmod(0o555 if p.is_dir() else 0o444)
    else:
        shutil.copy2(src, target)
        target.chmod(0o444)
    try:
        yield target
    finally:
        for p in [target, *(target.iterdir() if target.is_dir() else [])]:
            p.chmod(0o755 if p.is_dir() else 0o644)


def _writable_at_all(p: Path) -> bool:
    try:
        with open(p, "r+b"):
            return True
    except OSError:
        return False


@pytest.fixture
def ro_store(tmp_path: Path) -> Iterator[Path]:
    """A store with wraps, continuity and episodes, in a read-only folder."""
    src = tmp_path / "src"
    src.mkdir()
    wrapped_store(src / "memory.db")
    with read_only_place(src, tmp_path / "ro") as folder:
        assert not _writable_at_all(folder / "memory.db")
        yield folder / "memory.db"


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_the_library_reads_everything_in_a_read_only_folder(ro_store: Path,
                                                            tmp_path: Path) -> None:
    before = _files(ro_store.parent)
    with Store(ro_store, read_only=True) as s:
        st = s.status()
        assert st.total_episodes == 2 and st.total_wraps == 2
        assert s.recall(keyword="backoff").episodes
        assert "retry_backoff" in (s.load_continuity() or "")
        assert s.verify_content().valid
        out = tmp_path / "out.json"
        s.export_json(out)
        assert len(json.loads(out.read_text())["episodes"]) == 2
        with pytest.raises(ReadOnlyStoreError):
            s.record("no", "observation")
    assert _files(ro_store.parent) == before


@pytest.mark.parametrize("argv", [
    ["status"], ["search", "backoff"], ["recall", "backoff"], ["continuity"], ["verify"],
    ["verify", "--deep"], ["history"], ["stats"], ["episodes"], ["wrap-status"],
    ["--read-only", "status"], ["search", "upload", "--read-only"],
])
def test_every_read_command_works_in_a_read_only_folder(
        ro_store: Path, argv: list[str], capsys: Any, clean_env: None) -> None:
    capsys.readouterr()
    rc = main(["--db", str(ro_store)] + argv)
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "corrupt" not in err and "breaks at entry" not in err
    if argv[-1] == "status":
        assert "(read-only)" in out and "episodes: 2" in out


def test_export_from_a_read_only_folder_writes_to_a_writable_place(
        ro_store: Path, tmp_path: Path, capsys: Any, clean_env: None) -> None:
    for fmt, name in (("json", "e.json"), ("sqlite", "e.db")):
        rc = main(["--db", str(ro_store), "export", "-f", fmt, "-o", str(tmp_path / name)])
        assert rc == 0, capsys.readouterr().err
    with Store(tmp_path / "e.db", read_only=True) as copy:
        assert copy.status().total_episodes == 2


@pytest.mark.parametrize("argv", [["record", "x"], ["prepare-wrap"], ["init"],
                                  ["--read-only", "record", "x"]])
def test_a_write_names_the_real_cause_and_changes_nothing(
        ro_store: Path, argv: list[str], capsys: Any, clean_env: None) -> None:
    before = _files(ro_store.parent)
    capsys.readouterr()
    rc = main(["--db", str(ro_store)] + argv)
    err = capsys.readouterr().err
    assert rc == 1
    assert "corrupt" not in err and "unable to open" not in err, err
    if "--read-only" in argv:
        assert "read-only" in err and "leave --read-only out" in err, err
    else:
        assert str(ro_store) in err and "cannot be written" in err, err
        assert "read-only file system" in err or "permission denied" in err, err
        assert "read it with --read-only" in err
    assert _files(ro_store.parent) == before


def test_a_read_only_folder_whose_log_holds_commits_is_read_whole(tmp_path: Path) -> None:
    """immutable=1 would not read the -wal: the pages there are read from a private copy."""
    src = tmp_path / "src"
    src.mkdir()
    db = src / "memory.db"
    live = tmp_path / "live"
    live.mkdir()
    with Store(live / "memory.db") as s:
        for i in range(5):
            s.record(f"note {i} about the queue", "observation")
        # the writer still has the store open: its last commits are in the -wal only
        assert (live / "memory.db-wal").stat().st_size > 0
        copied = sorted(p.name for p in live.iterdir()
                        if p.is_file() and not p.name.endswith(("-shm", ".lock")))
        for name in copied:
            shutil.copy2(live / name, src / name)
    assert "memory.db-wal" in copied
    raw = sqlite3.connect(db.as_uri() + "?immutable=1", uri=True)
    unseen = raw.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    raw.close()
    assert unseen == 0, "the database file alone already held the episodes: no log to read"
    with read_only_place(src, tmp_path / "ro") as folder:
        with Store(folder / "memory.db", read_only=True) as s:
            assert s.status().total_episodes == 5
            assert backend_of(s).read_only_mode == "copy"
            copy = backend_of(s)._ro_copy
            assert copy and Path(copy).is_dir()
        assert not Path(copy).exists(), "the private copy outlived the store"
        assert sorted(p.name for p in folder.iterdir()) == copied


def test_a_read_only_database_file_in_a_writable_folder(tmp_path: Path, capsys: Any,
                                                        clean_env: None) -> None:
    src = tmp_path / "src.db"
    with Store(src) as s:
        s.record("kept in a read-only file", "observation")
    folder = tmp_path / "w"
    folder.mkdir()
    with read_only_place(src, folder / "memory.db") as db:
        with Store(db, read_only=True) as s:
            assert s.recall(keyword="read-only file").episodes
        with pytest.raises(ReadOnlyStoreError) as info:
            Store(db)
        assert f"the file {str(db)!r} is not writable" in str(info.value)
        capsys.readouterr()
        assert main(["--db", str(db), "status"]) == 0
        assert "(read-only)" in capsys.readouterr().out
        assert main(["--db", str(db), "record", "x"]) == 1
        assert "is not writable" in capsys.readouterr().err


def test_read_only_never_creates_a_store(tmp_path: Path, capsys: Any,
                                         clean_env: None) -> None:
    db = tmp_path / "none.db"
    with pytest.raises(StoreError, match="no store at"):
        Store(db, read_only=True)
    for argv in (["--read-only", "record", "x"], ["--read-only", "init"], ["status"]):
        capsys.readouterr()
        assert main(["--db", str(db)] + argv) == 1
        assert f"no store at {db}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_the_console_falls_back_to_read_only(ro_store: Path) -> None:
    from anneal_memory.ui.server import Console

    with Console(ro_store, port=0) as c:
        assert c.read_only and c.store.read_only
        assert c.store.status().total_episodes == 2


def test_a_writable_file_in_a_read_only_folder(tmp_path: Path, capsys: Any,
                                               clean_env: None) -> None:
    """The file can be written but not its folder, where SQLite must put the -wal and
    -shm: a write names the folder; reads and the console fall back to read-only."""
    src = tmp_path / "src"
    src.mkdir()
    wrapped_store(src / "memory.db")
    rw = tmp_path / "rw.db"
    shutil.copy2(src / "memory.db", rw)
    with read_only_place(src, tmp_path / "ro") as folder:
        db = folder / "memory.db"
        if os.geteuid() != 0 or subprocess.run(["mount", "--bind", str(rw), str(db)],
                                               capture_output=True).returncode:
            pytest.skip("a writable file over a read-only folder needs bind mounts")
        try:
            assert os.access(db, os.W_OK) and not os.access(folder, os.W_OK)
            with pytest.raises(ReadOnlyStoreError) as info:
                Store(db)
            assert f"its folder {str(folder)!r} is not writable" in str(info.value)
            capsys.readouterr()
            assert main(["--db", str(db), "status"]) == 0
            assert "(read-only)" in capsys.readouterr().out
            from anneal_memory.ui.server import Console

            with Console(db, port=0) as c:
                assert c.read_only and c.store.status().total_wraps == 2
        finally:
            _umount(db)
