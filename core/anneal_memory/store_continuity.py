"""The Store's continuity side: the continuity text, the section schema, and the wrap
and baton policy helpers. Kept apart from the episode facade to keep each module small."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._fileio import file_lock, publish_staged, sidecar_path, stage_bytes
from ._lazy import sha256_hex
from ._seam import roles_of, unit_of
from ._unit import ERASED_BLOB, PENDING_BLOB, STAGED_BLOB, continuity_blob
from ._wrap_age import (  # noqa: F401  (re-exported)
    STALE_POLICY_KEY,
    STALE_WRAP_NOTICE,
    stale_policy,
    stale_wrap,
    wrap_age,
)
from .continuity.schema import SectionSpec
from .errors import ValidationError, WrapInProgressError
from .probes_db import DriftProbe, DriftStatus, add_probe, drift_status, list_probes, retire_probe
from .storage.rows import Grounding as Grounding  # public here as it was
from .types import WrapCancelReceipt
from .wrap_state import cancel_wrap

if TYPE_CHECKING:
    from ._unit import Units
    from .audit import AuditTrail
    from .storage.base import Scope
    from .storage.roles import Meta as MetaRepo


CONTINUITY_LOCK = ".continuity.lock"
_STAGED_SUFFIX = ".staged.tmp"


def _sha(data: bytes) -> str:
    return sha256_hex(data)


def _staged_record(meta: MetaRepo, name: str) -> tuple[str, str] | None:
    """(sha256, staged file name) of the blob's last committed save, or None."""
    raw = meta.get_meta(STAGED_BLOB + name)
    if not raw or " " not in raw:
        return None
    sha, staged = raw.split(" ", 1)
    return sha, staged


def _staged_text(path: Path, record: tuple[str, str] | None) -> str | None:
    """The committed text still waiting in its staged file (None once it is published,
    or when the staged file is not whole)."""
    if record is None:
        return None
    try:
        data = path.with_name(record[1]).read_bytes()
    except OSError:  # published (renamed away), or never written
        return None
    return data.decode("utf-8") if _sha(data) == record[0] else None


def staged_files(meta: MetaRepo) -> set[str]:
    """Names of the staged files committed saves point at (never stale leftovers)."""
    rows = meta.meta_with_prefix(STAGED_BLOB)
    return {v.split(" ", 1)[1] for _k, v in rows if v and " " in v}


def publish_blob(meta: MetaRepo, db_path: str | Path, name: str, *,
                 own: Path | None = None) -> bool:
    """Put the blob's last committed save in place: rename its staged file over the
    blob's file, under the continuity lock, re-reading the record there, so a slower
    writer never puts an older save over a newer one. ``own`` is the caller's staged
    file, removed when a newer save replaced it. True when a file was renamed."""
    path = sidecar_path(db_path, name)
    with file_lock(sidecar_path(db_path, CONTINUITY_LOCK)):
        record = _staged_record(meta, name)
        staged = path.with_name(record[1]).absolute() if record else None
        if own is not None:
            own = own.absolute()
        if own is not None and own != staged:
            with contextlib.suppress(OSError):
                own.unlink()  # a newer save committed after ours: it is the one to publish
        if staged is None or (staged != own and _staged_text(path, record) is None):
            return False  # nothing waiting (or not whole: a save never committed it)
        try:  # no folder sync: until the rename is on disk the record redoes it at open
            publish_staged(staged, path, sync_dir=False)
        except FileNotFoundError:  # another process opening the store put it in place
            return False
        return True


def flush_pending_blobs(meta: MetaRepo, transaction: Callable[[], AbstractContextManager[None]],
                        db_path: Path | None, names: Sequence[str] | None = None) -> list[str]:
    """Complete every save that committed but did not reach its file (a crash right
    after the commit): publish staged files (beside the SQLite database at ``db_path``;
    None for a server database), and write the texts earlier builds kept in the
    database (then drop that copy), each in a ``transaction()`` of its own. Run
    whenever a store is opened. Returns the names written."""
    done = []
    for key in [k for k, _v in meta.meta_rows() if k.startswith(ERASED_BLOB)]:
        name = key[len(ERASED_BLOB):]
        meta.delete_blob(name, lock=CONTINUITY_LOCK)
        with transaction():
            meta.set_meta(key, None)
    if db_path is not None:  # sidecar files beside a SQLite database
        for key, _v in meta.meta_with_prefix(STAGED_BLOB):
            name = key[len(STAGED_BLOB):]
            if (names is None or name in names) and publish_blob(meta, db_path, name):
                done.append(name)
    for key, _v in meta.meta_with_prefix(PENDING_BLOB):
        name = key[len(PENDING_BLOB):]
        if names is not None and name not in names:
            continue
        def current(_old: str | None, k: str = key) -> str | None:
            return meta.get_meta(k)  # re-read under the lock: the newest committed text

        written = meta.update_blob(name, current, lock=CONTINUITY_LOCK)
        if written is not None:
            with transaction():
                meta.delete_meta_if(key, written)
            done.append(name)
    return done


