"""Group commit: concurrent ``record()`` calls on one Store share one transaction.

A server records from many threads at once. Each call still returns only after the
commit that holds its episode is durable, but while one commit (and its fsync) is under
way the calls that arrive queue up and go into the next transaction together, so fifty
writers share fsyncs instead of paying one each.

A record that checks something against the store (a supersession link, a state key, its
sources) is written under its own savepoint: refused, it rolls back alone, with its audit
entry, and its caller gets the error; the others commit. A run of consecutive records
that check nothing (``write_many`` given) is written together, under one savepoint, in
one statement each for the new ids, the rows and the audit entries; should the database
refuse that run, it is rolled back and written again a record at a time, each under its
own savepoint, so a refusal still fails that record alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Generic, TypeVar, cast

from . import tracing
from ._seam import unit_of
from ._unit import UnitLost

if TYPE_CHECKING:
    from ._unit import UnitOfWork


#: the store (or view) a record is written through, the record as prepared for writing,
#: and what its caller gets back
S = TypeVar("S")  # a Store or view: its unit of work is reached through _seam.unit_of
P = TypeVar("P")
R = TypeVar("R")
#: writes one prepared record through its store; returns what its caller gets
Write = Callable[[S, P], R]
#: writes a run of ``(store, prepared)`` in one go, in a unit of work it opens itself (which
#: joins the commit's transaction when one is open); returns what each caller gets, in order
WriteMany = Callable[[list[tuple[S, P]]], Sequence[R]]


class _Slot(Generic[S, P, R]):
    __slots__ = ("store", "prepared", "many", "wake", "done", "result", "error")

    def __init__(self, store: S, prepared: P, many: WriteMany[S, P, R] | None = None) -> None:
        self.store = store
        self.prepared = prepared
        self.many = many  # how a run of such records is written together
        #: held until the call is woken: its commit is over (``done``), or it leads next
        self.wake = threading.Lock()
        self.wake.acquire()
        self.done = False
        self.result: R | None = None
        self.error: BaseException | None = None


class GroupCommit(Generic[S, P, R]):
    """One per database connection (a Store and its scoped views share it)."""

    def __init__(self, round_: Callable[[], AbstractContextManager[None]] | None = None) -> None:
        #: what a leader holds around each round (the Store: the audit mirror it would
        #: do after the commit waits until the round's callers are woken)
        self._round = round_ or nullcontext
        self._mutex = threading.Lock()
        self._queue: list[_Slot[S, P, R]] = []
        self._leading = False
        #: transactions committed and episodes written through them (for the benchmark)
        self.commits = 0
        self.records = 0

    @tracing.phase("group_commit")
    def record(self, store: S, prepared: P, write: Write[S, P, R],
               write_many: WriteMany[S, P, R] | None = None) -> R:
        """Write ``prepared`` through ``write(store, prepared)`` in a shared transaction
        (with its neighbours in the batch through ``write_many``, when given)."""
        slot = _Slot(store, prepared, write_many)
        with self._mutex:
            self._queue.append(slot)
            lead = not self._leading
            self._leading = True
        if not lead:
            slot.wake.acquire()  # woken: its commit is over, or the leader's role is its
        if not slot.done:
            self._lead(slot, write)
        if slot.error is not None:
            raise slot.error
        # no error: the commit that held it set its result
        return cast(R, slot.result)

    #: most rounds one leader commits before it hands the role on and returns
    ROUNDS = 8

    def _lead(self, mine: _Slot[S, P, R], write: Write[S, P, R]) -> None:
        """Commit what is queued (``mine`` with it) and wake the batch's callers; go on
        with what was queued meanwhile, for up to ``ROUNDS`` rounds, so no other thread
        has to wake up before the next commit starts; then hand the leader's role to the
        oldest waiting call."""
        rounds = 0
        try:
            while True:
                with self._mutex:
                    if mine.done and (not self._queue or rounds >= self.ROUNDS):
                        break
                    batch, self._queue = self._queue, []
                with self._round():
                    try:
                        self._commit(batch, write)
                    finally:
                        rounds += 1
                        for slot in batch:
                            if slot is not mine:
                                slot.wake.release()
        finally:
            with self._mutex:
                if self._queue:  # the oldest waiting call leads the next round
                    self._queue[0].wake.release()
                else:
                    self._leading = False

    def _commit(self, batch: list[_Slot[S, P, R]], write: Write[S, P, R]) -> None:
        store = batch[0].store
        try:
            self._commit_batch(store, batch, write)
        finally:
            for slot in batch:
                slot.done = True

    def _commit_batch(self, store: S, batch: list[_Slot[S, P, R]], write: Write[S, P, R]) -> None:
        # records that check nothing against the store only add rows and audit entries:
        # a backend shared by hosts may then lock at the audit append, not at the start
        plain = all(slot.many is not None for slot in batch)
        only = batch[0]
        try:
            if len(batch) == 1 and only.many is not None:
                # alone and plain: its writer opens the one transaction itself (no outer
                # unit to nest in), and its refusal rolls that back: the same outcome as
                # its savepoint's, without two statements per record
                only.result = only.many([(only.store, only.prepared)])[0]
            else:
                with unit_of(store, appends_only=plain) as tx:
                    if len(batch) == 1:  # alone: its refusal rolls the transaction back
                        only.result = write(only.store, only.prepared)
                    else:
                        self._write_each(batch, write, tx)
        except BaseException as exc:  # the commit failed: nothing of the batch was written
            for slot in batch:
                if slot.error is None:
                    slot.error, slot.result = exc, None
        else:
            self.commits += 1
            self.records += sum(1 for s in batch if s.error is None)

    @classmethod
    def _write_each(cls, batch: list[_Slot[S, P, R]], write: Write[S, P, R],
                    tx: UnitOfWork) -> None:
        """The batch in order: each run of records written together, every other record
        under its own savepoint."""
        i = 0
        while i < len(batch):
            j = i + 1
            while j < len(batch) and batch[i].many is not None and batch[j].many is batch[i].many:
                j += 1
            if j - i > 1:
                cls._write_run(batch[i:j], write, tx)
            else:
                cls._write_one(batch[i], write, tx)
            i = j

    @classmethod
    def _write_run(cls, run: list[_Slot[S, P, R]], write: Write[S, P, R],
                   tx: UnitOfWork) -> None:
        many = run[0].many
        assert many is not None
        try:
            with tx.savepoint():
                results = many([(slot.store, slot.prepared) for slot in run])
        except UnitLost as lost:  # the transaction itself is gone: all fail
            raise (lost.__cause__ or lost) from None
        except Exception:  # refused in the database: find which, a record at a time
            for slot in run:
                cls._write_one(slot, write, tx)
            return
        for slot, result in zip(run, results):
            slot.result = result

    @staticmethod
    def _write_one(slot: _Slot[S, P, R], write: Write[S, P, R], tx: UnitOfWork) -> None:
        """One record under its own savepoint: refused, it rolls back alone, with its
        audit entry, and its caller gets the error."""
        try:
            with tx.savepoint():
                slot.result = write(slot.store, slot.prepared)
        except UnitLost as lost:  # the transaction itself is gone: all fail
            raise (lost.__cause__ or lost) from None
        except Exception as exc:  # this record alone is refused
            slot.error, slot.result = exc, None
