"""Benchmark driver: our package and the published anneal-memory, side by side.

``nox -s bench`` runs this with the session's python (our package installed with
``-e .``). The published package has the same import name, so it gets its own venv
(``.nox/bench-peer``). Every measurement is ``measure.py`` run as a subprocess in one
of the two venvs; this script collects the JSON, prints the table and writes
``bench/results/latest.{json,md,png}``.

    nox -s bench -- --sizes 1000,10000 --quick
    nox -s bench -- --scale          # adds 100k (single + batch) and 1M (batch)
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import report
from peer import peer_python as build_peer

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MEASURE = HERE / "measure.py"
# The names a user imports, so a package that loads lazily pays for what it defers.
IMPORT_SNIPPET = ("import time; t = time.perf_counter(); from anneal_memory import Store, "
                  "retrieve_relevant, prepare_wrap, validated_save_continuity; "
                  "print(time.perf_counter() - t)")


class BenchError(RuntimeError):
    """A measurement could not run; the message says which and why."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,10000",
                   help="store sizes for record and recall, comma separated")
    p.add_argument("--quick", action="store_true",
                   help="fewer queries, repeats and import runs (a run in a few minutes)")
    p.add_argument("--scale", action="store_true",
                   help="add 100k (single + batch) and the --scale-size batch-only run")
    p.add_argument("--scale-size", type=int, default=1_000_000)
    p.add_argument("--single-max", type=int, default=100_000,
                   help="largest size measured with one durable record() per episode")
    p.add_argument("--peer-max-size", type=int, default=100_000,
                   help="largest size run against the peer (its batch load is a record loop)")
    p.add_argument("--max-seconds", type=float, default=900.0,
                   help="time bound of one load or recall loop; a run stops early past it")
    p.add_argument("--tail-records", type=int, default=None,
                   help="durable single records timed after each batch load (default 1000, "
                        "300 with --quick)")
    p.add_argument("--runs", type=int, default=1,
                   help="measure everything this many times; the table shows the first run "
                        "and the spread of the ratios over all of them")
    p.add_argument("--only", choices=("ours", "peer", "both"), default="both")
    p.add_argument("--peer-version", default="1.0.2")
    p.add_argument("--peer-venv", default=str(REPO / ".nox" / "bench-peer"))
    p.add_argument("--locomo-dir", default=os.environ.get(
        "ANNEAL_BENCH_LOCOMO", str(REPO.parent / "shared" / "data" / "locomo")))
    p.add_argument("--workdir", default=None, help="where temporary stores go")
    p.add_argument("--out-dir", default=str(HERE / "results"))
    p.add_argument("--no-locomo", action="store_true")
    p.add_argument("--report-only", action="store_true",
                   help="rewrite latest.md and the plot from --out-dir/latest.json, measure nothing")
    args = p.parse_args(argv)
    args.size_list = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if args.scale:
        args.size_list = sorted({*args.size_list, 100_000, args.scale_size})
    args.queries = 50 if args.quick else 200
    args.repeats = 3 if args.quick else 7
    # a p95 needs 20 samples to be more than the maximum; the first wrap of each process
    # (which loads the wrap's modules) is reported on its own as well
    args.wrap_repeats = 5 if args.quick else 20
    args.import_runs = 5 if args.quick else 15
    if args.tail_records is None:
        args.tail_records = 300 if args.quick else 1000
    if not Path(args.locomo_dir).is_dir():
        p.error(f"LoCoMo folder {args.locomo_dir} not found: pass --locomo-dir or set "
                "ANNEAL_BENCH_LOCOMO")
    return args


def peer_python(args: argparse.Namespace) -> str:
    """The published package's venv, created on first use; never our environment."""
    try:
        return build_peer(args.peer_venv, args.peer_version)
    except RuntimeError as exc:
        raise BenchError(str(exc)) from None


