"""A Dexto store through the service, unchanged: pass, dry run, accept, apply (compare-and-swap), revert."""

from __future__ import annotations

import json
import sqlite3

import pytest

import dexto_db
from conftest import BUILD, T
from daemon.config import adhoc_store
from daemon.core.errors import ConfigError, StoreError
from daemon.service.apply.applying import apply, revert
from daemon.service.review.audit import event_log
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal
from daemon.stores.records import dexto as facts
from dexto_db import dexto_accepts

DUPLICATE = "memory:item:Zz9yX8wV7uT6"
SURVIVOR = "memory:item:Ab3dE_fG-hIj"
# 30 words, then one line only the second memory has: a near-duplicate merge adds it to the survivor
NEAR = "Releases are cut from main every second Tuesday by the on-call engineer, who tags the commit, writes the changelog entry, announces the freeze in the team channel and watches the dashboards for an hour."


def _merge(app, db):
    report = run_pass(app, adhoc_store(db, "dexto"))
    (merge,) = [o for o in report.outcomes if o.state == "pending"]
    return merge


def _accepted(app, db, clock):
    merge = _merge(app, db)
    decide(app, merge.id, "accept")
    clock.advance(minutes=1)
    return merge.id


def test_a_pass_proposes_merging_the_exact_duplicate_and_reports_no_bad_row(dexto, make_app):
    """Two memories with the same content become one merge: the duplicate is retired, the survivor kept."""
    merge = _merge(make_app(), dexto)
    assert (merge.planned.draft.kind, merge.planned.draft.survivor, merge.planned.draft.retire) == ("merge", SURVIVOR, (DUPLICATE,))
    assert merge.planned.diff.startswith(f"diff --git a/{DUPLICATE} b/dreamd:deleted/{DUPLICATE}\nsimilarity index 67%\nrename from {DUPLICATE}\nrename to dreamd:deleted/{DUPLICATE}\n")
    assert "+status: superseded\n+superseded_by: memory:item:Ab3dE_fG-hIj\n" in merge.planned.diff


def test_a_dry_run_writes_nothing_to_the_database(dexto, make_app, tmp_path):
    """A dry run proposes the merge and leaves every byte of the database as it was (its WAL empty)."""
    before = dexto.read_bytes()
    report = run_pass(make_app(), adhoc_store(dexto, "dexto"), dry_run=True)
    assert [o.planned.draft.retire for o in report.outcomes] == [(DUPLICATE,)]
    assert dexto.read_bytes() == before
    assert dexto.with_name(dexto.name + "-wal").read_bytes() == b""


def test_apply_deletes_the_retired_record_and_leaves_every_other_value_exact(dexto, make_app, clock):
    """After apply the duplicate's row is gone; every other row holds its exact earlier value."""
    app = make_app()
    before = dexto_db.values(dexto)
    pid = _accepted(app, dexto, clock)
    assert [r.state for r in apply(app, [pid])] == ["applied"]
    after = dexto_db.values(dexto)
    assert {k: v for k, v in after.items() if k != SURVIVOR} == {k: v for k, v in before.items() if k not in (DUPLICATE, SURVIVOR)}
    # the survivor keeps its content and every field; only its metadata gains the merged record's id
    kept = json.loads(before[SURVIVOR])
    assert after[SURVIVOR] == facts.serialise({**kept, "metadata": {**kept["metadata"], "merged_from": ["Zz9yX8wV7uT6"]}})


def test_revert_re_inserts_the_deleted_record_byte_for_byte(dexto, make_app, clock):
    """Revert puts the exact value back under its key; the table is as before the apply."""
    app = make_app()
    before = dexto_db.values(dexto)
    pid = _accepted(app, dexto, clock)
    apply(app, [pid])
    assert revert(app, pid).state == "reverted"
    assert dexto_db.values(dexto) == before
    assert get_proposal(app, pid).state == "reverted"


