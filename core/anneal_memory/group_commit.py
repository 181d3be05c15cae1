"""Group commit: concurrent ``record()`` calls on one Store share one transaction.

A server records from many threads at once. Each call still returns only after the
commit that holds its episode is durable, but while one commit (and its fsync) is under
way the calls that arrive queue up and go into the next transaction together, so fifty
writers share fsyncs instead of paying one each. Each episode is written under its own
savepoint: a refused record (a bad supersession link, say) rolls back alone, with its
audit entry, and its caller gets the error; the others commit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._unit import UnitLost

if TYPE_CHECKING:
    from ._unit import UnitOfWork

@dataclass
class _Slot:
    store: Any
    prepared: dict[str, Any]
    done: threading.Event = field(default_factory=threading.Event)
    lead: bool = False  # handed the leader's role while waiting
    result: Any = None
    error: BaseException | None = None


class GroupCommit:
    """One per database connection (a Store and its scoped views share it)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._queue: list[_Slot] = []
        self._leading = False
        #: transactions committed and episodes written through them (for the benchmark)
        self.commits = 0
        self.records = 0

    def record(self, store: Any, prepared: dict[str, Any],
               write: Callable[[Any, dict[str, Any]], Any]) -> Any:
        """Write ``prepared`` through ``write(store, prepared)`` in a shared transaction."""
        slot = _Slot(store, prepared)
        with self._mutex:
            self._queue.append(slot)
            lead = not self._leading
            self._leading = True
        if not lead:
            slot.done.wait()
            if slot.lead:  # the previous leader finished its own call: lead from here
                slot.done.clear()
                self._lead(slot, write)
        elif not slot.done.is_set():
            self._lead(slot, write)
        if slot.error is not None:
            raise slot.error
        return slot.result

    def _lead(self, mine: _Slot, write: Callable[[Any, dict[str, Any]], Any]) -> None:
        while not mine.done.is_set():
            with self._mutex:
                batch, self._queue = self._queue, []
            if batch:
                self._commit(batch, write)
        with self._mutex:
            if self._queue:  # hand over: the oldest waiting call leads the next round
                nxt = self._queue[0]
                nxt.lead = True
                nxt.done.set()
            else:
                self._leading = False

    def _commit(self, batch: list[_Slot], write: Callable[[Any, dict[str, Any]], Any]) -> None:
        store = batch[0].store
        try:
            with store.transaction() as tx:
                if len(batch) == 1:
                    # alone, its refusal rolls the transaction back: the same outcome as
                    # its savepoint's, without two statements per record
                    batch[0].result = write(batch[0].store, batch[0].prepared)
                else:
                    self._write_each(batch, write, tx)
        except BaseException as exc:  # the commit failed: nothing of the batch was written
            for slot in batch:
                if slot.error is None:
                    slot.error, slot.result = exc, None
        else:
            self.commits += 1
            self.records += sum(1 for s in batch if s.error is None)
        for slot in batch:
            slot.done.set()

    @staticmethod
    def _write_each(batch: list[_Slot], write: Callable[[Any, dict[str, Any]], Any],
                    tx: UnitOfWork) -> None:
        """Each record of the batch under its own savepoint: a refused one rolls back
        alone, with its audit entry, and its caller gets the error."""
        for slot in batch:
            try:
                with tx.savepoint():
                    slot.result = write(slot.store, slot.prepared)
            except UnitLost as lost:  # the transaction itself is gone: all fail
                raise (lost.__cause__ or lost) from None
            except Exception as exc:  # this record alone is refused
                slot.error, slot.result = exc, None