def run_phase(python: str, phase: str, args: argparse.Namespace, **opts: Any
              ) -> dict[str, Any]:
    """One ``measure.py`` phase in a fresh process; returns its JSON."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    cmd = [python, str(MEASURE), phase, "--locomo-dir", args.locomo_dir, "--out", out,
           "--max-seconds", str(args.max_seconds)]
    if args.workdir:
        cmd += ["--workdir", args.workdir]
    for key, value in opts.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    try:
        # A hard stop well past the in-script bound, for a run that hangs outright.
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=4 * args.max_seconds + 600, cwd=tempfile.gettempdir())
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-6:]
            raise BenchError(f"{phase} {opts} failed: " + " | ".join(tail))
        return json.loads(Path(out).read_text())
    finally:
        Path(out).unlink(missing_ok=True)


def import_time(python: str, runs: int) -> dict[str, Any]:
    """Best of ``runs`` fresh interpreters, timing only the import statement."""
    times = []
    for _ in range(runs):
        proc = subprocess.run([python, "-I", "-c", IMPORT_SNIPPET], capture_output=True,
                              text=True, check=True, cwd=tempfile.gettempdir())
        times.append(float(proc.stdout.strip()) * 1000.0)
    return {"best_ms": min(times), "median_ms": sorted(times)[len(times) // 2],
            "runs_ms": times}


def fsync_count(python: str, args: argparse.Namespace, records: int = 50) -> dict[str, Any]:
    """Sync calls per record(), counted by strace between the probe's markers."""
    strace = shutil.which("strace")
    if not strace:
        return {"note": "strace not installed; not measured"}
    with tempfile.TemporaryDirectory() as tmp:
        log, out = os.path.join(tmp, "trace"), os.path.join(tmp, "out.json")
        proc = subprocess.run(
            [strace, "-f", "-qq", "-e", "trace=fsync,fdatasync,write", "-o", log, python,
             str(MEASURE), "fsync-probe", "--size", str(records), "--locomo-dir",
             args.locomo_dir, "--out", out], capture_output=True, text=True,
            cwd=tempfile.gettempdir())
        if proc.returncode != 0 or not os.path.exists(log):
            return {"note": f"strace failed: {proc.stderr.strip()[-200:]}"}
        inside, syncs = False, 0
        for line in Path(log).read_text(errors="replace").splitlines():
            if "ANNEAL_BENCH_START" in line:
                inside = True
            elif "ANNEAL_BENCH_END" in line:
                break
            elif inside and (" fsync(" in line or " fdatasync(" in line):
                syncs += 1
    return {"records": records, "syncs": syncs, "per_record": syncs / records}


Step = tuple[str, Any]  # (label, thunk storing its result in the package dict)


class Package:
    """One package's results and the steps that fill them."""

    def __init__(self, who: str, python: str) -> None:
        self.who, self.python = who, python
        self.data: dict[str, Any] = {"python": python, "sizes": {}, "wrap": {},
                                     "ceiling": {}, "errors": [], "skipped": []}

    def attempt(self, label: str, fn: Any, *a: Any, **kw: Any) -> Any:
        """Run one measurement; a failure is recorded and the run goes on."""
        t0 = time.perf_counter()
        try:
            res = fn(*a, **kw)
        except (BenchError, subprocess.SubprocessError, OSError, ValueError) as exc:
            self.data["errors"].append(f"{label}: {exc}")
            print(f"  {self.who:4} {label:28} FAILED: {exc}", flush=True)
            return None
        print(f"  {self.who:4} {label:28} {time.perf_counter() - t0:7.1f} s", flush=True)
        return res

    def steps(self, args: argparse.Namespace, info: dict[str, Any]) -> dict[str, Step]:
        """Every measurement, keyed so the same step of two packages can run back to back."""
        d, py = self.data, self.python
        d["file"], d["version"] = info["package"]["file"], info["package"]["version"]
        d["batch_method"] = info["batch_method"]
        steps: dict[str, Step] = {
            "import": ("import", lambda: d.__setitem__(
                "import", import_time(py, args.import_runs))),
            "fsync": ("fsync count", lambda: d.__setitem__("fsync", fsync_count(py, args))),
        }
        for size in args.size_list:
            if self.who == "peer" and size > args.peer_max_size:
                d["skipped"].append(f"{size:,} episodes (above --peer-max-size)")
                continue
            separate_batch = info["has_batch"]
            modes = []
            if size <= args.single_max:
                modes.append(("single", 0 if separate_batch else args.queries))
            if separate_batch or size > args.single_max:
                modes.append(("batch", args.queries))
            if self.who == "ours" and size <= args.single_max:
                # the disk's limit, measured next to the durable record loop it bounds
                steps[f"{size}-ceiling"] = (f"raw sqlite x{size:,}", functools.partial(
                    self._phase_into, ("ceiling", str(size)), "ceiling", args, size=size))
            for mode, queries in modes:
                steps[f"{size}-{mode}"] = (f"record x{size:,} ({mode})", functools.partial(
                    self._load, args, size, mode, queries))
        for size in (50, 500):
            steps[f"wrap{size}"] = (f"wrap @ {size}", functools.partial(
                self._phase_into, ("wrap", str(size)), "wrap", args, size=size,
                repeats=args.wrap_repeats))
        if not args.no_locomo:
            steps["locomo"] = ("locomo", functools.partial(
                self._phase_into, ("locomo",), "locomo", args))
        return steps

    def _phase_into(self, where: tuple[str, ...], phase: str, args: argparse.Namespace,
                    **opts: Any) -> None:
        res = run_phase(self.python, phase, args, **opts)
        target = self.data
        for key in where[:-1]:
            target = target[key]
        target[where[-1]] = res

    def _load(self, args: argparse.Namespace, size: int, mode: str, queries: int) -> None:
        # Bounded in disk: skip a size whose store would not fit with room to spare.
        per_ep = max([2000.0] + [r.get("bytes_per_episode") or 0.0
                                 for runs in self.data["sizes"].values()
                                 for r in runs.values()])
        need = 2 * size * per_ep + 2e9
        free = shutil.disk_usage(args.workdir or tempfile.gettempdir()).free
        if need > free:
            self.data["skipped"].append(f"{size:,} {mode} (needs ~{need / 1e9:.1f} GB, "
                                        f"{free / 1e9:.1f} GB free)")
            return
        res = run_phase(self.python, "load", args, size=size, mode=mode, queries=queries,
                        tail_records=args.tail_records if mode == "batch" else 0)
        self.data["sizes"].setdefault(str(size), {})[mode] = res


