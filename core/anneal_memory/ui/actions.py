"""The operator's actions: each POST runs one library call, the same call (and so the same
audit event) the CLI or the library user would make, and answers with a message.

approve / reject a governed review (``MemoryRuntime.approve`` / ``reject_review``:
``gov_review_decided``), mark the worklist reviewed (``mark_worklist_reviewed``:
``worklist_reviewed``), set an episode's trust (``Store.set_trust``: ``trust_set``;
raising it is operator-only, as in the CLI), demote or retire a pattern by hand
(``demote_pattern`` / ``retire_pattern``: ``pattern_demoted`` / ``pattern_retired``),
erase a whole namespace (``Store.erase_namespace``: ``namespace_erased``; operator-only,
and the operator types the namespace's label to confirm).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..errors import ValidationError
from ..governance import MemoryRuntime
from ..immune.review import demote_pattern, mark_worklist_reviewed, retire_pattern
from ..store import Store
from ..types import TRUST_LEVELS, coerce_trust


@dataclass
class Act:
    """One action's request: the store (or namespace view) it acts on and its fields."""

    store: Store
    form: Mapping[str, str]
    operator_via: str | None  # how the operator gate was passed at start, or None
    reviewer: str = "operator"  # who is logged in: the console's operator, never a form field

    def field(self, name: str) -> str:
        value = self.form.get(name, "").strip()
        if not value:
            raise ValidationError(f"the form is missing {name!r}: use the console's own form")
        return value


def approve(a: Act) -> str:
    res = MemoryRuntime(a.store).approve(a.field("review_id"), reviewer=a.reviewer)
    if res.outcome == "written":
        return f"approved: committed as {res.reason}"
    return f"approval refused by the write gate ({res.reason}); the review is closed"


def reject(a: Act) -> str:
    MemoryRuntime(a.store).reject_review(a.field("review_id"), reviewer=a.reviewer)
    return "rejected: nothing was written"


def reviewed(a: Act) -> str:
    raw = a.form.get("through", "").strip()
    if raw and not raw.isdigit():
        raise ValidationError("through must be a wrap id (a whole number)")
    done = mark_worklist_reviewed(a.store, through_wrap=int(raw) if raw else None)
    return f"worklist marked reviewed through wrap {done['through_wrap']} ({done['items']} item(s))"


def trust(a: Act) -> str:
    eid, level = a.field("id"), coerce_trust(a.field("trust"))
    ep = a.store.get(eid)
    if ep is None:
        raise ValidationError(f"no episode {eid!r} in this view: check the id")
    current = ep.trust  # as the CLI compares: the class recall shows
    if TRUST_LEVELS[level] > TRUST_LEVELS[current]:
        if a.operator_via is None:
            from ..errors import TrustError

            raise TrustError(f"raising the trust of {eid} from {current} to {level} is "
                             "operator-only: restart the console in operator mode (the ui "
                             "command's operator option asks on the terminal, or reads "
                             "ANNEAL_OPERATOR=1); nothing changed")
        was = a.store.set_trust(eid, level, via=f"ui-{a.operator_via}")
    else:
        was = a.store.set_trust(eid, level, via="ui")
    return f"{eid}: trust {was} -> {level}"


def demote(a: Act) -> str:
    raw = a.field("level")
    if not raw.isdigit():
        raise ValidationError("level must be a whole number such as 1")
    res = demote_pattern(a.store, a.field("name"), int(raw))
    return f"{res['name']}: demoted {res['from']}x -> {res['to']}x"


def retire(a: Act) -> str:
    res = retire_pattern(a.store, a.field("name"))
    return f"{res['name']}: retired ({res['lines_removed']} line(s) removed)"


def erase(a: Act) -> str:
    ns = getattr(a.store, "namespace", None)
    if ns is None:
        raise ValidationError("open the namespace to erase first (Namespaces page): the root "
                              "store is not erased from the console; nothing changed")
    if a.operator_via is None:
        from ..errors import TrustError

        raise TrustError(f"erasing {ns.label()} is operator-only: restart the console in "
                         "operator mode (ANNEAL_OPERATOR=1, or confirm on the terminal); "
                         "nothing changed")
    if a.form.get("confirm", "").strip() != ns.label():
        raise ValidationError(f"type the namespace's label {ns.label()!r} exactly to confirm "
                              "the erasure; nothing changed")
    report = a.store.erase_namespace()
    return (f"erased {ns.label()}: {len(report.episodes)} episode(s), its continuity, items "
            f"and {report.governed_records} governed record version(s)")


ACTIONS: dict[str, Callable[[Act], str]] = {
    "/act/approve": approve, "/act/reject": reject, "/act/reviewed": reviewed,
    "/act/trust": trust, "/act/demote": demote, "/act/retire": retire, "/act/erase": erase,
}
