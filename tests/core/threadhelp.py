"""Run one worker per argument in threads, all at once, and surface any worker's failure;
run record() calls as one group-commit batch, in a known order."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any


def run_threads(work: Callable[..., Any], args: Iterable[Any], timeout: float = 120) -> None:
    """``work(arg)`` in a thread per ``arg``; raises the first error (or a hang) after all
    have been joined, so a failed assertion in a worker fails the test."""
    errors: list[BaseException] = []

    def guarded(arg: Any) -> None:
        try:
            work(arg)
        except BaseException as exc:  # re-raised in the test's own thread below
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(a,)) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    stuck = [t.name for t in threads if t.is_alive()]
    if errors:
        raise errors[0]
    assert not stuck, f"workers still running after {timeout} s: {stuck}"


def _wait_for(cond: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not cond():
        assert time.monotonic() < deadline, "the group commit never got there"
        time.sleep(0.001)


def batched(store: Any, calls: list[Callable[[], Any]]) -> list[Any]:
    """Run ``calls`` (each one ``record()`` on ``store`` or one of its views) as one
    group-commit batch, queued in this order: the leader's own first commit waits on the
    store's lock (held here by an empty ``batch()``) while they queue, so its next round
    takes them all. Each item of the result is what its call returned or raised."""
    group = store._group
    out: list[Any] = [None] * len(calls)

    def run(i: int, call: Callable[[], Any]) -> None:
        try:
            out[i] = call()
        except Exception as exc:
            out[i] = exc

    threads = []
    with store.batch():
        lead = threading.Thread(target=store.record, args=("the leader's own note", "observation"))
        lead.start()
        _wait_for(lambda: group._leading and not group._queue)  # it took its own batch
        for i, call in enumerate(calls):
            threads.append(threading.Thread(target=run, args=(i, call)))
            threads[-1].start()
            _wait_for(lambda n=i + 1: len(group._queue) == n)
    for t in [lead, *threads]:
        t.join(60)
    return out