def measure(pythons: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    """All steps, the same step of each package back to back, so that load from other
    processes on the machine falls on both alike."""
    packages = {who: Package(who, py) for who, py in pythons.items()}
    plans: dict[str, dict[str, Step]] = {}
    for who, pkg in packages.items():
        info = pkg.attempt("info", run_phase, pkg.python, "info", args)
        plans[who] = pkg.steps(args, info) if info else {}
    order = list(dict.fromkeys(k for plan in plans.values() for k in plan))
    for key in order:
        for who, plan in plans.items():
            if key in plan:
                label, thunk = plan[key]
                packages[who].attempt(label, thunk)
    return {who: pkg.data for who, pkg in packages.items()}


def check_ours(python: str) -> None:
    """Refuse to benchmark a published copy as if it were this checkout."""
    proc = subprocess.run([python, "-I", "-c", "import anneal_memory; "
                           "print(anneal_memory.__file__)"],
                          capture_output=True, text=True, cwd=tempfile.gettempdir())
    where = proc.stdout.strip()
    if proc.returncode != 0 or not where.startswith(str(REPO / "core")):
        raise BenchError(f"our python imports anneal_memory from {where or proc.stderr!r}, "
                         f"not {REPO / 'core'}: install this checkout with `pip install -e .`")


def compile_bytecode(python: str) -> str:
    """Compile the package that ``python`` imports to bytecode, as ``pip install`` does.

    Neither venv is installed by pip: uv does not compile, and where the environment sets
    PYTHONDONTWRITEBYTECODE nothing is cached at import either, so without this every
    fresh process of either package would compile its source again and the import and
    first-call figures would measure the compiler, not what a user's install runs."""
    code = ("import compileall, os, anneal_memory as a; "
            "ok = compileall.compile_dir(os.path.dirname(a.__file__), quiet=1); "
            "print('compiled' if ok else 'failed')")
    try:
        proc = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True,
                              cwd=tempfile.gettempdir())
        said = (proc.stderr or proc.stdout).strip()[-300:]
    except OSError as exc:
        proc, said = None, str(exc)
    if proc is None or proc.returncode != 0 or proc.stdout.strip() != "compiled":
        raise BenchError(f"could not compile {python}'s anneal_memory to bytecode: {said}")
    return "compiled"


def write_report(results: dict[str, Any], out: Path) -> str:
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest.json").write_text(json.dumps(results, indent=1) + "\n")
    table = report.markdown(results)
    (out / "latest.md").write_text(table)
    report.plot(results, str(out / "recall_latency.png"))
    report.plot_scaling(results, str(out / "scaling.png"))
    return table


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report_only:
        print(write_report(json.loads((Path(args.out_dir) / "latest.json").read_text()),
                           Path(args.out_dir)))
        return 0
    started = time.perf_counter()
    pythons: dict[str, str] = {}
    if args.only in ("ours", "both"):
        check_ours(sys.executable)
        pythons["ours"] = sys.executable
    if args.only in ("peer", "both"):
        pythons["peer"] = peer_python(args)
    results: dict[str, Any] = {"meta": {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(), "peer_version": args.peer_version,
        "load_average": os.getloadavg()[0],
        "sizes": args.size_list, "quick": args.quick, "queries": args.queries,
        "command": "nox -s bench -- " + " ".join(argv if argv is not None else sys.argv[1:]),
    }, "packages": {}}
    for who, python in pythons.items():
        print(f"{who}: {python}", flush=True)
        results["meta"].setdefault("bytecode", {})[who] = compile_bytecode(python)
    results["packages"] = measure(pythons, args)
    results["meta"]["load_average_end"] = os.getloadavg()[0]
    results["repeats"] = []
    for run in range(2, args.runs + 1):
        print(f"run {run} of {args.runs}", flush=True)
        results["repeats"].append(measure(pythons, args))
    results["meta"]["wall_seconds"] = time.perf_counter() - started

    out = Path(args.out_dir)
    table = write_report(results, out)
    print()
    print(table)
    print(f"wrote {out}/latest.json, latest.md, recall_latency.png, scaling.png "
          f"in {results['meta']['wall_seconds']:.0f} s")
    failed = [e for run in [results["packages"], *results["repeats"]]
              for pkg in run.values() for e in pkg["errors"]]
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        sys.exit(2)
