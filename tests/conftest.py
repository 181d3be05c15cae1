"""Test-wide setup: which SQLite the suite runs on.

``ANNEAL_TEST_SQLITE=pysqlite3`` runs every test on the SQLite bundled with the installed
``pysqlite3-binary`` wheel instead of the one this Python links (the ``sqlite-oldest`` and
``sqlite-newest`` nox sessions pin one each).
"""

from __future__ import annotations

import os
import sys

if os.environ.get("ANNEAL_TEST_SQLITE") == "pysqlite3":
    from pysqlite3 import dbapi2

    sys.modules["sqlite3"] = dbapi2


def pytest_report_header() -> str:
    import sqlite3

    return f"SQLite {sqlite3.sqlite_version} ({sqlite3.__name__})"
