"""Run every default nox session, in parallel lanes: the README's test command.

``nox`` alone runs the same sessions one after another; this splits them into lanes
(``--lanes N``, default 2: most of a session is installing and importing, so two lanes
on two cores nearly halve the wall time) balanced by each session's usual duration, runs
one ``nox -s ...`` per lane, prefixes each line with its lane, and exits non-zero when
any session failed. ``--also compat`` adds opt-in sessions to the lanes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

#: seconds each session took on a cold CI machine (a guess for sessions not listed);
#: sqlite-oldest runs on Python 3.10, about 13% slower than 3.11 on the same tests
USUAL = {"core": 240, "sqlite-oldest": 300, "sqlite-newest": 180, "mcp": 120, "postgres": 150,
         "dspy-floor": 90, "compat": 60, "mcp-floor": 80, "crewai": 55, "crewai-floor": 50,
         "llamaindex": 45, "llamaindex-floor": 45, "google_adk": 50, "google_adk-floor": 60,
         "langgraph": 90, "langgraph-floor": 90, "openai_agents": 40, "openai_agents-floor": 40,
         "agno": 35, "agno-floor": 35, "camel": 35,
         "strands": 35, "strands-floor": 35,
         "agent_framework": 20, "agent_framework-floor": 20, "otel": 20}
DEFAULT_GUESS = 40


def sessions(extra: list[str]) -> list[str]:
    out = subprocess.run(["nox", "--list", "--json"], capture_output=True, text=True,
                         check=True).stdout
    names = [s["session"] for s in json.loads(out)]
    return names + [e for e in extra if e not in names]


def plan(names: list[str], lanes: int) -> list[list[str]]:
    """Longest first, each to the lane with the least work so far."""
    work = [0] * lanes
    out: list[list[str]] = [[] for _ in range(lanes)]
    for name in sorted(names, key=lambda n: -USUAL.get(n, DEFAULT_GUESS)):
        i = work.index(min(work))
        out[i].append(name)
        work[i] += USUAL.get(name, DEFAULT_GUESS)
    return [lane for lane in out if lane]


def run_lane(i: int, names: list[str], codes: list[int], lock: threading.Lock) -> None:
    proc = subprocess.Popen(["nox", "-s", *names], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace",
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    for line in proc.stdout:
        with lock:
            sys.stdout.write(f"[lane {i}] {line}")
            sys.stdout.flush()
    codes[i] = proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lanes", type=int, default=int(os.environ.get("ANNEAL_TEST_LANES", "2")))
    ap.add_argument("--also", action="append", default=[], metavar="SESSION",
                    help="an opt-in session to run too (e.g. compat)")
    ap.add_argument("-s", "--sessions", nargs="+", metavar="SESSION",
                    help="only these sessions (default: every default one)")
    args = ap.parse_args(argv)
    names = args.sessions or sessions(args.also)
    lanes = plan(names, max(1, args.lanes))
    for i, names in enumerate(lanes):
        print(f"[lane {i}] sessions: {' '.join(names)}", flush=True)
    codes = [0] * len(lanes)
    lock = threading.Lock()
    start = time.monotonic()
    threads = [threading.Thread(target=run_lane, args=(i, names, codes, lock))
               for i, names in enumerate(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    minutes = (time.monotonic() - start) / 60
    for i, names in enumerate(lanes):
        print(f"lane {i}: {'ok' if codes[i] == 0 else f'FAILED (exit {codes[i]})'}: "
              f"{' '.join(names)}")
    print(f"all lanes done in {minutes:.1f} minutes")
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
