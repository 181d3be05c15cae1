"""The long-term tiers (crystals, spores, the outcome log) kept in the store's database.

Given a Store (or a scoped view), ``CrystalStore``, ``SporeStore`` and ``OutcomeLog`` keep
their documents in the store's item collections, per namespace, on SQLite and PostgreSQL
alike, so many hosts on one server share them and ``migrate-store`` copies them. Given a
path they keep the per-host JSON sidecars they always had.

The first time the root store's tier is opened while its sidecar file exists and the
database holds nothing yet, the file is imported in one transaction, read back and
compared, and then renamed ``<name>.imported`` (kept, never deleted).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ._fileio import sidecar_path
from ._seam import registered, unit_of
from .errors import SidecarError

if TYPE_CHECKING:
    from ._unit import Facade
    from .items import ItemCollection

    class ItemStore(Facade, Protocol):
        """A Store (or view) with its item collections."""

        def items(self, collection: str) -> ItemCollection: ...

#: the collection holding one JSON document per tier, keyed by the sidecar suffix
TIERS = "_tiers"
#: the collection of the outcome log's records, in append order
OUTCOMES = "_outcomes"


def is_store(obj: object) -> bool:
    """Whether ``obj`` is a Store or a scoped view (not a path)."""
    return registered(obj) and hasattr(obj, "items")


def sidecar_of(store: ItemStore, suffix: str) -> Path:
    return sidecar_path(store.path, suffix)


def load_doc(store: ItemStore, suffix: str) -> dict[str, object] | None:
    item = store.items(TIERS).get(suffix)
    return None if item is None else dict(item.value)


def save_doc(store: ItemStore, suffix: str, data: Mapping[str, object]) -> None:
    store.items(TIERS).put(suffix, data)


def import_sidecar(store: ItemStore, suffix: str,
                   read_file: Callable[[Path], Mapping[str, object]]) -> bool:
    """Bring the root store's sidecar file into the database once (see the module doc).
    ``read_file(path)`` parses the file as the tier reads its sidecars."""
    if getattr(store, "namespace", None) is not None or store.read_only:
        return False
    path = sidecar_of(store, suffix)
    if not path.is_file():
        return False
    with unit_of(store):
        if store.items(TIERS).get(suffix) is not None:
            return False
        data = read_file(path)
        save_doc(store, suffix, data)
        if load_doc(store, suffix) != json.loads(json.dumps(data)):
            raise SidecarError(f"importing {path} into the store did not read back the same; "
                               "the file was left where it is")
    _set_aside(path)
    return True


def import_outcome_log(store: ItemStore, path: Path,
                       records: Sequence[Mapping[str, object]]) -> bool:
    if getattr(store, "namespace", None) is not None or store.read_only or not path.is_file():
        return False
    col = store.items(OUTCOMES)
    with unit_of(store):
        if col.count():
            return False
        for rec in records:
            col.append(rec)
        if col.count() != len(records):
            raise SidecarError(f"importing {path} into the store did not read back the same")
    _set_aside(path)
    return True


def _set_aside(path: Path) -> None:
    target = path.with_name(path.name + ".imported")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.imported.{n}")
    path.rename(target)
