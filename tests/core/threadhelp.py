"""Run one worker per argument in threads, all at once, and surface any worker's failure."""

from __future__ import annotations

import threading
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
