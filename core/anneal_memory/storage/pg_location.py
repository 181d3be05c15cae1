"""Telling a PostgreSQL location from a SQLite path (standard library only).

A store location is a file path or a ``postgresql://`` / ``postgres://`` URL. A URL that
went through ``pathlib.Path`` (the CLI's ``--db``) has lost one slash of its ``//``;
it is recognised and restored here, so ``Path(url)`` selects the same server.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PosixPath, WindowsPath
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .._lazy import sha256_hex

ENV_SIDECAR_DIR = "ANNEAL_MEMORY_SIDECAR_DIR"
_SCHEMES = ("postgresql", "postgres")


def pg_dsn(location: Any) -> str | None:
    """The connection URL when ``location`` names a PostgreSQL database, else None."""
    dsn = getattr(location, "pg_dsn", None)
    if isinstance(dsn, str) and dsn:
        return dsn
    if not isinstance(location, (str, os.PathLike)):
        return None
    text = os.fspath(location)
    if not isinstance(text, str):
        return None
    for collapsed in ("postgresql:/", "postgres:/"):  # a path join folded its "//"
        if text.startswith(collapsed) and text[len(collapsed):len(collapsed) + 1] != "/":
            text = collapsed + "/" + text[len(collapsed):]
            break
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    return text if scheme in _SCHEMES else None


def redact(dsn: str) -> str:
    """The URL without its password, for messages and reprs."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    netloc = f"{parts.username}:***@{host}" if parts.username else f"***@{host}"
    return urlunsplit(parts._replace(netloc=netloc))


_Base: Any = WindowsPath if os.name == "nt" else PosixPath


class PgSidecarPath(_Base):  # type: ignore[misc, valid-type]
    """The local base path for a PostgreSQL store's per-host sidecar files (crystal,
    spores, outcome log), carrying the store's URL so that helpers handed ``store.path``
    (the baton, the audit verifier) reach the database instead of a local file."""

    pg_dsn: str = ""


def sidecar_base(dsn: str) -> PgSidecarPath:
    """``$ANNEAL_MEMORY_SIDECAR_DIR`` (else ``~/.anneal-memory/pg``) / ``<server-db>/memory.db``."""
    env = os.environ.get(ENV_SIDECAR_DIR)
    root = Path(env).expanduser() if env else Path.home() / ".anneal-memory" / "pg"
    parts = urlsplit(dsn)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_",
                  f"{parts.hostname or 'local'}-{parts.port or 5432}-{parts.path.strip('/') or 'db'}")
    tag = sha256_hex(redact(dsn).encode("utf-8"))[:8]
    p = PgSidecarPath(root / f"{name}-{tag}" / "memory.db")
    p.pg_dsn = dsn
    return p
