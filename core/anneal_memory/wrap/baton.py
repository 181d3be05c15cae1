"""The single-consolidator gate: one claimed session may wrap a store.

The baton is a blob of the store (``.baton.json``): for SQLite a sidecar file beside
the database, written atomically under a lock and never part of the database; for
PostgreSQL a row of the store's blob table, so every host sees the same holder.
Each function takes the store's location (a path, a ``postgresql://`` URL, or
``store.path``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, TypedDict, Union

from .._fileio import sidecar_path
from .._seam import registered, roles_of
from ..clock import now_iso
from ..errors import BatonError, SidecarError, StoreError, ValidationError
from ..storage.blobs import SidecarBlobs
from ..storage.pg_location import pg_dsn, redact

_NAME, _LOCK = ".baton.json", ".baton.lock"


class Located(Protocol):
    """A Store or a scoped view: where it is, and its namespace's tag ("" for the root)."""

    @property
    def path(self) -> Path: ...

    @property
    def ns_tag(self) -> str: ...


#: what the baton functions take: a store's location, or the store (or view) itself
Target = Union[str, Path, Located]


#: one claim or release in the baton's history (``from``: who held it before)
BatonEvent = TypedDict("BatonEvent", {"holder": Union[str, None], "at": str,
                                      "from": Union[str, None], "took": bool})


class BatonStatus(TypedDict):
    """``baton_status``: the holder (None: nobody), when it was claimed, the last ten
    claims and releases."""

    holder: str | None
    claimed_at: str | None
    history: list[BatonEvent]


class BatonClaim(TypedDict):
    """``claim_baton``: the new holder and the one it replaced (None: nobody)."""

    holder: str
    previous: str | None


def _resolve(target: Target, ns: str) -> tuple[str | Path, str]:
    """A store location, or a Store / scoped view (whose own namespace's baton is meant)."""
    if isinstance(target, (str, Path)):
        return target, ns
    return target.path, ns or target.ns_tag


def _name(ns: str) -> str:
    """The baton's blob: one per namespace (``ns`` is a view's tag, "" for the root)."""
    return f".ns-{ns}{_NAME}" if ns else _NAME


def baton_path(db_path: str | Path, ns: str = "") -> Path:
    return sidecar_path(db_path, _name(ns))


@contextlib.contextmanager
def _blobs(db_path: str | Path) -> Iterator[Any]:
    dsn = pg_dsn(db_path)
    if dsn is None:
        yield SidecarBlobs(db_path)
        return
    from .. import storage

    with storage.open(dsn) as db:
        yield db.roles().meta


def _where(db_path: str | Path, ns: str = "") -> str:
    dsn = pg_dsn(db_path)
    return (f"the baton record in {redact(dsn)}" if dsn
            else f"the baton file {str(baton_path(db_path, ns))!r}")


def _parse(raw: str | None, where: str) -> dict[str, Any]:
    if raw is None:
        return {"holder": None, "claimed_at": None, "history": []}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise SidecarError(f"{where} is unreadable ({exc}): delete it and "
                           "claim the baton again") from None
    if not isinstance(data, dict):
        raise SidecarError(f"{where} is malformed: delete it and claim again")
    data.setdefault("history", [])
    return data


def _read(db_path: str | Path, ns: str = "") -> dict[str, Any]:
    try:
        with _blobs(db_path) as blobs:
            raw = blobs.read_blob(_name(ns))
    except OSError as exc:
        raise SidecarError(f"{_where(db_path, ns)} is unreadable ({exc}): delete it and "
                           "claim the baton again") from None
    return _parse(raw, _where(db_path, ns))


def _dump(d: dict[str, Any]) -> str:
    return json.dumps(d, indent=2, ensure_ascii=False) + "\n"


def _read_target(target: Target, ns: str) -> dict[str, Any]:
    """The baton of ``target``. An open PostgreSQL Store or view reads its own blob table
    (a read with each status and wrap: a second backend opened for it cost ~24 statements);
    a location, a SQLite store (its sidecar file) or a closed store read by location."""
    db_path, ns = _resolve(target, ns)
    if (not isinstance(target, (str, Path)) and pg_dsn(db_path) is not None
            and registered(target)):
        try:
            raw = roles_of(target).meta.read_blob(_name(ns))
        except StoreError:  # closed since: its location still names the store
            pass
        else:
            return _parse(raw, _where(db_path, ns))
    return _read(db_path, ns)


def baton_status(db_path: Target, ns: str = "") -> BatonStatus:
    """Who holds the baton (``holder`` None when nobody does)."""
    d = _read_target(db_path, ns)
    return {"holder": d.get("holder"), "claimed_at": d.get("claimed_at"),
            "history": d.get("history", [])[-10:]}


def baton_holder(db_path: Target, ns: str = "") -> str | None:
    holder = _read_target(db_path, ns).get("holder")
    return holder if isinstance(holder, str) else None


def _check_session(session_id: Any) -> str:
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > 200:
        raise ValidationError("a session id is a non-empty name of at most 200 characters")
    return session_id.strip()


def claim_baton(db_path: Target, session_id: str, *, take: bool = False,
                ns: str = "") -> BatonClaim:
    """Designate ``session_id`` as the consolidating session. Taking the baton from
    another session needs ``take=True``."""
    db_path, ns = _resolve(db_path, ns)
    sid = _check_session(session_id)
    where = _where(db_path, ns)
    previous: dict[str, Any] = {}

    def claim(raw: str | None) -> str:
        d = _parse(raw, where)
        holder = previous["holder"] = d.get("holder")
        if holder and holder != sid and not take:
            raise BatonError(f"the baton is held by session {holder!r}: take it explicitly "
                             "(take=True)")
        d["history"].append({"holder": sid, "at": now_iso(), "from": holder,
                             "took": bool(holder and holder != sid)})
        d["holder"], d["claimed_at"] = sid, now_iso()
        return _dump(d)

    with _blobs(db_path) as blobs:
        blobs.update_blob(_name(ns), claim, lock=_LOCK)
    return {"holder": sid, "previous": previous["holder"]}


def release_baton(db_path: Target, session_id: str | None = None, *,
                  ns: str = "") -> bool:
    db_path, ns = _resolve(db_path, ns)
    where = _where(db_path, ns)

    def release(raw: str | None) -> str | None:
        d = _parse(raw, where)
        if d.get("holder") is None or (session_id is not None and d["holder"] != session_id):
            return None
        d["history"].append({"holder": None, "at": now_iso(), "from": d["holder"], "took": False})
        d["holder"], d["claimed_at"] = None, None
        return _dump(d)

    with _blobs(db_path) as blobs:
        return blobs.update_blob(_name(ns), release, lock=_LOCK) is not None
