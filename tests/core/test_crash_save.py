"""kill -9 during saves leaves the old or the new continuity, never a mix."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from anneal_memory import DEFAULT_SCHEMA, Store
from anneal_memory.continuity.parse import parse_sections
from anneal_memory.testing import backend_of

SAVER = textwrap.dedent("""
    import sys
    from anneal_memory import Store, prepare_wrap, validated_save_continuity
    db = sys.argv[1]
    with Store(db) as s:
        for n in range(10_000):
            s.record(f"round {n}", "observation")
            w = prepare_wrap(s)
            body = f"- round {n} " + ("filler " * (n % 50 + 50))
            text = f"## State\\n{body}\\n\\n## Patterns\\n- p | 1x\\n\\n## Decisions\\n- d\\n\\n## Context\\n{body}\\nEND {n}\\n"
            validated_save_continuity(s, text, wrap_token=w["wrap_token"])
            print(n, flush=True)
""")


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.3, 0.7, 1.1])
def test_kill_during_save(tmp_path: Path, delay: float) -> None:
    db = tmp_path / "m.db"
    Store(db).close()
    p = subprocess.Popen([sys.executable, "-c", SAVER, str(db)], stdout=subprocess.PIPE, text=True)
    time.sleep(delay)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    with Store(db) as s:
        text = s.load_continuity()
        if text is not None:
            parse_sections(text, DEFAULT_SCHEMA)
            state = text.split("## State\n")[1].split("\n")[0]
            n = state.split()[2]
            assert text.rstrip().endswith(f"END {n}")
        assert backend_of(s).integrity_check() == "ok"
        leftovers = [x for x in os.listdir(tmp_path) if x.endswith(".tmp")]
        assert leftovers == [] or all(x.startswith(".") for x in leftovers)
