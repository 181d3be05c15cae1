"""The Store's continuity side: the continuity text, the section schema, and the wrap
and baton policy helpers. Kept apart from the episode facade to keep each module small."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._fileio import sidecar_path
from .errors import ValidationError, WrapInProgressError
from .types import WrapCancelReceipt

if TYPE_CHECKING:
    from .audit import AuditTrail
    from .storage.base import Backend


#: meta key prefix of a committed text whose file is not written yet
PENDING_BLOB = "pending_blob:"
CONTINUITY_LOCK = ".continuity.lock"


def flush_pending_blobs(backend: Backend, names: Sequence[str] | None = None) -> list[str]:
    """Write each committed-but-unwritten text to its file (atomic replace, under the
    file's lock), then drop the pending copy if no newer save replaced it meanwhile.
    Returns the names written. Run after a save commits and whenever a store is opened."""
    rows = backend.q("SELECT key FROM meta WHERE substr(key, 1, ?) = ?",
                     (len(PENDING_BLOB), PENDING_BLOB))
    done = []
    for (key,) in rows:
        name = key[len(PENDING_BLOB):]
        if names is not None and name not in names:
            continue
        def current(_old: str | None, k: str = key) -> str | None:
            return backend.get_meta(k)  # re-read under the lock: the newest committed text

        written = backend.update_blob(name, current, lock=CONTINUITY_LOCK)
        if written is not None:
            with backend.transaction():
                backend.q("DELETE FROM meta WHERE key=? AND value=?", (key, written))
            done.append(name)
    return done


class ContinuityMixin:
    """Methods of Store that concern the continuity file and the wrap policy."""

    path: Path
    _backend: Backend
    _audit: AuditTrail
    _schema_override: list[Any] | None

    if TYPE_CHECKING:
        def _write(self) -> contextlib.AbstractContextManager[None]: ...
        def audit_event(self, event: str, data: dict[str, Any], actor: str = "operator") -> None: ...

    # ------------------------------------------------------------------ continuity
    @property
    def continuity_path(self) -> Path:
        return sidecar_path(self.path, ".continuity.md")

    def _continuity_blob(self) -> str:
        # The backend names the text by its sidecar suffix (a scoped view has its own).
        return self.continuity_path.name[len(Path(self.path).stem):]

    def load_continuity(self) -> str | None:
        """The current continuity text, or None before the first wrap. A saved text
        whose file has not been written yet (a crash right after the commit) is the
        current one: the database is the record."""
        name = self._continuity_blob()
        pending = self._backend.get_meta(PENDING_BLOB + name)
        return pending if pending is not None else self._backend.read_blob(name)

    def _write_continuity_file(self, text: str) -> None:
        self._backend.write_blob(self._continuity_blob(), text, lock=CONTINUITY_LOCK)

    def _stage_continuity(self, text: str) -> None:
        """Inside the save's transaction: the new text commits with the wrap; the file
        follows after the commit (``_flush_continuity``), or when the store is next opened."""
        self._backend.set_meta(PENDING_BLOB + self._continuity_blob(), text)

    def _flush_continuity(self) -> None:
        flush_pending_blobs(self._backend, [self._continuity_blob()])

    def save_continuity(self, text: str) -> str:
        """Raw continuity write, bypassing every check of the wrap pipeline. Prefer
        ``validated_save_continuity``."""
        if not isinstance(text, str):
            raise ValidationError("continuity text must be a string")
        self._write_continuity_file(text)
        self.audit_event("continuity_saved", {"chars": len(text), "raw": True,
                                              "content_hash": self._audit.hash_content(text)},
                         actor="operator")
        return str(self.continuity_path)

    @property
    def section_schema(self) -> list[dict[str, Any]]:
        from .continuity.schema import DEFAULT_SCHEMA

        if self._schema_override is not None:
            return [dict(s) for s in self._schema_override]
        raw = self._backend.get_meta("section_schema")
        if raw is None:
            return [dict(s) for s in DEFAULT_SCHEMA]
        from .continuity.schema import validate_schema
        from .errors import SchemaError

        try:
            return [dict(x) for x in validate_schema(json.loads(raw))]
        except (ValueError, SchemaError) as exc:
            # fail closed: a wrap never silently falls back to an ungated schema
            raise SchemaError(f"the store's persisted section schema is corrupt ({exc}): "
                              "set it again with set_section_schema / anneal-memory set-schema") from None

    def set_section_schema(self, schema: Sequence[Mapping[str, Any]]) -> None:
        """Persist a validated section schema; refused while a wrap is open."""
        from .continuity.schema import validate_schema

        validated = validate_schema(schema)
        with self._write():
            if self._backend.open_wrap() is not None:
                raise WrapInProgressError(
                    "a wrap is open: save or cancel it (wrap-cancel) before changing the schema")
            self._backend.set_meta("section_schema", json.dumps(validated))
            self._audit.append("schema_set", {"headings": [s["heading"] for s in validated]},
                               actor="operator")

    # ------------------------------------------------------------------ wrap helpers
    def consolidate_requires_baton(self) -> bool:
        """True when the store's policy gates every wrap behind the baton (a method, as in
        1.0.2; ``status().consolidate_requires_baton`` is the same flag)."""
        return self._backend.get_meta("consolidate_requires_baton") == "1"

    def set_consolidate_requires_baton(self, required: bool) -> None:
        """Store policy: every wrap must come from the session holding the baton."""
        with self._write():
            self._backend.set_meta("consolidate_requires_baton", "1" if required else "0")
            self._audit.append("baton_policy", {"required": bool(required)}, actor="operator")

    def wrap_cancelled(self, *, wrap_token: str | None = None, session_id: str | None = None,
                       force: bool = False, expect_token: str | None = None,
                       expect_partial: bool = False) -> WrapCancelReceipt:
        """Abandon the open wrap; its episodes go to the next one. The receipt is falsy
        when none was open. ``expect_token`` is 1.0.2's name for ``wrap_token``."""
        from .wrap.lifecycle import cancel_wrap

        return cancel_wrap(self, wrap_token=expect_token or wrap_token,  # type: ignore[arg-type]
                           session_id=session_id, force=force, expect_partial=expect_partial)

    def add_drift_probe(self, *, pattern: str | None = None, min_level: int | None = None,
                        fact: str | None = None, section: str | None = None,
                        note: str | None = None) -> int:
        """Declare something that must survive consolidation; returns the probe id."""
        from .immune.probes import add_probe

        return add_probe(self, pattern=pattern, min_level=min_level,  # type: ignore[arg-type]
                         fact=fact, section=section, note=note)

    def list_drift_probes(self, *, include_retired: bool = False) -> list[dict[str, Any]]:
        """The declared probes with their last verdicts (retired ones are removed, so
        ``include_retired`` changes nothing)."""
        from .immune.probes import list_probes

        return list_probes(self)  # type: ignore[arg-type]

    def retire_drift_probe(self, probe_id: int) -> bool:
        """Stop checking a probe; False when there is none with that id."""
        from .immune.probes import retire_probe

        return retire_probe(self, probe_id)  # type: ignore[arg-type]

    def drift_status(self) -> dict[str, Any]:
        """Each probe's verdict at the last save and that save's graduation worklist."""
        from .immune.probes import drift_status

        return drift_status(self)  # type: ignore[arg-type]

    def pattern_grounding(self) -> dict[str, list[dict[str, Any]]]:
        """For each named pattern, the episodes that grounded each rung it earned."""
        return {n: rec.get("grounding", []) for n, rec in self._backend.pattern_history().items()}

