"""The durable-record bench's own arithmetic (issue 54 goal 4): the steady-state strace
counts (a larger burst less a smaller one) and the bytes written per record."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import record_ceiling as rc  # noqa: E402


def test_the_steady_state_is_the_larger_burst_less_the_smaller() -> None:
    small = {"fdatasync": 130, "pwrite64": 4400, "fsync": 4}
    large = {"fdatasync": 660, "pwrite64": 28700, "fsync": 4, "write": 3}
    got = rc.per_record(rc.steady(small, large), 500)
    assert got == {"fdatasync": 1.06, "pwrite64": 48.6, "fsync": 0.0, "write": 0.006}
    assert rc.steady({"fsync": 5}, {"fsync": 2}) == {"fsync": 0}  # never negative


def test_bytes_written_per_record_come_from_this_process(tmp_path: Path) -> None:
    before = rc._written()
    if before is None:  # no /proc/self/io here: the figure is left out, never made up
        assert rc._kib_per_record(None, 10) is None
        return
    with open(tmp_path / "out.tmp", "wb") as fh:
        fh.write(b"x" * 10 * 1024)
    kib = rc._kib_per_record(before, 10)
    assert kib is not None and 1.0 <= kib < 1.5
    assert rc._kib_per_record(before, 0) is None
