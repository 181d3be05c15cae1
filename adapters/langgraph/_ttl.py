"""``AnnealStore(ttl=...)``: item expiry as LangGraph's ``SqliteStore`` has it.

``ttl`` is LangGraph's ``TTLConfig``: ``default_ttl`` (minutes, for a ``put`` without
``ttl=``), ``refresh_on_read`` (a read that asks, ``get``/``search`` with ``refresh_ttl``
left to the config or True, restarts the returned items' clocks; as in ``SqliteStore``
nothing is refreshed unless the config says True) and ``sweep_interval_minutes`` (the
background sweeper's period, default 5). ``put(..., ttl=minutes)`` sets one item's
time to live; ``ttl=None`` keeps it forever.

Each expiring item's deadline is kept in the database beside it (the
``<collection>.ttl`` item collection of the same memory, keyed as the item): a store
reopened by the next process still expires it. An item past its deadline is invisible
at once (``get``, ``search``, ``list_namespaces``), before any sweep; ``sweep_ttl`` deletes
such items with their vectors and deadlines, in one transaction, in this store's own
memory namespace only (another user's items are never read or touched).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from anneal_memory import ItemCollection, clock
from anneal_memory.errors import ValidationError

_CONFIG_KEYS = ("default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired")
DEFAULT_SWEEP_MINUTES = 5.0


def check_minutes(name: str, value: Any, *, optional: bool = True) -> float | None:
    """A number of minutes > 0 (or None where that means "never"), else ValidationError."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value <= 0:
        raise ValidationError(f"{name} is a number of minutes > 0"
                              f"{' (or None: never)' if optional else ''}, not {value!r:.60}")
    return float(value)


def check_ttl_config(ttl: Any) -> dict[str, Any] | None:
    """A ``TTLConfig`` as LangGraph spells it, refused with ValidationError when it is not."""
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise ValidationError(f"ttl is a TTLConfig dict ({', '.join(_CONFIG_KEYS)}), "
                              f"not {ttl!r:.60}")
    unknown = sorted(str(k) for k in ttl if k not in _CONFIG_KEYS)
    if unknown:
        raise ValidationError(f"unknown TTLConfig key(s) {unknown}: use {', '.join(_CONFIG_KEYS)}")
    check_minutes("ttl['default_ttl']", ttl.get("default_ttl"))
    check_minutes("ttl['sweep_interval_minutes']", ttl.get("sweep_interval_minutes"))
    for flag in ("refresh_on_read", "omit_expired"):
        if flag in ttl and not isinstance(ttl[flag], bool):
            raise ValidationError(f"ttl[{flag!r}] is True or False, not {ttl[flag]!r:.60}")
    return dict(ttl)


class Deadlines:
    """The deadlines of one AnnealStore's expiring items, by item key.

    A record is ``{"expires_at": epoch seconds, "ttl": minutes}``; an item without one
    never expires. The item itself carries ``"ttl"`` in its metadata, so a ``get`` of an
    item that never expires reads no record.
    """

    def __init__(self, records: ItemCollection, config: dict[str, Any] | None) -> None:
        self._records = records
        self.config = config

    @property
    def refresh_on_read(self) -> bool:
        """Whether reads may restart clocks (SqliteStore: only when the config says so;
        a read-only store's reads never write)."""
        return bool(self.config and self.config.get("refresh_on_read", False)) \
            and not self._records.store.read_only

    def start(self, key: str, minutes: float | None, now: float) -> None:
        """Start ``key``'s clock (None: it never expires); inside the put's transaction."""
        if minutes is None:
            if self._records.get(key) is not None:
                self._records.delete(key)
            return
        self._records.put(key, {"expires_at": now + minutes * 60.0, "ttl": minutes})

    def drop(self, key: str) -> None:
        self._records.delete(key)

    def expired(self, key: str, now: float) -> bool:
        record = self._records.get(key)
        return record is not None and _deadline(record.value) <= now

    def expired_under(self, prefix: str | None, now: float) -> set[str]:
        """The keys under ``prefix`` (every key: None) whose deadline has passed."""
        return {r.key for r in self._records.list(prefix=prefix)
                if _deadline(r.value) <= now}

    def refresh(self, keys: Iterable[str], now: float) -> None:
        """Restart the clocks of ``keys`` that expire (their own ttl, from now), in one
        transaction (none when there is nothing to refresh)."""
        keys = list(keys)
        if not keys:
            return
        with self._records.store.batch():
            for key in keys:
                record = self._records.get(key)
                if record is not None and _deadline(record.value) > now:
                    minutes = float(record.value["ttl"])
                    self._records.put(key, {"expires_at": now + minutes * 60.0,
                                            "ttl": minutes})