def test_a_near_duplicate_merge_updates_the_survivor_with_a_value_dexto_accepts(tmp_path, make_app, clock):
    """The survivor's new value passes Dexto's rules (checked in JavaScript) and shows in the prompt block with the added line."""
    db = dexto_db.create(tmp_path / "agent.db", [
        dexto_db.memory("nearAAAAAAAA", NEAR, T, tags=["release"]),
        dexto_db.memory("nearBBBBBBBB", NEAR + "\nHotfixes skip the freeze.", T + 5),
    ])  # fmt: skip
    app = make_app()
    pid = _accepted(app, db, clock)
    apply(app, [pid])
    values = dexto_db.values(db)
    assert list(values) == ["memory:item:nearAAAAAAAA"]
    assert dexto_accepts(list(values.values())) == [True]
    record = json.loads(values["memory:item:nearAAAAAAAA"])
    assert (record["createdAt"], record["updatedAt"], record["tags"]) == (T, T, ["release"])
    assert record["metadata"] == {"merged_from": ["nearBBBBBBBB"]}  # provenance in metadata, by id: never in the prompt
    assert facts.prompt_block({k: json.loads(v) for k, v in values.items()}) == f"## User Memories\n- {NEAR}\nHotfixes skip the freeze. [Tags: release]"


def test_merge_votes_accumulate_as_record_ids_in_metadata_and_no_marker_reaches_the_prompt(tmp_path, make_app, clock):
    """A survivor already holding merged_from folds in a near copy that holds its own: the ids
    of every record folded in so far, each once; Dexto's rules pass; the content has no marker."""
    db = dexto_db.create(tmp_path / "agent.db", [
        dexto_db.memory("nearAAAAAAAA", NEAR, T, metadata={"source": "user", "merged_from": ["oldXXXXXXXXX"]}),
        dexto_db.memory("nearBBBBBBBB", NEAR + "\nHotfixes skip the freeze.", T + 5, metadata={"merged_from": ["oldYYYYYYYYY", "oldXXXXXXXXX"]}),
    ])  # fmt: skip
    app = make_app()
    pid = _accepted(app, db, clock)
    assert "it takes memory:item:nearBBBBBBBB's text, the longest, whole, and its merged_from lists the notes folded into it" in get_proposal(app, pid).rationale
    apply(app, [pid])
    (value,) = dexto_db.values(db).values()
    record = json.loads(value)
    assert record["metadata"] == {"source": "user", "merged_from": ["oldXXXXXXXXX", "oldYYYYYYYYY", "nearBBBBBBBB"]}
    assert record["content"] == NEAR + "\nHotfixes skip the freeze." and "<!--" not in value and "memory:item:" not in value
    assert dexto_accepts([value]) == [True]
    assert revert(app, pid).state == "reverted"
    assert len(dexto_db.values(db)) == 2 and all("nearBBBBBBBB" not in json.loads(v)["metadata"]["merged_from"] for v in dexto_db.values(db).values())


