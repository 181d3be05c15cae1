"""The documentation's blocks that need a PostgreSQL server, run as written against one:
each URL in a document becomes a fresh location (its own schema on the test server). The
same blocks also run with SQLite files in place of the URLs, since the library and the CLI
behave the same on both. docs/governance.md runs here too: governance works on PostgreSQL.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import BACKENDS, admin_sql, with_schema
from conftest import PG_DSN as SERVER

from docblocks import ROOT, SERVER_URL, SHELL, blocks, run

# every document with a block that needs a server (the core docs test checks this list)
SERVER_DOCS = ["docs/postgres.md"]
# documents whose examples name a SQLite file the governed runtime also runs on a server
GOVERNED_DOCS = ["docs/governance.md"]


@pytest.fixture(params=BACKENDS)
def new_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], str]]:
    """Makes fresh, empty store locations of this run's backend."""
    schemas: list[str] = []
    n = iter(range(1000))

    def make() -> str:
        if request.param == "sqlite":
            return str(tmp_path / f"location-{next(n)}.db")
        schema = f"d_{secrets.token_hex(6)}"
        admin_sql(f"CREATE SCHEMA {schema}")
        schemas.append(schema)
        return with_schema(SERVER, schema)

    yield make
    for schema in schemas:
        admin_sql(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.parametrize("doc", SERVER_DOCS)
@pytest.mark.parametrize("kind", ["python", "shell"])
def test_server_blocks_run_as_written(doc: str, kind: str, new_location: Callable[[], str],
                                      tmp_path: Path) -> None:
    chosen = [b for b in blocks(ROOT / doc)
              if (b.lang == "python" if kind == "python" else b.lang in SHELL)]
    urls = {u: new_location() for b in chosen for u in SERVER_URL.findall(b.text)}
    assert urls, f"{doc} has no {kind} block naming a server"
    res = run(chosen, kind, tmp_path / "work", urls)
    assert res.returncode == 0, f"{doc}:\n{res.stdout}\n{res.stderr}"


@pytest.mark.parametrize("doc", GOVERNED_DOCS)
def test_governed_examples_run_on_each_backend(doc: str, new_location: Callable[[], str],
                                               tmp_path: Path) -> None:
    chosen = [b for b in blocks(ROOT / doc) if b.lang == "python"]
    where = new_location()
    assert any('Store("memory.db")' in b.text for b in chosen)
    swapped = [type(b)(b.doc, b.line, b.lang, b.text.replace('Store("memory.db")',
                                                              f"Store({where!r})"))
               for b in chosen]
    res = run(swapped, "python", tmp_path / "work")
    assert res.returncode == 0, f"{doc}:\n{res.stdout}\n{res.stderr}"
