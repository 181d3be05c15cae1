"""Upkeep of the two FTS5 keyword indexes: scrub deleted text, keep them bounded, heal.

A delete leaves the removed row's tokens in older index segments until a merge drops
them, so each delete is followed by ``optimize``. On SQLite before 3.45 every optimize
adds a level to the index's structure record, and past 2,000 levels FTS5 declares the
table corrupt ("database disk image is malformed", then "vtable constructor failed" on
every later statement). The level count is read back after each optimize and the index is
rebuilt from the episodes table long before that limit; a store already broken that way
is healed the same way when it is opened.
"""

from __future__ import annotations

from .sqlite_conn import RawConnection

FTS_TABLES = ("episodes_words", "episodes_tri")
STRUCTURE_ROWID = 10  # FTS5 keeps its structure record in %_data under this id
MAX_LEVELS = 1000     # rebuild well before FTS5's own limit of 2,000
_EMPTY_STRUCTURE = bytes(6)  # cookie 0, no levels, no segments, write counter 0


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = 0
    for k in range(9):
        byte = buf[i]
        i += 1
        if k == 8:
            return (value << 8) | byte, i
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            break
    return value, i


def structure_levels(conn: RawConnection, table: str) -> int:
    """How many levels the index's structure record holds (0 when it holds none)."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id=?",
                       (STRUCTURE_ROWID,)).fetchone()
    block = bytes(row[0]) if row and isinstance(row[0], (bytes, bytearray, memoryview)) \
        else b""
    if len(block) < 5:
        return 0
    start = 8 if block[4:8] == b"\xff\xff\xff\xff" else 4  # v2 records carry a tag
    return _varint(block, start)[0]


def rebuild(conn: RawConnection, table: str) -> None:
    """Rebuild one index from the episodes table, starting from an empty structure, so
    this also works when the old structure record can no longer be read."""
    conn.execute(f"DELETE FROM {table}_data")
    conn.execute(f"DELETE FROM {table}_idx")
    conn.execute(f"INSERT INTO {table}_data(id, block) VALUES (?, ?)",
                 (STRUCTURE_ROWID, _EMPTY_STRUCTURE))
    conn.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")


def scrub(conn: RawConnection) -> None:
    """Merge both indexes into one segment each (the deleted rows' tokens go with the old
    segments), rebuilding one whose structure has grown too deep. Run inside a write
    transaction."""
    for table in FTS_TABLES:
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        if structure_levels(conn, table) > MAX_LEVELS:
            rebuild(conn, table)


def broken_tables(conn: RawConnection, error: type[BaseException]) -> list[str]:
    """The indexes that cannot be opened or whose structure is past the bound."""
    bad = []
    for table in FTS_TABLES:
        try:
            conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH '\"a\"' LIMIT 1").fetchall()
            if structure_levels(conn, table) > MAX_LEVELS:
                bad.append(table)
        except error:
            bad.append(table)
    return bad