def test_a_merge_whose_result_would_break_dexto_rules_is_refused_with_the_reason(tmp_path, make_app):
    """A model's merged content over 10,000 characters is refused before it is stored, and no row can be written by it."""
    from daemon.config import parse_config
    from daemon.llm.fakes import FakeModel

    long = (NEAR + " " + "word " * ((9_980 - len(NEAR)) // 5)).strip()
    one, other = long + " The first extra fact.", long + " The other extra fact."
    merged = long + " The first extra fact. The other extra fact."
    assert max(facts.js_length(one), facts.js_length(other)) <= 10_000 < facts.js_length(merged)
    db = dexto_db.create(tmp_path / "agent.db", [dexto_db.memory("longAAAAAAAA", one, T), dexto_db.memory("longBBBBBBBB", other, T + 5)])
    reply = json.dumps({"v": 1, "proposals": [{
        "kind": "merge", "notes": ["memory:item:longAAAAAAAA", "memory:item:longBBBBBBBB"], "survivor": "memory:item:longAAAAAAAA",
        "newer": None, "merged_body": merged, "rationale": "The same release rules.", "confidence": 0.9,
        "evidence": [{"note": "memory:item:longAAAAAAAA", "quote": "The first extra fact."}], "dropped": [],
    }]})  # fmt: skip
    llm = {"model": "openai/test-model", "context_window": 65_536, "max_output_tokens": 8_000}  # both records in one call
    config = parse_config({"llm": llm, "stores": [{"name": "agent", "path": str(db), "preset": "dexto"}]})
    app = make_app(config)
    app.model_client = lambda settings: FakeModel().enqueue(reply)
    (merge,) = [o for o in run_pass(app, config.stores["agent"]).outcomes if o.planned.draft.source.startswith("model:")]
    assert merge.state == "refused"
    assert merge.planned.reason.endswith("would not be a valid Dexto memory: breaks Dexto's rules: content must be 1-10,000 characters")


def test_a_pinned_record_is_never_merged_away(tmp_path, make_app):
    """Two identical memories, both pinned by metadata.pinned, get no proposal at all."""
    db = dexto_db.create(tmp_path / "agent.db", [dexto_db.memory(f"pin{c * 9}", BUILD, T, metadata={"pinned": True}) for c in "AB"])
    report = run_pass(make_app(), adhoc_store(db, "dexto"))
    assert [o.state for o in report.outcomes if o.state != "refused"] == []


def test_a_record_dexto_rewrote_after_accept_makes_the_apply_stale_and_nothing_is_written(dexto, make_app, clock):
    """Dexto's INSERT OR REPLACE of the retired memory after accept: apply is stale and every row stays as Dexto left it."""
    app = make_app()
    pid = _accepted(app, dexto, clock)
    conn = sqlite3.connect(dexto, isolation_level=None)
    dexto_db.put(conn, [dexto_db.memory("Zz9yX8wV7uT6", BUILD + " Also lint.", T + 1_000, updated=T + 50_000)])
    conn.close()
    edited = dexto_db.values(dexto)
    (result,) = apply(app, [pid])
    assert (result.state, result.detail) == ("stale", f"changed since proposed: {DUPLICATE}")
    assert dexto_db.values(dexto) == edited


def test_rejected_merge_is_not_proposed_again(dexto, make_app, clock):
    """After rejection a later pass over the unchanged database records the same merge as suppressed."""
    app = make_app()
    merge = _merge(app, dexto)
    decide(app, merge.id, "reject", "keep both")
    clock.advance(days=2)
    report = run_pass(app, adhoc_store(dexto, "dexto"))
    assert [o.state for o in report.outcomes] in ([], ["suppressed"])
    assert [o.state for o in report.outcomes if o.state == "pending"] == []


def test_every_pass_reports_a_row_that_is_not_json(dexto, make_app, clock):
    """A row Dexto cannot parse is in every pass's skipped list, also when the pass has nothing new to do."""
    conn = sqlite3.connect(dexto, isolation_level=None)
    conn.execute("INSERT INTO kv_store (key, value, updated_at) VALUES (?, ?, ?)", ("memory:item:broken000001", "{oops", 1))
    conn.close()
    app = make_app()
    first = run_pass(app, adhoc_store(dexto, "dexto"))
    second = run_pass(app, adhoc_store(dexto, "dexto"))
    assert second.status == "skipped"
    assert [[s.path for s in r.skipped_files] for r in (first, second)] == [["memory:item:broken000001"]] * 2
    assert first.skipped_files[0].reason.startswith("invalid-json: ")


def test_a_record_nested_too_deep_is_reported_and_the_pass_goes_on(dexto, make_app, clock):
    """A value nested 50,000 levels deep (JSON Dexto could store, no parser here can read) is a
    bad record like any other: skipped with why, on every pass, and the other records (one at
    the 100 levels dreamd reads among them) are planned."""
    deep = '{"id":"deep00000001","content":"c","createdAt":1,"updatedAt":1,"metadata":{"x":' + "[" * 50_000 + "]" * 50_000 + "}}"
    limit = '{"id":"limit0000001","content":"A note at the limit.","createdAt":1,"updatedAt":1,"metadata":{"x":' + "[" * 98 + "]" * 98 + "}}"
    conn = sqlite3.connect(dexto, isolation_level=None)
    for key, value in (("memory:item:deep00000001", deep), ("memory:item:limit0000001", limit)):
        conn.execute("INSERT INTO kv_store (key, value, updated_at) VALUES (?, ?, ?)", (key, value, 1))
    conn.close()
    app = make_app()
    first = run_pass(app, adhoc_store(dexto, "dexto"))
    clock.advance(days=2)
    second = run_pass(app, adhoc_store(dexto, "dexto"))
    assert [r.status for r in (first, second)] == ["completed", "skipped"]
    assert [[(s.path, s.reason) for s in r.skipped_files] for r in (first, second)] == [[("memory:item:deep00000001", "too-deep: arrays and objects nested 50,002 levels deep, more than the 100 dreamd reads")]] * 2
    assert [o.planned.draft.kind for o in first.outcomes] == ["merge"]
    assert first.notes == 5  # the standard four, and the one at the limit


def test_apply_and_revert_are_events_as_for_folders(dexto, make_app, clock):
    """proposal.applied and proposal.reverted events name the record steps dreamd wrote."""
    app = make_app()
    pid = _accepted(app, dexto, clock)
    apply(app, [pid])
    revert(app, pid)
    kinds = [e["type"] for e in event_log(app) if e["proposal_id"] == pid]
    assert "proposal.applied" in kinds and "proposal.reverted" in kinds
    applied = next(e for e in event_log(app) if e["type"] == "proposal.applied")
    assert [s["path"] for s in applied["payload"]["files"]] == [SURVIVOR, DUPLICATE]  # the survivor gains merged_from


def test_a_database_given_with_a_folder_preset_is_refused(dexto, make_app):
    """``--store agent.db --preset generic`` is a ConfigError naming the dexto preset; nothing is read."""
    with pytest.raises(ConfigError) as caught:
        run_pass(make_app(), adhoc_store(dexto, "generic"))
    assert caught.value.one_line() == f"error[config]: {dexto} is a file, not a folder of notes; the generic preset reads folders (an agent's record database takes --preset dexto)"


def test_a_folder_given_with_the_dexto_preset_is_refused(tmp_path, make_app):
    """A folder of notes is not a record store: StoreError, exit code 3."""
    with pytest.raises(StoreError, match="is not a database file") as caught:
        run_pass(make_app(), adhoc_store(tmp_path, "dexto"))
    assert caught.value.exit_code == 3


def test_folder_settings_are_refused_for_a_record_store():
    """index_path or archive_root on a dexto store is a ConfigError; pinned globs are accepted."""
    from daemon.stores.presets import resolve_settings

    with pytest.raises(ConfigError, match="store setting 'index_path' is for folders of notes; a dexto store takes only exclude and pinned"):
        resolve_settings("dexto", {"index_path": "MEMORY.md"})
    assert resolve_settings("dexto", {"pinned": ["memory:item:keep*"]}).is_pinned("memory:item:keep1")


RETIRING = {
    "soft-expire": [dexto_db.memory("ttlBBBBBBBBB", "Use the temporary VPN gateway vpn2 this week.", T, metadata={"ttl_days": 7})],
    "supersede": [
        dexto_db.memory("oldCCCCCCCCC", "The API lives at api-v1.example.com.", T),
        dexto_db.memory("newDDDDDDDDD", "The API moved to api-v2.example.com.", T + 60_000, metadata={"source": "user", "supersedes": "memory:item:oldCCCCCCCCC"}),
    ],
}


@pytest.mark.parametrize("kind", sorted(RETIRING))
def test_soft_expire_and_supersede_delete_the_record_and_revert_restores_it(kind, tmp_path, make_app, clock):
    """A TTL past due (metadata.ttl_days) or a declared metadata.supersedes retires by deleting the row; revert puts the exact table back."""
    db = dexto_db.create(tmp_path / "agent.db", RETIRING[kind])
    before = dexto_db.values(db)
    app = make_app()
    clock.advance(days=3_000)
    (proposal,) = [o for o in run_pass(app, adhoc_store(db, "dexto")).outcomes if o.state == "pending"]
    retired = f"memory:item:{RETIRING[kind][0]['id']}"
    assert (proposal.planned.draft.kind, proposal.planned.draft.retire) == (kind, (retired,))
    decide(app, proposal.id, "accept")
    apply(app, [proposal.id])
    assert dexto_db.values(db) == {k: v for k, v in before.items() if k != retired}
    revert(app, proposal.id)
    assert dexto_db.values(db) == before


def test_revert_is_refused_when_dexto_re_created_the_deleted_record_since(dexto, make_app, clock):
    """Dexto writing the deleted key again after the apply: revert raises ConflictError naming it and leaves Dexto's row."""
    from daemon.core.errors import ConflictError

    app = make_app()
    pid = _accepted(app, dexto, clock)
    apply(app, [pid])
    conn = sqlite3.connect(dexto, isolation_level=None)
    dexto_db.put(conn, [dexto_db.memory("Zz9yX8wV7uT6", "Written again by the agent.", T + 70_000)])
    conn.close()
    after = dexto_db.values(dexto)
    with pytest.raises(ConflictError, match=f"changed since it was applied: {DUPLICATE}"):
        revert(app, pid)
    assert dexto_db.values(dexto) == after


def test_a_model_merge_of_two_records_applies_as_one_value_dexto_accepts(tmp_path, make_app, clock):
    """The LLM planner (in-package FakeModel) merges two paraphrased memories; the survivor's new value passes Dexto's rules."""
    from daemon.config import parse_config
    from daemon.llm.fakes import FakeModel

    db = dexto_db.create(tmp_path / "agent.db", [
        dexto_db.memory("vpnAAAAAAAAA", "Use the office VPN for staging.", T, tags=["infra"]),
        dexto_db.memory("vpnBBBBBBBBB", "Staging is only reachable through the VPN of the office.", T + 5),
    ])  # fmt: skip
    body = "Use the office VPN for staging: staging is reachable only through it."
    reply = json.dumps({"v": 1, "proposals": [{
        "kind": "merge", "notes": ["memory:item:vpnAAAAAAAAA", "memory:item:vpnBBBBBBBBB"], "survivor": "memory:item:vpnAAAAAAAAA",
        "newer": None, "merged_body": body, "rationale": "Both say staging needs the office VPN.", "confidence": 0.9,
        "evidence": [{"note": "memory:item:vpnAAAAAAAAA", "quote": "Use the office VPN"}, {"note": "memory:item:vpnBBBBBBBBB", "quote": "through the VPN of the office"}],
        "dropped": [],
    }]})  # fmt: skip
    config = parse_config({"llm": {"model": "openai/test-model"}, "stores": [{"name": "agent", "path": str(db), "preset": "dexto"}]})
    app = make_app(config)
    app.model_client = lambda settings: FakeModel().enqueue(reply)
    outcomes = [o for o in run_pass(app, config.stores["agent"]).outcomes if o.planned.draft.source.startswith("model:")]
    assert [(o.state, o.planned.reason) for o in outcomes] == [("pending", None)]
    decide(app, outcomes[0].id, "accept")
    apply(app, [outcomes[0].id])
    values = dexto_db.values(db)
    assert list(values) == ["memory:item:vpnAAAAAAAAA"] and dexto_accepts(list(values.values())) == [True]
    assert json.loads(values["memory:item:vpnAAAAAAAAA"])["content"] == body  # the rendering's own line end left out


def test_the_default_policy_accepts_and_applies_the_exact_duplicate_and_holds_the_near_one(tmp_path, make_app):
    """policy "default" with apply = "accepted" on a Dexto store: the exact-duplicate merge is
    applied in the pass (compare-and-swap, verify clean), the near-duplicate merge stays pending."""
    from daemon.config import parse_config
    from daemon.service.review.audit import verify

    db = dexto_db.create(tmp_path / "agent.db", [
        dexto_db.memory("Ab3dE_fG-hIj", BUILD, T), dexto_db.memory("Zz9yX8wV7uT6", BUILD, T + 1_000),
        dexto_db.memory("nearAAAAAAAA", NEAR, T + 10_000), dexto_db.memory("nearBBBBBBBB", NEAR + "\nHotfixes skip the freeze.", T + 12_000),
    ])  # fmt: skip
    config = parse_config({"stores": [{"name": "agent", "path": str(db), "preset": "dexto", "policy": "default", "apply": "accepted"}]})
    app = make_app(config)
    report = run_pass(app, config.stores["agent"])
    states = {o.planned.draft.source.split("@")[0]: get_proposal(app, o.id).state for o in report.outcomes if o.id}
    assert states == {"detector:exact-duplicate": "applied", "detector:near-duplicate": "pending"}
    values = dexto_db.values(db)
    assert set(values) == {"memory:item:Ab3dE_fG-hIj", "memory:item:nearAAAAAAAA", "memory:item:nearBBBBBBBB"}
    assert json.loads(values["memory:item:Ab3dE_fG-hIj"])["metadata"] == {"merged_from": ["Zz9yX8wV7uT6"]}
    assert dexto_accepts(list(values.values())) == [True] * 3
    assert verify(app, config.stores["agent"]).clean