class ContinuityMixin:
    """Methods of Store that concern the continuity file and the wrap policy."""

    path: Path
    dsn: str | None
    _units: Units
    _audit: AuditTrail
    #: a read_only store's schema as it was given (validated when the store was opened)
    _schema_override: list[SectionSpec] | None
    scope: Scope

    if TYPE_CHECKING:
        def audit_event(self, event: str, data: dict[str, Any], actor: str = "operator") -> None: ...

    # ------------------------------------------------------------------ continuity
    @property
    def continuity_path(self) -> Path:
        return sidecar_path(self.path, ".continuity.md")

    def _continuity_blob(self) -> str:
        return continuity_blob(self.path, self.continuity_path)

    def load_continuity(self) -> str | None:
        """The current continuity text, or None before the first wrap. A saved text
        whose file is not in place yet (a crash right after the commit) is the current
        one: the commit is the record."""
        name = self._continuity_blob()
        pending = roles_of(self).meta.get_meta(PENDING_BLOB + name)  # kept by an earlier build
        if pending is not None:
            return pending
        text = roles_of(self).meta.read_blob(name)
        if self.dsn is None:  # the last save's staged file is gone once it is in place
            waiting = _staged_text(self.continuity_path, _staged_record(roles_of(self).meta, name))
            if waiting is not None:
                return waiting
        return text

    def _write_continuity_file(self, text: str) -> None:
        roles_of(self).meta.write_blob(self._continuity_blob(), text, lock=CONTINUITY_LOCK)

    def _stage_continuity(self, text: str) -> Path | None:
        """Inside the save's transaction, its last write. Beside a SQLite database the
        new file is staged (written and fsynced with its folder entry, not yet visible)
        and the transaction records it, so the file costs no second commit:
        ``_flush_continuity`` renames it into place after the commit, and the next open
        redoes that rename if a crash lost it. Durable when the commit is: the text is
        on disk under a name the committed record holds. A PostgreSQL store's text is a
        row that commits with the save. Returns the staged file."""
        name = self._continuity_blob()
        roles_of(self).meta.set_meta(PENDING_BLOB + name, None)
        if self.dsn is not None:
            roles_of(self).meta.write_blob(name, text, lock=CONTINUITY_LOCK)
            return None
        data = text.encode("utf-8")
        staged = stage_bytes(self.continuity_path, data, suffix=_STAGED_SUFFIX, durable_name=True)
        try:
            roles_of(self).meta.set_meta(STAGED_BLOB + name, f"{_sha(data)} {staged.name}")
        except BaseException:
            self._discard_staged(staged)
            raise
        return staged

    def _flush_pending_files(self) -> list[str]:
        """Put in place every committed continuity whose file is not written yet."""
        return flush_pending_blobs(roles_of(self).meta, self._units.plain,
                                   None if self.dsn is not None else self.path)

    def _flush_continuity(self, staged: Path | None = None) -> None:
        """After the save committed: put its staged file in place."""
        if staged is not None:
            publish_blob(roles_of(self).meta, self.path, self._continuity_blob(), own=staged)

    @staticmethod
    def _discard_staged(staged: Path | None) -> None:
        """The save did not commit: its staged file goes."""
        if staged is not None:
            with contextlib.suppress(OSError):
                staged.unlink()

    @contextlib.contextmanager
    def _staging(self) -> Iterator[list[Path | None]]:
        """Around a save's transaction: collects the file it stages, and removes that
        file when the transaction does not commit."""
        slot: list[Path | None] = []
        try:
            yield slot
        except BaseException:
            for staged in slot:
                self._discard_staged(staged)
            raise

    def save_continuity(self, text: str) -> str:
        """Raw continuity write, bypassing every check of the wrap pipeline. Prefer
        ``validated_save_continuity``."""
        if not isinstance(text, str):
            raise ValidationError("continuity text must be a string")
        name = self._continuity_blob()
        with unit_of(self) as tx:  # the raw text replaces any save still waiting for its file
            tx.meta.set_meta(PENDING_BLOB + name, None)
            tx.meta.set_meta(STAGED_BLOB + name, None)
            self._write_continuity_file(text)
            self.audit_event("continuity_saved", {"chars": len(text), "raw": True,
                                                  "content_hash": self._audit.hash_content(text)},
                             actor="operator")
        return str(self.continuity_path)

    @property
    def section_schema(self) -> list[SectionSpec]:
        from .continuity.schema import DEFAULT_SCHEMA

        if self._schema_override is not None:
            return [s.copy() for s in self._schema_override]
        from .storage.common import ns_meta_key

        # a namespace's own schema (set through its view), else the store's
        raw = roles_of(self).meta.get_meta(ns_meta_key("section_schema", self.scope))
        if raw is None and self.scope.owner is not None:
            raw = roles_of(self).meta.get_meta("section_schema")
        if raw is None:
            return [s.copy() for s in DEFAULT_SCHEMA]
        from .continuity.schema import validate_schema
        from .errors import SchemaError

        try:
            return validate_schema(json.loads(raw))  # new dicts: the caller's to change
        except (ValueError, SchemaError) as exc:
            # fail closed: a wrap never silently falls back to an ungated schema
            raise SchemaError(f"the store's persisted section schema is corrupt ({exc}): "
                              "set it again with set_section_schema / anneal-memory set-schema") from None

    def set_section_schema(self, schema: Sequence[Mapping[str, object]]) -> None:
        """Persist a validated section schema; refused while a wrap is open. Through a
        namespace view it is that namespace's schema (the others keep theirs); at the
        root it is the store's, the schema of every namespace without its own."""
        from .continuity.schema import validate_schema
        from .storage.common import ns_meta_key

        validated = validate_schema(schema)
        with unit_of(self) as tx:
            if tx.wraps.open_wrap() is not None:
                raise WrapInProgressError(
                    "a wrap is open: save or cancel it (wrap-cancel) before changing the schema")
            tx.meta.set_meta(ns_meta_key("section_schema", self.scope),
                             json.dumps(validated))
            tx.audit.append("schema_set", {"headings": [s["heading"] for s in validated]},
                            actor="operator")

    # ------------------------------------------------------------------ wrap helpers
    def consolidate_requires_baton(self) -> bool:
        """True when the store's policy gates every wrap behind the baton (a method, as in
        1.0.2; ``status().consolidate_requires_baton`` is the same flag)."""
        return roles_of(self).meta.get_meta("consolidate_requires_baton") == "1"

    def set_consolidate_requires_baton(self, required: bool) -> None:
        """Store policy: every wrap must come from the session holding the baton."""
        with unit_of(self) as tx:
            tx.meta.set_meta("consolidate_requires_baton", "1" if required else "0")
            tx.audit.append("baton_policy", {"required": bool(required)}, actor="operator")

    def set_stale_wrap_after(self, seconds: float | None) -> None:
        """Save the stale-wrap policy for every host of this store: a wrap open longer
        than ``seconds`` (60 and up) is taken over by the next ``prepare_wrap`` of its
        namespace, audited as ``wrap_taken_over``, its episodes going to the new wrap.
        None turns it off (the default: only wrap_cancel ends a wrap)."""
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(
                seconds, (int, float)) or not 60 <= seconds <= 10**9):
            raise ValidationError("stale_wrap_after must be seconds from 60 up, or None")
        with unit_of(self) as tx:
            tx.meta.set_meta(STALE_POLICY_KEY, None if seconds is None else str(seconds))
            self.audit_event("wrap_policy", {"stale_wrap_after": seconds}, actor="operator")

    def wrap_cancelled(self, *, wrap_token: str | None = None, session_id: str | None = None,
                       force: bool = False, expect_token: str | None = None,
                       expect_partial: bool = False) -> WrapCancelReceipt:
        """Abandon the open wrap; its episodes go to the next one. The receipt is falsy
        when none was open. ``expect_token`` is 1.0.2's name for ``wrap_token``."""
        return cancel_wrap(self, wrap_token=expect_token or wrap_token,  # type: ignore[arg-type]
                           session_id=session_id, force=force, expect_partial=expect_partial)

    def add_drift_probe(self, *, pattern: str | None = None, min_level: int | None = None,
                        fact: str | None = None, section: str | None = None,
                        note: str | None = None) -> int:
        """Declare something that must survive consolidation; returns the probe id."""
        return add_probe(self, pattern=pattern, min_level=min_level,  # type: ignore[arg-type]
                         fact=fact, section=section, note=note)

    def list_drift_probes(self, *, include_retired: bool = False) -> list[DriftProbe]:
        """The declared probes with their last verdicts (retired ones are removed, so
        ``include_retired`` changes nothing)."""
        return list_probes(self)  # type: ignore[arg-type]

    def retire_drift_probe(self, probe_id: int) -> bool:
        """Stop checking a probe; False when there is none with that id."""
        return retire_probe(self, probe_id)  # type: ignore[arg-type]

    def drift_status(self) -> DriftStatus:
        """Each probe's verdict at the last save and that save's graduation worklist."""
        return drift_status(self)  # type: ignore[arg-type]

    def pattern_grounding(self) -> dict[str, list[Grounding]]:
        """For each named pattern, the episodes that grounded each rung it earned."""
        return {n: rec.grounding for n, rec in roles_of(self).wraps.pattern_history().items()}

