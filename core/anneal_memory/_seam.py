"""The package's own way from a Store (or a scoped view) down to its storage roles and its
unit of work, with no public attribute on the Store and no private member on the
:class:`~._unit.Ground` / :class:`~._unit.Facade` protocols.

A Store registers what it reads and writes through when it is opened (a scoped view when
it is made): its :class:`~.storage.repos.Repositories` and the method that opens one
write transaction. The services below the facade reach them with :func:`roles_of` and
:func:`unit_of`; users never do (``anneal_memory.testing.repos_of`` / ``unit_of`` are the
tests' way to the same objects).

The registry is keyed by the object's identity and holds nothing that keeps a store
alive (the unit opener is a weak method; an entry goes when its store is collected), so
a copy of a store's ``__dict__`` (a view is made that way) carries no registration of
its parent's: a view that did not register is refused, never served its parent's roles.
:func:`roles_of` is one dict lookup: it sits on the recall path.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._unit import UnitOfWork
    from .storage.repos import Repositories

#: opens one write transaction of a store: ``unit(appends_only)``
UnitOpener = Callable[[bool], AbstractContextManager["UnitOfWork"]]


class Seam:
    """What one store (or view) registered: its roles and its unit opener."""

    __slots__ = ("roles", "_unit")

    def __init__(self, roles: Repositories, unit: UnitOpener) -> None:
        self.roles = roles
        self._unit: weakref.WeakMethod[UnitOpener] = weakref.WeakMethod(unit)

    def unit(self, appends_only: bool = False) -> AbstractContextManager[UnitOfWork]:
        opener = self._unit()
        if opener is None:  # only a store being collected: nobody can still hold it
            raise ReferenceError("the store of this unit of work is gone")
        return opener(appends_only)


_SEAMS: dict[int, Seam] = {}


def register(store: object, roles: Repositories, unit: UnitOpener) -> None:
    """Record ``store``'s roles and unit opener (a bound method of ``store``): called by
    the Store when it is opened and by each view when it is made."""
    key = id(store)
    if key not in _SEAMS:  # one finalizer per object: its entry goes with it
        weakref.finalize(store, _SEAMS.pop, key, None)
    _SEAMS[key] = Seam(roles, unit)


def _seam(store: object) -> Seam:
    try:
        return _SEAMS[id(store)]
    except KeyError:
        raise TypeError(f"{type(store).__name__} is not an open anneal_memory Store or "
                        "view (nothing registered its roles)") from None


def registered(obj: object) -> bool:
    """Whether ``obj`` is an open Store or view (it registered its roles)."""
    return id(obj) in _SEAMS


def roles_of(store: object) -> Repositories:
    """The roles ``store`` reads through (a scoped view's: its namespace's). TypeError
    for anything that is not a registered Store or view."""
    return _seam(store).roles


def unit_of(store: object, *, appends_only: bool = False) -> AbstractContextManager[UnitOfWork]:
    """One write transaction of ``store`` as a :class:`~._unit.UnitOfWork`; nested calls
    join the outer one, a read_only store refuses (ReadOnlyStoreError) before anything is
    written. ``appends_only``: it only adds new episodes and their audit entries."""
    return _seam(store).unit(appends_only)
