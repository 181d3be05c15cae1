"""Rows into episodes: what the facade, recall and the wrap read path share.

A stored :class:`~.storage.base.EpisodeRow` becomes the public :class:`~.types.Episode`
with three facts read beside it: the episode that replaced it (if any), the episodes it
was derived from, and its effective trust (a derived episode is capped by its most
trusted source). Recall, ``prepare_wrap`` and the Store's own reads all turn rows into
episodes here, through the repositories, never through the Store's privates.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from . import trust
from ._seam import roles_of
from ._unit import Ground
from .storage.base import EpisodeRow
from .storage.rows import Source, Successor
from .types import Episode, EpisodeType

#: the replacement links of each id: ``[Successor(new_id, kind, created_at), ...]``
Supersessions = dict[str, list[Successor]]
#: the sources of each derived id: ``[Source(source_id, removed_trust or None), ...]``
Derivations = dict[str, list[Source]]


def episode(row: EpisodeRow, superseded_by: str | None = None,
            derived_from: Sequence[str] = (), trust_value: str | None = None) -> Episode:
    """The public episode of one row, with the links read beside it (none by default)."""
    meta = json.loads(row.metadata) if row.metadata else None
    return Episode(
        id=row.id, timestamp=row.timestamp, type=EpisodeType(row.type), content=row.content,
        source=row.source, session_id=row.session_id, metadata=meta,
        superseded_by=superseded_by, trust=trust_value or row.trust, state_key=row.state_key,
        derived_from=list(derived_from),
    )


def episode_links(ground: Ground, rows: Sequence[EpisodeRow], *, kept: bool = False
                  ) -> tuple[Supersessions, Derivations, dict[str, str]]:
    """For rows read through ``ground``'s repositories: their replacement links, their
    sources, and the effective trust of the derived ones (the others keep their own
    class). A store without any link or derivation skips the lookups. ``kept``: whether
    the link tables are used is kept per database state (``EpisodeRepo.memo``; for a
    caller inside a read snapshot, where the state costs no statement)."""
    ids = [r.id for r in rows]
    roles = roles_of(ground)
    links = roles.links
    if not ids:
        used_links, used_derivations = False, False
    elif kept:
        used_links, used_derivations = roles.episodes.memo(("link_tables_used",),
                                                           links.link_tables_used)
    else:
        used_links, used_derivations = links.link_tables_used()
    sup = links.supersessions_of(ids) if used_links else {}
    der = links.derivations_of(ids) if used_derivations else {}
    derived = [i for i in ids if i in der]  # only derived episodes can differ from their class
    eff = trust.effective_trust_map(ground, derived) if derived else {}
    return sup, der, eff


def to_episodes(ground: Ground, rows: Sequence[EpisodeRow], *, kept: bool = False
                ) -> list[Episode]:
    """The public episodes of ``rows``, in their order, links and effective trust read
    through ``ground``'s repositories (``kept``: as :func:`episode_links`)."""
    sup, der, eff = episode_links(ground, rows, kept=kept)
    out = []
    for r in rows:
        replaced = sup.get(r.id)
        out.append(episode(r, superseded_by=replaced[-1][0] if replaced else None,
                           derived_from=[s for s, _ in der.get(r.id, [])],
                           trust_value=eff.get(r.id)))
    return out
