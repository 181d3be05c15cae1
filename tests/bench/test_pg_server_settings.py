"""scripts/pg_server.py's bench settings: a server sized to the machine (shared_buffers a
quarter of RAM, effective_cache_size three quarters), asked for with ``start DIR
--bench`` only: the test suite's server keeps its small footprint."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import pg_server  # noqa: E402


def test_bench_settings_are_sized_to_this_machine() -> None:
    mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    opts = pg_server.bench_settings()
    shared = int(re.search(r"shared_buffers=(\d+)MB", opts).group(1))  # type: ignore[union-attr]
    cache = int(re.search(r"effective_cache_size=(\d+)MB", opts).group(1))  # type: ignore[union-attr]
    assert shared == max(128, mb // 4)
    assert cache == max(512, mb * 3 // 4)


def test_only_start_with_bench_asks_for_them(monkeypatch, tmp_path) -> None:
    seen: list[list[str]] = []

    def fake_run(cmd: list[str], **kw: object) -> object:
        seen.append([str(c) for c in cmd])

        class Done:
            returncode = 0
            stderr = ""
        return Done()

    monkeypatch.setattr(pg_server.subprocess, "run", fake_run)
    monkeypatch.setattr(pg_server, "_bindir", lambda: tmp_path)
    monkeypatch.setattr(pg_server, "_chown", lambda p: None)
    monkeypatch.setattr(pg_server, "_as_server_user", lambda: [])
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "PG_VERSION").write_text("15")
    for bench in (False, True):
        seen.clear()
        pg_server.start(tmp_path, bench=bench)
        opts = next(c[c.index("-o") + 1] for c in seen if "-o" in c)
        assert "shared_buffers=64MB" in opts
        assert (pg_server.bench_settings() in opts) is bench
