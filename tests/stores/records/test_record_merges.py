"""A merge of Dexto records is a record: one content, the others' tags and metadata, nothing dropped unsaid.

Databases are built as Dexto builds them (``dexto_db``: Node's JSON.stringify), the merges go
through the service (pass, accept, apply, revert), and what the agent then reads is checked
with the JavaScript restatements of Dexto's schema and prompt block (``test_dexto_facts``).
"""

from __future__ import annotations

import json

import dexto_db
from conftest import T
from daemon.config import adhoc_store, parse_config
from daemon.service.apply.applying import apply, revert
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal
from dexto_db import PROMPT_JS, dexto_accepts, node

RELEASE = (
    "Releases are cut from main every second Tuesday by the on-call engineer, who tags the commit, writes the "
    "changelog entry, announces the freeze in the team channel and watches the dashboards for an hour."
)
OLDER, NEWER = "memory:item:relAAAAAAAAA", "memory:item:relBBBBBBBBB"  # the newer one survives (updatedAt)


def _db(tmp_path, older: dict, newer: dict):  # noqa: ANN001, ANN202
    """Two near copies of the release memory: the older one, then the survivor a minute newer."""
    return dexto_db.create(tmp_path / "agent.db", [
        dexto_db.memory("relAAAAAAAAA", older.pop("content", RELEASE), T, **older),
        dexto_db.memory("relBBBBBBBBB", newer.pop("content", RELEASE + " Hotfixes skip the freeze."), T + 60_000, **newer),
    ])  # fmt: skip


def _merge(app, db):  # noqa: ANN001, ANN202
    """The one merge a pass proposes for ``db``, as stored."""
    (outcome,) = [o for o in run_pass(app, adhoc_store(db, "dexto")).outcomes if o.planned.draft.kind == "merge"]
    return get_proposal(app, outcome.id)


def _applied(app, db, clock, merge=None) -> dict:  # noqa: ANN001
    """Accept and apply the merge (the pass's, unless given); the survivor's stored record."""
    merge = merge or _merge(app, db)
    decide(app, merge.id, "accept")
    clock.advance(minutes=1)
    assert [r.state for r in apply(app, [merge.id])] == ["applied"]
    values = dexto_db.values(db)
    assert list(values) == [NEWER] and dexto_accepts(list(values.values())) == [True]
    return json.loads(values[NEWER])


def test_a_near_duplicate_merge_keeps_one_content_the_longer(tmp_path, make_app, clock):
    """The survivor's content is the longer memory's, whole, not two texts glued: the prompt shows one item with the fact once, and the merge, which drops nothing, is not lossy."""
    db = _db(tmp_path, {"content": RELEASE + " Hotfixes skip the freeze, and so do security fixes."}, {})
    app = make_app()
    merge = _merge(app, db)
    assert merge.lossy is False and merge.rationale.endswith("so nothing is lost.")
    record = _applied(app, db, clock, merge)
    assert record["content"] == RELEASE + " Hotfixes skip the freeze, and so do security fixes."
    block = node(PROMPT_JS, {"rows": dexto_db.values(db), "limit": 10})
    assert block == f"## User Memories\n- {RELEASE} Hotfixes skip the freeze, and so do security fixes."


def test_a_merge_that_drops_what_only_the_shorter_says_is_lossy_and_says_it(tmp_path, make_app):
    """Each memory has a sentence the other lacks: the merge keeps the longer, is lossy, and its rationale quotes the sentence it drops."""
    db = _db(tmp_path, {"content": RELEASE + " Ask ops."}, {"content": RELEASE + " Hotfixes skip the freeze entirely."})
    merge = _merge(make_app(), db)
    assert merge.lossy is True
    assert "; the text kept drops 1 sentence of the others (each note is one text the agent shows whole, so two are never glued): “Ask ops.”" in merge.rationale


def test_tags_are_the_union_survivors_first(tmp_path, make_app, clock):
    """The survivor keeps its tags and gains the retired record's others, in order; revert gives both records back exactly."""
    db = _db(tmp_path, {"tags": ["ci", "release"]}, {"tags": ["release", "process"]})
    before = dexto_db.values(db)
    app = make_app()
    merge = _merge(app, db)
    assert _applied(app, db, clock, merge)["tags"] == ["release", "process", "ci"]
    assert revert(app, merge.id).state == "reverted" and dexto_db.values(db) == before


def test_tags_past_dextos_limit_are_dropped_lossy_and_held(tmp_path, make_app):
    """Eight tags and four others make twelve: the survivor would keep ten, the proposal is lossy, held, and names the two it drops."""
    mine, theirs = [f"t{i}" for i in range(8)], ["u1", "u2", "u3", "u4"]
    merge = _merge(make_app(), _db(tmp_path, {"tags": theirs}, {"tags": mine}))
    assert merge.lossy is True
    assert merge.reads["holds"] == [f"would give {NEWER} more than Dexto's 10 tags: u3, u4 would be dropped"]
    assert "cannot keep tag 'u3', tag 'u4' (Dexto keeps at most 10 tags)" in merge.rationale
    assert '+tags: ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "u1", "u2"]' in merge.diff


