"""Differences from 1.0.2 that we keep on purpose: scenario -> {observation path: reason}.

A path covers itself and everything below it; a ``*`` in it matches any run of characters
(``*/origin_key``). Each reason ends with ``(migrating#section)``, the section of
docs/migrating.md that tells users. The differential tests fail on a difference not listed
here and on a listed one that no longer differs.
"""

from __future__ import annotations

INPUT = "1.0.2 stored input it could not use; we refuse it with a typed error (migrating#input)"
GET_REPLACED = ("get() says what replaced an episode; 1.0.2's get() always said None "
                "(migrating#superseded-by)")
HISTORY = ("1.0.2 never writes the pattern history that carryforward, the cross-session check "
           "and omitted-pattern detection read, so there they never fire; we follow the "
           "README (migrating#pattern-history)")
SCAN = ("a new Proven without a contradiction stance is listed (and audited), as the README "
        "says; 1.0.2 left the list empty (migrating#contradiction-scan)")
ORIGIN = "origin keys and crystal revisions are not carried (migrating#origin-keys)"
RANKING = "scored recall ranks by our own scoring (migrating#recall-ranking)"
AUDIT_FORMAT = "our audit entries carry their own hash, no 'v' (migrating#audit-format)"
INIT_ENTRY = ("init audits the schema it creates the store with: one entry more "
              "(migrating#audit-format)")

