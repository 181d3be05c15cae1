"""Standard-library pieces loaded on first use, so that importing the package stays fast
(``hashlib`` loads OpenSSL, ``logging`` loads ``traceback``): a cost paid by the first
record or warning, not by every ``import anneal_memory``."""

from __future__ import annotations

import os
from typing import Any


def sha256_hex(data: bytes) -> str:
    """The SHA-256 hex digest of ``data``."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


def token_hex(nbytes: int) -> str:
    """``nbytes`` random bytes from the OS's secure source, as hex (``secrets.token_hex``)."""
    return os.urandom(nbytes).hex()


class LazyLogger:
    """A module's logger that imports :mod:`logging` on its first message."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        import logging

        return getattr(logging.getLogger(self._name), attr)