def _deadline(value: Any) -> float:
    try:
        return float(value["expires_at"])
    except (TypeError, KeyError, ValueError):
        return math.inf  # not a record this adapter wrote: never expire it


class Sweeper:
    """The background sweep of one store: a thread (sync servers) or an asyncio task."""

    def __init__(self, sweep: Callable[[], int], asweep: Callable[[], Any],
                 logger: logging.Logger) -> None:
        self._sweep = sweep
        self._asweep = asweep
        self._log = logger
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._task: asyncio.Task[None] | None = None
        self._astop: asyncio.Event | None = None

    # -- a thread ----------------------------------------------------------------------
    def start(self, minutes: float) -> concurrent.futures.Future[None]:
        """Sweep every ``minutes`` in a daemon thread until :meth:`stop`; the future
        completes when the thread ends (cancelling it stops the thread too)."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        future.add_done_callback(lambda f: self._stop.set() if f.cancelled() else None)
        if self._thread is not None and self._thread.is_alive():
            self._log.info("the TTL sweeper is already running")
            return future
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(minutes * 60.0):
                try:
                    swept = self._sweep()
                    if swept:
                        self._log.info("TTL sweep deleted %d expired item(s)", swept)
                except Exception:  # a failed sweep is retried at the next interval
                    self._log.exception("TTL sweep failed")
            if not future.done():
                future.set_result(None)

        self._thread = threading.Thread(target=loop, daemon=True, name="anneal-ttl-sweeper")
        self._thread.start()
        return future

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the thread; False when it had not ended within ``timeout`` seconds."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = None
            return True
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._log.warning("timed out waiting for the TTL sweeper to stop")
            return False
        self._thread = None
        return True

    # -- an asyncio task ---------------------------------------------------------------
    async def astart(self, minutes: float) -> asyncio.Task[None]:
        """Sweep every ``minutes`` in a task of the running loop until :meth:`astop`."""
        if self._task is not None and not self._task.done():
            return self._task
        stop = self._astop = asyncio.Event()

        async def loop() -> None:
            while True:
                try:
                    await asyncio.wait_for(stop.wait(), timeout=minutes * 60.0)
                    return
                except asyncio.TimeoutError:
                    pass
                try:
                    swept = await self._asweep()
                    if swept:
                        self._log.info("TTL sweep deleted %d expired item(s)", swept)
                except Exception:
                    self._log.exception("TTL sweep failed")

        self._task = asyncio.get_running_loop().create_task(loop(), name="anneal-ttl-sweeper")
        return self._task

    async def astop(self, timeout: float | None = None) -> bool:
        """Stop the task; False when it had not ended within ``timeout`` seconds."""
        task = self._task
        if task is None or task.done():
            self._task = None
            return True
        assert self._astop is not None
        self._astop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=timeout)
        except asyncio.TimeoutError:
            self._log.warning("timed out waiting for the TTL sweeper to stop")
            return False
        self._task = None
        return True


def now() -> float:
    """The clock deadlines are kept in (epoch seconds: they outlive the process): the
    store's one clock, so a test that sets it moves deadlines too."""
    return clock.utcnow().timestamp()