DEVIATIONS: dict[str, dict[str, str]] = {
    "record_refusals": {
        "/bad_timestamp": INPUT,
        "/metadata_not_dict": INPUT,
        "/recall.bad_limit": INPUT,
        "/recall.bad_since": INPUT,
        "/count_after": INPUT,
    },
    "supersession": {"/get.old/superseded_by": GET_REPLACED},
    "state_keys": {
        "/get.a/superseded_by": GET_REPLACED,
        "/get.c/superseded_by": GET_REPLACED,
        "/clear_state_key/left_live": ("after the holder leaves a slot its newest other "
                                       "episode holds it, as the README says; 1.0.2 left "
                                       "them all live (migrating#state-keys)"),
    },
    "save_result": {
        "/keys/pattern_trust": "no pattern_trust key (migrating#save-result)",
        "/kinds/pattern_trust": "no pattern_trust key (migrating#save-result)",
        "/value.drift": "drift is always in the save result (migrating#save-result)",
    },
    "save_refusals": {"/no_token/pattern_trust": "no pattern_trust key (migrating#save-result)"},
    "immune_valid_citation": {"/wrap2/proven_without_contradicts_declaration": SCAN},
    "immune_demote_from_high": {"/climb1/proven_without_contradicts_declaration": SCAN},
    "immune_level_cap": {"/jump_3/proven_without_contradicts_declaration": SCAN},
    "immune_bare_graduation": {
        "/bare_after_citations": ("a bare graduation above its level once citations were "
                                  "seen is demoted and marked (needs-evidence), as the "
                                  "README says; 1.0.2 marked it level-capped "
                                  "(migrating#needs-evidence)"),
        "/lines3": "the line is marked (needs-evidence) (migrating#needs-evidence)",
    },
    "immune_carryforward": {
        "/lines": HISTORY,
        "/w2/proven_without_contradicts_declaration": SCAN,
        "/w3_failed_recent": HISTORY,
    },
    "immune_omitted_and_contradicts": {
        "/w2_proven_no_stance/proven_without_contradicts_declaration": SCAN,
        "/w3_dropped/omitted_patterns": HISTORY,
    },
    "immune_cross_session": {
        "/lines": HISTORY,
        "/w2_climb/proven_without_contradicts_declaration": SCAN,
        "/w3_rephrase": HISTORY,
    },
    "immune_wrap_supersession": {
        "/old/superseded_by": GET_REPLACED,
        "/old/session_id": ("Episode.session_id is the Store's session; 1.0.2 numbered "
                            "sessions by wrap (migrating#session-id)"),
    },
    "crystal": {"/duplicate/rev": ORIGIN},
    "spores": {"/keys/origin_key": ORIGIN},
    "retrieve_relevant": {
        "/episodes": RANKING, "/no_crystal": RANKING,
        "/prompt.count": RANKING, "/replaces_text": RANKING,
    },
    "audit": {
        "/callback.entry_keys/v": AUDIT_FORMAT,
        "/file.keys/v": AUDIT_FORMAT,
        "/saved.durable_dropped": ("a dropped durable fact is audited as a salted hash; "
                                   "1.0.2 wrote its text into the trail "
                                   "(migrating#audit-format)"),
    },
    "cli_help_tree": {
        "/tree/commands/derive": "no re-derive at load (migrating#not-carried)",
        "/tree/commands/continuity/options/--rederive": "no re-derive (migrating#not-carried)",
        "/tree/commands/continuity/options/--ref": "no re-derive (migrating#not-carried)",
        "/tree/commands/team-import": "no team ledger (migrating#not-carried)",
        "/tree/commands/team-status": "no team ledger (migrating#not-carried)",
        "/tree/commands/team-forget-key": "no team ledger (migrating#not-carried)",
        "/tree/commands/crystal/commands/ground-evidence": ("crystals keep the evidence they "
                                                           "were made with "
                                                           "(migrating#not-carried)"),
        "/tree/commands/crystal/commands/fold-surfaced/options/--skew-seconds":
            "receipts are folded by their own marks (migrating#not-carried)",
        "/tree/commands/init/options/--schema/choices/project":
            "no project schema (its derived-state role) (migrating#not-carried)",
    },
    "cli_flow": {
        "*/origin_key": ORIGIN,
        "/audit.json/json/entries": AUDIT_FORMAT,
        "/audit.json/json/total": INIT_ENTRY,
        "/status.json/json/audit/entry_count": INIT_ENTRY,
        "/verify.json/json/total_entries": INIT_ENTRY,
        "/prepare_wrap.json/json/instructions": ("the compression instructions are our own "
                                                 "text (migrating#wrap-instructions)"),
        "/save_continuity.json/json/stale_state": "no stale_state key (migrating#save-result)",
        "/status.json/json/association_formation": ("the retired association layer reports "
                                                    "itself disabled "
                                                    "(migrating#association-layer)"),
    },
    "cli_tiers": {
        "*/origin_key": ORIGIN,
        "*/rev": ORIGIN,
        "/crystal.recall/json[0]/score": RANKING,
        "/baton.claim/json/claimed_at": "an ISO time, not epoch seconds (migrating#baton)",
        "/migrate.check": "migrate check lists our snippet changes (migrating#migrate)",
        "/graph/json/message": "the graph says why it is empty (migrating#association-layer)",
        "/outcome": "the outcome log's records are ours (migrating#worth)",
        "/worth": "the worth report is ours: per name, with its labels (migrating#worth)",
        "/audit_repair": ("a trail that verifies is left alone and that is a success "
                          "(migrating#audit-format)"),
        "/wrap_cancel.idle/json/status": ("'idle' when no wrap was open; 1.0.2 said "
                                          "'cancelled' (migrating#wrap-instructions)"),
    },
    "mcp_flow": {
        "/record.supersedes.mentions": ("the reply also names the episode it replaces "
                                        "(migrating#mcp)"),
        "/spore_surface.mentions": "each surfaced spore is listed with its id (migrating#mcp)",
    },
    "mcp_tools": {
        "/list/tools/save_continuity": ("affective_state and allow_unlinked are accepted and "
                                        "ignored, not advertised (migrating#mcp)"),
        "/list/tools/crystal_recall": ("associative is accepted and ignored, not advertised "
                                       "(migrating#mcp)"),
    },
    "read_legacy": {
        "/import.recall": ("importing a 1.0.2 export keeps its supersession links; 1.0.2's "
                           "own import dropped them (migrating#exports)"),
        "/save/proven_without_contradicts_declaration": SCAN,
    },
}
