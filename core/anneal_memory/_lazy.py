"""Standard-library pieces loaded on first use, so that importing the package stays fast
(``hashlib`` loads OpenSSL, ``logging`` loads ``traceback``): a cost paid by the first
record or warning, not by every ``import anneal_memory``."""

from __future__ import annotations

import os
from collections import deque
from typing import Any


def sha256_hex(data: bytes) -> str:
    """The SHA-256 hex digest of ``data``."""
    import hashlib

    return hashlib.sha256(data).hexdigest()


def token_hex(nbytes: int) -> str:
    """``nbytes`` random bytes from the OS's secure source, as hex (``secrets.token_hex``)."""
    return os.urandom(nbytes).hex()


#: 8-byte draws from the OS's secure source, read 512 at a time: every ``os.urandom``
#: call lets go of the interpreter lock, and 50 threads recording at once then each wait
#: to get it back once per episode id
_ID_BYTES: deque[bytes] = deque()
_ID_DRAW = 8
_ID_BATCH = 512


def id_token() -> str:
    """16 hex digits of fresh OS randomness for a new id (the source of
    :func:`token_hex`, drawn ahead in batches; never shared with a forked child)."""
    try:
        return _ID_BYTES.popleft().hex()
    except IndexError:  # empty: refill (two threads refilling at once both add fresh bytes)
        block = os.urandom(_ID_DRAW * _ID_BATCH)
        _ID_BYTES.extend(block[i:i + _ID_DRAW] for i in range(_ID_DRAW, len(block), _ID_DRAW))
        return block[:_ID_DRAW].hex()


if hasattr(os, "register_at_fork"):  # a child must not draw the parent's bytes again
    os.register_at_fork(after_in_child=_ID_BYTES.clear)


class LazyLogger:
    """A module's logger that imports :mod:`logging` on its first message."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        import logging

        return getattr(logging.getLogger(self._name), attr)
