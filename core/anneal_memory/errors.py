"""Every refusal the library makes is one of these, so callers can catch one base.

::

    AnnealMemoryError
    ├── ValidationError            bad argument value (empty content, bad timestamp, bad key)
    │   ├── UnknownEpisodeTypeError
    │   ├── TrustError             a trust label above the store's ceiling, or unknown
    │   ├── IdentityError          a namespace / identity value that is empty, blank or invisible
    │   ├── ContentTooLargeError   an episode longer than the store's bound (max_episode_chars)
    │   └── SchemaError            an invalid continuity section schema
    ├── EpisodeNotFoundError       an id that is not in the store (also LookupError)
    ├── SupersessionError          a supersession link that fails validation
    ├── StoreError                 the database file: missing folder, unwritable, not ours, corrupt
    │   ├── StoreLocationError     no usable path (no home directory and no --db)
    │   ├── ReadOnlyStoreError     a write on a store opened read_only
    │   └── StoreGoneError         the database is missing or empty but the store's files remain
    ├── ContinuityValidationError  a continuity save refused by the wrap pipeline
    ├── WrapError                  a wrap-lifecycle refusal
    │   ├── WrapInProgressError    an action that cannot run while a wrap is open
    │   ├── NoWrapInProgressError  a save with no prepared wrap (or a second save of one)
    │   ├── WrapTokenError         a missing, wrong or stale wrap token
    │   └── BatonError             the single-consolidator gate refused
    ├── AuditError                 the audit trail cannot be appended or read
    ├── SidecarError               a crystal / spore / outcome sidecar file problem
    ├── GovernanceError            the governed runtime refused a call
    ├── EmbedderError              an embedder that cannot be used, or that failed (also ValueError)
    └── MissingExtraError          (also an ImportError) an adapter's framework is not installed

Each message says what was wrong and how to fix it.

Code written for anneal-memory 1.0.2 catches ``ValueError`` for refused input, so every
refusal of a value is also a ``ValueError``: ``ValidationError`` and its children,
``EpisodeNotFoundError`` (also a ``LookupError``), ``SupersessionError``,
``ContinuityValidationError`` (missing section, oversized save, the shrink gate),
``WrapInProgressError``, ``NoWrapInProgressError``, ``WrapTokenError`` and ``BatonError``.
The file-level errors (``StoreError``, ``AuditError``, ``SidecarError``) are not, as in
1.0.2.
"""

from __future__ import annotations


class AnnealMemoryError(Exception):
    """Base of every error this library raises on purpose."""

    #: exit status the CLI uses for this error
    exit_code: int = 1


class ValidationError(AnnealMemoryError, ValueError):
    """An argument has a value the library cannot accept."""


class UnknownEpisodeTypeError(ValidationError):
    """An episode type that is not one of the six."""


class TrustError(ValidationError):
    """An unknown trust class, or one above the store's trust ceiling."""


class SchemaError(ValidationError):
    """A continuity section schema that cannot be used."""


class IdentityError(ValidationError):
    """An identity (a namespace value, or the id a framework carries for a run) that is
    empty, whitespace, made of invisible characters or holds one: it would name the root
    memory, everyone's, or a user that displays as another. Nothing was written or read."""


class ContentTooLargeError(ValidationError):
    """An episode's content longer than the store's ``max_episode_chars``."""


class EpisodeNotFoundError(AnnealMemoryError, LookupError, ValueError):
    """No episode with that id in this store."""


class SupersessionError(AnnealMemoryError, ValueError):
    """A supersession link or state key that fails validation; nothing was recorded."""


class StoreError(AnnealMemoryError):
    """The database file cannot be used."""


class StoreLocationError(StoreError):
    """No store path could be worked out."""


class ReadOnlyStoreError(StoreError):
    """A write was attempted on a store opened with read_only=True."""


class StoreGoneError(StoreError):
    """The database file is missing or empty while files of its store (audit trail,
    continuity, sidecars, a write-ahead log) are still beside it: the memory was lost, and
    opening it would silently start a new, empty one. Nothing was created or changed.
    ``found`` lists the files that are still there."""

    def __init__(self, message: str, found: list[str] | None = None) -> None:
        super().__init__(message)
        self.found = list(found or [])


class ContinuityValidationError(AnnealMemoryError, ValueError):
    """The wrap pipeline refused a continuity save; the wrap stays open. A refusal for
    size carries ``chars``, ``bound`` and ``target`` as attributes (as 1.0.2's does)."""

    def __init__(self, message: str = "", **details: object) -> None:
        super().__init__(message)
        for key, value in details.items():
            setattr(self, key, value)


class WrapError(AnnealMemoryError):
    """A wrap lifecycle refusal."""


class WrapInProgressError(WrapError, ValueError):
    """The action cannot run while a wrap is open."""


class NoWrapInProgressError(WrapError, ValueError):
    """A save was attempted with no wrap prepared."""


class WrapTokenError(WrapError, ValueError):
    """The wrap token is missing, wrong or stale."""


class BatonError(WrapError, ValueError):
    """The single-consolidator gate refused the action."""


class AuditError(AnnealMemoryError):
    """The audit trail could not be read or appended."""


class SidecarError(AnnealMemoryError):
    """A sidecar file (crystal, spores, outcomes, baton) is unusable."""


class GovernanceError(AnnealMemoryError):
    """The governed memory runtime refused a call."""


class EmbedderError(AnnealMemoryError, ValueError):
    """An embedder that cannot be used (not a callable or an embeddings object), or one
    whose output is not one vector of numbers per text; nothing was written."""


class MissingExtraError(AnnealMemoryError, ImportError):
    """An adapter's framework is not installed."""

    def __init__(self, framework: str, extra: str) -> None:
        super().__init__(
            f"the {framework} adapter needs {framework}, which is not installed: "
            f"pip install 'anneal-memory[{extra}]'"
        )
        self.framework = framework
        self.extra = extra