def test_a_retired_records_source_goes_to_a_survivor_without_one(tmp_path, make_app, clock):
    """The survivor had no metadata.source; the retired record's "user" is kept, and the rationale lists every record's source."""
    db = _db(tmp_path, {"metadata": {"source": "user", "team": "payments"}}, {})
    app = make_app()
    merge = _merge(app, db)
    assert "Sources (metadata.source): relBBBBBBBBB none, relAAAAAAAAA user." in merge.rationale
    record = _applied(app, db, clock, merge)
    assert record["metadata"] == {"source": "user", "team": "payments", "merged_from": ["relAAAAAAAAA"]}


def test_a_source_the_survivor_cannot_also_hold_makes_the_merge_lossy(tmp_path, make_app):
    """A "user" memory merged into a "system" one: Dexto keeps one source, the survivor's; the other is named as dropped and the merge is lossy."""
    merge = _merge(make_app(), _db(tmp_path, {"metadata": {"source": "user"}}, {"metadata": {"source": "system"}}))
    assert merge.lossy is True
    assert 'cannot keep metadata.source "user" of relAAAAAAAAA' in merge.rationale


def test_an_exact_copy_with_tags_is_accepted_by_the_default_policy_with_them(tmp_path, make_app):
    """Exact copies, the retired one tagged: the default policy accepts and applies the merge, and the tags are on the survivor."""
    db = _db(tmp_path, {"content": RELEASE, "tags": ["release"]}, {"content": RELEASE})
    config = parse_config({"stores": [{"name": "agent", "path": str(db), "preset": "dexto", "policy": "default", "apply": "accepted"}]})
    app = make_app(config)
    run_pass(app, config.stores["agent"])
    values = dexto_db.values(db)
    assert list(values) == [NEWER] and json.loads(values[NEWER])["tags"] == ["release"]


def test_an_exact_copy_whose_metadata_would_be_lost_is_held_by_the_default_policy(tmp_path, make_app):
    """Exact copies with different sources: the merge is lossy, so the default policy, which accepts exact copies, holds it and nothing is written."""
    db = _db(tmp_path, {"content": RELEASE, "metadata": {"source": "user"}}, {"content": RELEASE, "metadata": {"source": "system"}})
    before = dexto_db.values(db)
    config = parse_config({"stores": [{"name": "agent", "path": str(db), "preset": "dexto", "policy": "default", "apply": "accepted"}]})
    app = make_app(config)
    (outcome,) = run_pass(app, config.stores["agent"]).outcomes
    assert (get_proposal(app, outcome.id).state, get_proposal(app, outcome.id).lossy) == ("pending", True)
    assert dexto_db.values(db) == before


def test_a_pinned_survivor_is_never_changed_and_what_it_cannot_take_is_said(tmp_path, make_app):
    """Into a pinned memory nothing is written: the retired copy's tag is named as dropped, and the merge is lossy."""
    db = _db(tmp_path, {"content": RELEASE, "tags": ["release"]}, {"content": RELEASE, "metadata": {"pinned": True}})
    merge = _merge(make_app(), db)
    assert NEWER not in [p for p in merge.result if merge.result[p] != merge.base.get(p)]
    assert merge.lossy is True and "cannot keep tag 'release'" in merge.rationale


def test_a_model_merge_without_merged_text_keeps_the_longer_content(tmp_path, make_app, clock):
    """A model's merge with merged_body null (dreamd writes the text) keeps one content, the longer, as the detector does."""
    from daemon.llm.fakes import FakeModel

    db = dexto_db.create(tmp_path / "agent.db", [
        dexto_db.memory("vpnAAAAAAAAA", "Use the office VPN for staging.", T),
        dexto_db.memory("vpnBBBBBBBBB", "Use the office VPN for staging; production needs the bastion.", T + 60_000),
    ])  # fmt: skip
    reply = json.dumps({"v": 1, "proposals": [{
        "kind": "merge", "notes": ["memory:item:vpnAAAAAAAAA", "memory:item:vpnBBBBBBBBB"], "survivor": "memory:item:vpnBBBBBBBBB",
        "newer": None, "merged_body": None, "rationale": "Both say staging needs the office VPN.", "confidence": 0.9,
        "evidence": [{"note": "memory:item:vpnAAAAAAAAA", "quote": "Use the office VPN"}], "dropped": [],
    }]})  # fmt: skip
    config = parse_config({"llm": {"model": "openai/test-model"}, "stores": [{"name": "agent", "path": str(db), "preset": "dexto"}]})
    app = make_app(config)
    app.model_client = lambda settings: FakeModel().enqueue(reply)
    (merge,) = [o for o in run_pass(app, config.stores["agent"]).outcomes if o.planned.draft.source.startswith("model:")]
    assert "the survivor keeps the longest, not the union" in merge.planned.draft.rationale
    decide(app, merge.id, "accept")
    clock.advance(minutes=1)
    apply(app, [merge.id])
    (value,) = dexto_db.values(db).values()
    assert json.loads(value)["content"] == "Use the office VPN for staging; production needs the bastion."
