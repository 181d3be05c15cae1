"""What each MCP tool does: a thin translation onto the library, SDK-free.

``MemoryTools.call(name, arguments)`` returns the reply text or raises an
``AnnealMemoryError`` whose message is the tool error the agent sees.
"""

from __future__ import annotations

import shlex
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from ..crystal import CrystalStore, retrieve_patterns
from ..errors import EpisodeNotFoundError, WrapTokenError
from ..spores import SporeStore
from ..store import Store, default_db_path
from ..trust import lower
from ..wrap.baton import baton_holder
from ..wrap.lifecycle import open_wrap_info
from ..wrap.prepare import prepare_wrap
from ..wrap.render import render_package
from ..wrap.save import validated_save_continuity
from . import replies
from .args import (
    CrystalRecallArgs,
    EpisodeIdArgs,
    NoArgs,
    PrepareWrapArgs,
    RecallArgs,
    RecordArgs,
    SaveContinuityArgs,
    SporeAddArgs,
    SporeAscendArgs,
    SporeDescendArgs,
    SporeIdArgs,
    SporeListArgs,
    SporeSurfaceArgs,
    SporeUpdateArgs,
    WrapCancelArgs,
    check_call,
)

DEFAULT_RECALL_LIMIT = 20


class MemoryTools:
    """The 17 tools over one store. The session id is fixed when the server starts.
    ``remote``: served over HTTP to a token holder, who is shown the store's file name,
    never its absolute path."""

    def __init__(self, store: Store, session_id: str | None = None, *,
                 remote: bool = False) -> None:
        self.store = store
        self.session_id = session_id
        self.remote = remote
        self._default_store: bool | None = None  # _is_default_store, once asked
        self.crystals = CrystalStore(store)
        self.spores = SporeStore(store)
        # Each handler takes its tool's checked arguments (args.ARGS_OF): check_call held
        # the call to the tool's input schema, which test_mcp_args_types holds those
        # TypedDicts to; the table itself maps a name to whichever handler, so it erases
        # the argument type there and only there.
        self._table: dict[str, Callable[[Any], str]] = {
            "record": self.record, "recall": self.recall, "prepare_wrap": self.prepare_wrap,
            "save_continuity": self.save_continuity, "delete_episode": self.delete_episode,
            "status": self.status, "wrap_cancel": self.wrap_cancel,
            "crystal_recall": self.crystal_recall, "crystal_index": self.crystal_index,
            "spore_add": self.spore_add, "spore_list": self.spore_list,
            "spore_surface": self.spore_surface, "spore_get": self.spore_get,
            "spore_update": self.spore_update, "spore_touch": self.spore_touch,
            "spore_descend": self.spore_descend, "spore_ascend": self.spore_ascend,
        }

    def call(self, name: str, arguments: Mapping[str, object] | None) -> str:
        """Check the arguments against the tool's schema, then run it."""
        args = check_call(name, arguments)
        return self._table[name](args)

    # ------------------------------------------------------------------ the gate
    @property
    def _wrap_session(self) -> str | None:
        # A store without the baton policy wraps as it always did: the id is not used.
        return self.session_id if self.store.consolidate_requires_baton() else None

    def _claim_command(self) -> str:
        sid = self.session_id or "NAME"
        db = ("" if self._is_default_store() else
              f"--db {shlex.quote(self._store_name)} ")
        ns = self.store.namespace
        # the partial form: the reserved "default" is what a field left out means
        scope = "".join(f"--namespace {shlex.quote(f'{k}={v}')} "
                        for k, v in (ns.to_partial().items() if ns is not None else ()))
        return f"anneal-memory {db}{scope}baton claim {sid}"

    @property
    def _store_name(self) -> str:
        """The store as this client may see it: its path over stdio (the client's own
        machine), only its file name over HTTP."""
        return self.store.path.name if self.remote else str(self.store.path)

    def _is_default_store(self) -> bool:
        # asked once per tools object: both paths are fixed while a server runs, and
        # resolving them (the filesystem walked) was ~0.5 ms of every gated status
        if self._default_store is None:
            try:
                self._default_store = default_db_path().resolve() == self.store.path.resolve()
            except Exception:
                self._default_store = False
        return self._default_store

    def gate_text(self, waiting: int | None = None) -> str | None:
        """None when this session may consolidate, else what the operator must do.
        ``waiting``: the episodes since the last wrap, when the caller has just counted
        them (else they are counted here)."""
        if not self.store.consolidate_requires_baton():
            return None
        holder = baton_holder(self.store)  # a view's own namespace's baton
        if self.session_id and holder == self.session_id:
            return (f"Consolidation: this session ({self.session_id}) holds the baton and may "
                    "wrap.")
        if waiting is None:
            waiting = self.store.status().episodes_since_wrap
        start = ("" if self.session_id else "this server was started without --session-id: "
                 "restart it with 'serve --session-id NAME', then ")
        return (f"Consolidation: capture-only (baton holder: {holder or 'nobody'}). "
                f"{waiting} episode(s) waiting. To let this session wrap, {start}the operator "
                f"runs in their own shell: {self._claim_command()}")

    @property
    def _default_trust(self) -> str:
        # a token below agent (tool, external) labels its writes with its own ceiling
        return lower("agent", self.store.trust_ceiling)

    # ------------------------------------------------------------------ memory
    def record(self, a: RecordArgs) -> str:
        ep = self.store.record(a["content"], a["episode_type"], source=a.get("source", "agent"),
                               metadata=a.get("metadata"), supersedes=a.get("supersedes"),
                               state_key=a.get("state_key"),
                               trust=a.get("trust", self._default_trust),
                               derived_from=a.get("derived_from"))
        out = f"Recorded [{ep.id}] ({ep.type.value}, trust {ep.trust})."
        if a.get("supersedes"):
            out += f" It replaces {', '.join(a['supersedes'])}."
        if ep.state_key:
            out += f" State key: {ep.state_key}."
        return out

    def recall(self, a: RecallArgs) -> str:
        if "episode_id" in a:
            ep = self.store.get(a["episode_id"])
            if ep is None:
                return f"No episode with id {a['episode_id']!r} (it may have been deleted)."
            out = [replies.episode_line(ep, full=True)]
            if ep.trust in ("tool", "external"):
                out.insert(0, f"## {replies.RELAYED_HEADING}")
            if ep.superseded_by:
                out.append(f"Replaced since by [{ep.superseded_by}].")
            if ep.derived_from:
                out.append(f"Derived from: {', '.join(ep.derived_from)}")
            return "\n".join(out)
        q: dict[str, Any] = {"since": a.get("since"), "until": a.get("until"),
                             "episode_type": a.get("episode_type"), "keyword": a.get("keyword"),
                             "source": a.get("source"), "offset": a.get("offset", 0)}
        limit = a.get("limit", DEFAULT_RECALL_LIMIT)
        if a.get("include_superseded"):
            res = self.store.recall(**q, limit=limit, include_superseded=True)
            return replies.recall_reply(res.episodes, res.total_matching, [], {},
                                        match=res.query_params.get("match"))
        res = self.store.recall(**q, limit=limit)
        every = self.store.recall(**q, limit=limit, include_superseded=True)
        replaced = [e for e in every.episodes if e.superseded_by]
        replacers = (self.store.get_many([e.superseded_by for e in replaced if e.superseded_by])
                     if replaced else {})  # nothing replaced: no read (a round trip on PG)
        return replies.recall_reply(res.episodes, res.total_matching, replaced, replacers,
                                    match=res.query_params.get("match"))

    def delete_episode(self, a: EpisodeIdArgs) -> str:
        report = self.store.erase([a["episode_id"]])
        if not report.episodes:
            raise EpisodeNotFoundError(f"no episode {a['episode_id']!r} in this store: nothing "
                                       "was deleted (recall to find the id)")
        lines = len(report.continuity_lines)
        return (f"Deleted [{a['episode_id']}]: its text is gone from the database"
                + (f" and {lines} continuity line(s) that quoted it" if lines else "")
                + "; a tombstone and the audit trail keep a salted hash."
                + (" A wrap had compressed it but no continuity line quotes it: the "
                   "continuity may paraphrase it." if report.unlocated else ""))

    def status(self, a: NoArgs) -> str:
        status = self.store.status().to_dict()
        gate = self.gate_text(status["episodes_since_wrap"])
        if self.remote:
            status["path"] = f"{self._store_name} (served over HTTP)"
        return replies.status_reply(status, gate, self.store.wrap_history(1))

    # ------------------------------------------------------------------ the wrap
    def prepare_wrap(self, a: PrepareWrapArgs) -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = prepare_wrap(self.store, session_id=self._wrap_session,
                             crystal_store=self.crystals, max_chars=a.get("max_chars"),
                             staleness_days=a.get("staleness_days", 7))
        if w["status"] == "empty":
            return "No episodes since the last wrap: nothing to compress. Skip the wrap."
        if w["status"] == "downgraded" or w["package"] is None:  # ready: it has its package
            return (f"Capture-only: no wrap was opened. {self.gate_text() or w['message']}\n"
                    "Your episodes are kept for the next wrap this session is allowed to make.")
        out = [render_package(w["package"]), "", f"Wrap token: {w['wrap_token']}",
               "Write the new continuity, then call save_continuity with it and this token."]
        if w.get("schema_warning"):
            out.insert(0, f"Schema warning: {w['schema_warning']}\n")
        return "\n".join(out)

    def save_continuity(self, a: SaveContinuityArgs) -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = validated_save_continuity(
                self.store, a["text"], wrap_token=a.get("wrap_token"),
                allow_shrink=a.get("allow_shrink") is True,
                session_id=self._wrap_session, crystal_store=self.crystals)
        return replies.save_reply(result)

    def wrap_cancel(self, a: WrapCancelArgs) -> str:
        open_wrap = open_wrap_info(self.store)
        if "wrap_token" in a and (open_wrap is None or a["wrap_token"] != open_wrap["token"]):
            raise WrapTokenError("that wrap token is not the open wrap's: nothing was "
                                 "cancelled (call status to see the open wrap)")
        if open_wrap is None:
            return "No wrap is in progress: nothing to cancel."
        self.store.wrap_cancelled(wrap_token=a.get("wrap_token"),
                                  session_id=a.get("session_id"), force=a.get("force", False),
                                  expect_partial=a.get("partial") is True)
        return (f"Wrap cancelled; its {len(open_wrap['episode_ids'])} episode(s) go to the "
                "next prepare_wrap.")

    # ------------------------------------------------------------------ crystals
    def crystal_recall(self, a: CrystalRecallArgs) -> str:
        found = retrieve_patterns(self.crystals, a["query"], max_patterns=a.get("max_patterns", 3),
                                  mode=a.get("mode", "prompt"), store=self.store)
        if not found:
            return "No crystallized pattern matches."
        out = []
        for m in found:
            out.append(f"- {m.name} ({m.level}x, via {' and '.join(m.via)}): {m.text}")
            if m.evidence:
                out.append(f"  evidence: {', '.join(m.evidence)}")
        return "\n".join(out)

    def crystal_index(self, a: NoArgs) -> str:
        return self.crystals.cue_index() or "No crystallized patterns yet."

    # ------------------------------------------------------------------ spores
    def spore_add(self, a: SporeAddArgs) -> str:
        s = self.spores.add(**a)
        return f"Planted {s.id}.\n{replies.spore_line(s)}"

    def spore_list(self, a: SporeListArgs) -> str:
        return replies.spores_reply(self.spores.list_open(**a), "No open spores.")

    def spore_surface(self, a: SporeSurfaceArgs) -> str:
        return replies.spores_reply(self.spores.surface(limit=a.get("limit", 5),
                                                        top_of_mind=a.get("top_of_mind") is True),
                                    "Nothing needs attention now.")

    def spore_get(self, a: SporeIdArgs) -> str:
        s = self.spores.get(a["spore_id"])
        if s is None:
            raise EpisodeNotFoundError(f"no spore {a['spore_id']!r}: spore_list shows the "
                                       "open ones")
        return replies.spore_detail(s)

    def spore_update(self, a: SporeUpdateArgs) -> str:
        return replies.spore_detail(self.spores.update(
            a["spore_id"], text=a.get("text"), type=a.get("type"), tier=a.get("tier"),
            salience=a.get("salience"), domain=a.get("domain"), next=a.get("next"),
            clear_next=a.get("clear_next", False), pointer=a.get("pointer"),
            add_note=a.get("add_note")))

    def spore_touch(self, a: SporeIdArgs) -> str:
        return replies.spore_line(self.spores.touch(a["spore_id"]))

    def spore_descend(self, a: SporeDescendArgs) -> str:
        s = self.spores.descend(a["spore_id"], kind=a["kind"], note=a.get("note"))
        return replies.spore_detail(s)

    def spore_ascend(self, a: SporeAscendArgs) -> str:
        s = self.spores.ascend(a["spore_id"], kind=a["kind"], ref=a["ref"], note=a.get("note"))
        return replies.spore_detail(s)
