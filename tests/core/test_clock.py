"""One clock: every time the library reads or writes comes from clock.py, in UTC, and one
frozen clock moves all of them (the wrap, the audit trail, spores, crystals, outcomes,
governed memory), even where the local date is already tomorrow."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

from anneal_memory import (
    AuditTrail,
    CrystalStore,
    SporeStore,
    Store,
    ValidationError,
    clock,
    prepare_wrap,
)
from anneal_memory.governance import MemoryCandidate, MemoryNamespace, MemoryRuntime, SourceRef
from anneal_memory.worth import OutcomeLog

# 23:30 UTC on the 29th: already the 30th in Kiritimati (UTC+14)
LATE = "2026-11-29T23:30:00Z"
UTC_DAY = "2026-11-29"


@pytest.fixture
def far_east_local_time() -> Iterator[None]:
    """Make the process's local zone UTC+14, so local "today" is a day ahead."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "Etc/GMT-14"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


def test_one_frozen_clock_moves_every_part(db: Path, far_east_local_time: None) -> None:
    with clock.frozen(LATE):
        assert date.today().isoformat() != UTC_DAY  # the local date really is tomorrow
        assert clock.today_iso() == UTC_DAY and clock.now_iso().startswith(UTC_DAY + "T23:30")
        with Store(db) as s:
            ep = s.record("frozen in time", "observation")
            assert ep.timestamp.startswith(UTC_DAY + "T23:30:00")
            entries = s.audit_trail.entries()
            assert entries and all(e["ts"].startswith(UTC_DAY) for e in entries)
            w = prepare_wrap(s)
            assert w["package"]["today"] == UTC_DAY
            s.wrap_cancelled()
            spore = SporeStore(db).add(type="task", text="water the plants")
            assert spore.created == UTC_DAY and spore.seen == UTC_DAY
            assert SporeStore(db).touch(spore.id).seen == UTC_DAY
            crystal = CrystalStore(db).crystallize(
                "tests first", text="Write the failing test first", level=3,
                evidence=[("a1b2c3d4", "the failing test came first")])
            assert crystal.last_activated_on == UTC_DAY
            rec = OutcomeLog(db).record("exp-1", outcome="success")
            assert rec["ts"] == UTC_DAY + "T23:30:00Z"
            ns = MemoryNamespace(tenant="t", user="u", agent="a")
            rt = MemoryRuntime(s)
            res = rt.write(MemoryCandidate("c1", ns, "semantic", "editor", "Uses vim daily",
                                           SourceRef("m1", "user_message")))
            assert res.record is not None and res.record.created_at.startswith(UTC_DAY)
    assert AuditTrail.verify(db).valid


def test_the_clock_moves_on_inside_a_callable_source(db: Path) -> None:
    now = [datetime(2026, 11, 2, 9, tzinfo=timezone.utc)]
    with clock.frozen(lambda: now[0]), Store(db) as s:
        a = s.record("first", "observation")
        now[0] = datetime(2026, 11, 20, 9, tzinfo=timezone.utc)
        b = s.record("second", "observation")
        assert s.prune(10) == 1 and s.get(a.id) is None and s.get(b.id) is not None
        assert s.recall(since="1d").episodes[0].id == b.id


def test_frozen_restores_the_real_clock() -> None:
    with clock.frozen("2001-01-01"):
        assert clock.today() == date(2001, 1, 1)
    assert clock.today() >= date(2026, 1, 1)


def test_clock_parses_are_typed_and_in_utc() -> None:
    assert clock.normalize_timestamp("2026-11-30T01:00:00+02:00") == \
        "2026-11-29T23:00:00.000000+00:00"
    assert clock.as_date(datetime(2026, 11, 30, 1, tzinfo=timezone.utc)) == date(2026, 11, 30)
    assert clock.iso_week("2026-11-29T23:59:59+00:00") == "2026-W48"
    assert clock.iso_week("2026-11-30T00:00:00+00:00") == "2026-W49"
    assert clock.iso_week("garbage") is None
    assert clock.parse_or_none("2026-13-01") is None
    for bad in ("0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "soon", ""):
        with pytest.raises(ValidationError):
            clock.normalize_timestamp(bad)
    for bad in ("99999999999d", "9" * 25 + "w"):
        with pytest.raises(ValidationError):
            clock.parse_since(bad)
    with clock.frozen("2026-01-01T00:00:00Z"):
        assert clock.parse_since("2d") == "2025-12-30T00:00:00.000000+00:00"
        assert clock.stamp() == "2026-01-01T00:00:00Z"


def test_no_module_reads_the_time_on_its_own() -> None:
    # every read of the time and every date parse goes through clock.py
    import anneal_memory

    root = Path(anneal_memory.__file__).parent
    adapters = root.parent.parent / "adapters"
    offenders = []
    for path in [*root.rglob("*.py"), *adapters.rglob("*.py")]:
        if path.name == "clock.py":
            continue
        text = path.read_text("utf-8")
        for needle in ("datetime.now(", "date.today(", "datetime.utcnow(", ".fromisoformat(",
                       "time.time(", "strptime(", "time.localtime(", "time.gmtime("):
            if needle in text:
                offenders.append(f"{path.relative_to(root.parent.parent)}: {needle}")
    assert offenders == []
