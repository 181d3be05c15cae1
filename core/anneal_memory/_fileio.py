"""Durable file primitives: atomic replace and cross-process locks.

Every sidecar (continuity, crystal, spores, baton, audit manifest) is written through
``atomic_write_text``: a unique temp file in the same folder, fsync, ``os.replace``, then
fsync of the folder, so a reader sees the old file or the new one and never a torn one.
The two halves are ``stage_bytes`` and ``publish_staged``: the wrap's save stages the
continuity before its database commit and publishes it after.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

try:  # POSIX
    import fcntl

    _HAVE_FLOCK = True
except ImportError:  # pragma: no cover - Windows
    _HAVE_FLOCK = False


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename in it survives a crash (no-op where unsupported)."""
    try:
        fd = os.open(str(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path | str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    target = Path(path)
    publish_staged(stage_bytes(target, data), target)


def stage_bytes(path: Path | str, data: bytes, *, suffix: str = ".tmp",
                durable_name: bool = False) -> Path:
    """The first half of an atomic replace: ``data`` in a new, uniquely named file
    beside ``path``, fsynced but not yet visible as ``path``. Returns the staged file;
    ``publish_staged`` completes the replace. Splitting the two lets a caller commit a
    record of the staged file between them; ``durable_name`` then fsyncs the folder too,
    so the staged file is found under its name after a crash (a file's fsync alone does
    not promise its folder entry)."""
    target = Path(path)
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=str(target.parent))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if durable_name:
            fsync_dir(target.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return Path(os.path.abspath(tmp))  # absolute on every Python (3.11 keeps dir relative)


def publish_staged(staged: Path | str, path: Path | str, *, sync_dir: bool = True) -> None:
    """The second half: rename the staged file over ``path`` and (``sync_dir``) fsync
    the folder, so the rename survives a crash. A reader sees the old file or the new
    one, never a torn one. The staged file is removed if the rename fails. A caller
    whose committed record of the staged file redoes a lost rename may skip the sync."""
    target = Path(path)
    try:
        os.replace(staged, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise
    if sync_dir:
        fsync_dir(target.parent)


def atomic_write_text(path: Path | str, text: str) -> None:
    """Replace ``path`` with UTF-8 ``text`` atomically and durably."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path | str, obj: Any) -> None:
    """Replace ``path`` with ``obj`` as indented JSON, atomically and durably."""
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


#: the mode of every file the library creates: the owner's only, as memory is private
PRIVATE_MODE = 0o600


def create_private(path: Path | str) -> bool:
    """Create ``path`` empty with PRIVATE_MODE when it does not exist (a file SQLite then
    opens takes its mode, and gives it to its -wal and -shm files). True if created."""
    try:
        fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def open_append_private(path: Path | str) -> Any:
    """``open(path, "a")`` whose new file is created with PRIVATE_MODE."""
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_MODE)
    return os.fdopen(fd, "a", encoding="utf-8")


@contextlib.contextmanager
def file_lock(lock_path: Path | str, *, shared: bool = False) -> Iterator[None]:
    """Hold an advisory cross-process lock on ``lock_path`` (created if missing).

    POSIX flock; where flock is unavailable the block runs unlocked (single writer only).
    """
    p = Path(lock_path)
    fd = os.open(str(p), os.O_RDWR | os.O_CREAT, PRIVATE_MODE)
    try:
        if _HAVE_FLOCK:
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        if _HAVE_FLOCK:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def sidecar_path(db_path: Path | str, suffix: str) -> Path:
    """``<stem><suffix>`` beside the database: memory.db -> memory.crystal.json."""
    p = Path(db_path)
    return p.with_name(p.stem + suffix)
