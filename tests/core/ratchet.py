"""A baseline that only shrinks (shared by the layer test and the adapter-import test):
what is found beyond the baseline is new and fails; a baselined entry that is no longer
found is fixed, and fails until its line is deleted."""

from __future__ import annotations

from collections.abc import Set


def nothing_new(found: Set[str], baseline: Set[str], what: str) -> None:
    new = sorted(found - baseline)
    assert not new, f"{what}:\n  " + "\n  ".join(new)


def nothing_gone(found: Set[str], baseline: Set[str], where: str) -> None:
    gone = sorted(baseline - found)
    assert not gone, (f"these baselined entries are gone: delete their lines from BASELINE "
                      f"in {where}:\n  " + "\n  ".join(gone))
