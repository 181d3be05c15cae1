"""What links the audit trail's entries into one chain: the hash of an entry and the first
entry's ``prev_hash``. Below the audit trail and the storage that keeps its copies, so both
(and the 1.0.2 upgrade, which writes the bridge entry) hash an entry the same way."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple, TypedDict

from ._lazy import sha256_hex

GENESIS = "0" * 64

#: The database meta key recording the newest entry known to be in the files.
MIRRORED_SEQ_KEY = "audit_mirrored_seq"


class AuditEntry(TypedDict):
    """One entry of the chain as the trail writes and reads it back (a line of the audit
    files holds these keys; ``hash`` covers the others)."""

    seq: int
    ts: str
    actor: str
    event: str
    data: dict[str, Any]  # each event its own JSON (ids, counts, salted label hashes)
    prev_hash: str
    hash: str


class StagedEntry(NamedTuple):
    """An audit entry before its place in the chain: see :meth:`audit.AuditTrail.stage`."""

    event: str
    actor: str
    data: dict[str, object]  # labels hashed
    canonical: str  # ``canonical_json(data)``: what the entry's hash covers
    stored: str  # the data as the database's column holds it
    counter: str | None = None  # the meta counter the entry adds one to


def entry_hash(entry: Mapping[str, Any]) -> str:
    """Hash of an entry's canonical JSON, every field but ``hash`` itself."""
    body = {k: entry.get(k) for k in ("seq", "ts", "actor", "event", "data", "prev_hash")}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256_hex(canonical.encode("utf-8", "surrogatepass"))


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def _STRING(value: object) -> str:
    """``_CANONICAL(value)``, without the encoder's call for a str (what chain_entry's
    fields are: each entry hashes five of them)."""
    return _ENCODE_STR(value) if type(value) is str else _CANONICAL(value)  # noqa: E721


_ENCODE_STR = json.encoder.encode_basestring  # what the encoder uses with ensure_ascii=False


def canonical_json(value: Any) -> str:
    """``value`` as the chain's hash serialises it (sorted keys, compact, unescaped)."""
    return _CANONICAL(value)


def chain_hash(seq: int, ts: str, actor: str, event: str, data_json: str, prev_hash: str) -> str:
    """:func:`entry_hash` of the entry these fields make, its data given already as
    ``canonical_json(data)``: the canonical JSON of the entry is that of its fields in
    key order, so a writer serialises each entry's data once, before it knows its seq."""
    return chain_entry(seq, ts, actor, event, data_json, prev_hash)[0]


def chain_entry(seq: int, ts: str, actor: str, event: str, data_json: str,
                prev_hash: str) -> tuple[str, str]:
    """(hash, line): :func:`chain_hash`, and the entry with its hash as the audit files'
    line holds it (``audit.entry_line``: the same canonical JSON, ``hash`` in its place)."""
    c = _STRING  # a str as _CANONICAL writes it (the encoder's own fast path for one)
    seq_json = str(seq) if type(seq) is int else _CANONICAL(seq)  # noqa: E721 (not a bool)
    head = f'{{"actor":{c(actor)},"data":{data_json},"event":{c(event)},'
    tail = f'"prev_hash":{c(prev_hash)},"seq":{seq_json},"ts":{c(ts)}}}'
    h = sha256_hex((head + tail).encode("utf-8", "surrogatepass"))
    return h, f'{head}"hash":"{h}",{tail}'
