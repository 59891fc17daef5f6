"""A store's policy decides in the pass: accepts what it may, holds the rest, never lossy."""

from __future__ import annotations

import json

import pytest

from daemon.config import parse_config
from daemon.core.errors import ConfigError
from daemon.llm.fakes import FakeModel
from daemon.service.review.audit import verify
from daemon.service.passes.run import run_pass
from daemon.service.proposals import get_proposal


def _config(root, **store):
    return parse_config({"stores": [{"name": "s", "path": str(root), "preset": "deepcode", **store}]})


def test_the_default_policy_accepts_exact_duplicates_and_expiries_and_holds_the_rest(example_store, make_app, clock, read_tree):
    """Exact-duplicate merges and TTL expiries are accepted as policy:default@<hash>; the rest stay pending; nothing is written."""
    clock.advance(days=400)  # sprint-status.md is past its TTL
    config = _config(example_store, policy="default")
    app = make_app(config)
    before = read_tree(example_store)
    report = run_pass(app, config.stores["s"])
    states = {o.planned.draft.source.split("@")[0]: get_proposal(app, o.id).state for o in report.outcomes if o.id}
    assert states["detector:exact-duplicate"] == "accepted" and states["detector:ttl"] == "accepted"
    assert states["detector:near-duplicate"] == "pending" and states["detector:declared-supersession"] == "pending"
    accepted = [get_proposal(app, o.id) for o in report.outcomes if o.id and get_proposal(app, o.id).state == "accepted"]
    assert all(p.decisions[0]["actor"].startswith("policy:default@") for p in accepted)
    assert report.stats["policy"]["accepted"] == len(accepted) and report.stats["policy"]["applied"] == 0
    assert read_tree(example_store) == before


def test_apply_accepted_applies_what_the_policy_accepted(example_store, make_app, clock):
    """With apply = "accepted" the pass applies its accepted proposals; the store verifies clean."""
    clock.advance(days=400)
    config = _config(example_store, policy="default", apply="accepted")
    app = make_app(config)
    report = run_pass(app, config.stores["s"])
    policy = report.stats["policy"]
    assert policy["applied"] == policy["accepted"] >= 2 and policy["stale"] == 0
    assert (example_store / ".dreamd-archive" / "sprint-status.md").exists()
    assert verify(app, config.stores["s"]).clean


BUILD = "# Build\nRun make test before pushing because CI only checks lint.\nIntegration tests need postgres on port 5433.\n"
BUILD_AGAIN = "# Build how-to\nCI only checks lint, so run make test before pushing.\nThe integration tests need postgres on port 5433.\n"


def _model_merge_under_trusting(make_store, make_app, merged_body: str):  # noqa: ANN001, ANN202
    """A confident model merge of two build notes into ``merged_body``, decided by trusting."""
    root = make_store({"MEMORY.md": "# M\n- [Build](build.md)\n- [How-to](howto.md)\n", "build.md": BUILD, "howto.md": BUILD_AGAIN})
    reply = json.dumps({"v": 1, "proposals": [{
        "kind": "merge", "notes": ["build.md", "howto.md"], "survivor": "build.md", "newer": None,
        "merged_body": merged_body, "rationale": "same", "confidence": 0.97,
        "evidence": [{"note": "build.md", "quote": "Run make test before pushing"}], "dropped": [],
    }]})  # fmt: skip
    config = parse_config({"llm": {"model": "openai/test-model"}, "stores": [{"name": "s", "path": str(root), "preset": "deepcode", "policy": "trusting"}]})
    app = make_app(config)
    model = FakeModel().enqueue(reply).enqueue(reply)
    app.model_client = lambda settings: model
    report = run_pass(app, config.stores["s"])
    (merge,) = [o for o in report.outcomes if o.planned.draft.source.startswith("model:")]
    return app, config.stores["s"], get_proposal(app, merge.id)


def test_a_lossy_model_merge_is_held_even_by_the_trusting_policy(make_store, make_app):
    """A confident model merge that loses a fact stays pending under the trusting policy."""
    _, _, stored = _model_merge_under_trusting(make_store, make_app, "# Build\nRun make test before pushing because CI only checks lint.\n")
    assert (stored.lossy, stored.state) == (True, "pending")


def test_the_same_model_merge_without_the_loss_is_accepted_by_the_trusting_policy(make_store, make_app):
    """The control for the test above: only the lost fact kept it pending. The acceptance is
    recorded, decision and event, with the policy as actor; the proposal's own event names
    the model."""
    from daemon.service.review.audit import event_log

    app, store, stored = _model_merge_under_trusting(make_store, make_app, BUILD)
    assert (stored.lossy, stored.state) == (False, "accepted")
    assert stored.decisions[0]["actor"].startswith("policy:trusting@")
    events = {e["type"]: e["actor"] for e in event_log(app, store) if e["proposal_id"] == stored.id}
    assert events["proposal.pending"] == "model:openai/test-model"
    assert events["proposal.accepted"] == stored.decisions[0]["actor"]


def test_apply_accepted_without_a_policy_is_a_config_error(tmp_path):
    """A store cannot apply automatically with no policy to decide."""
    with pytest.raises(ConfigError, match="needs a policy"):
        _config(tmp_path, apply="accepted")


def test_a_broken_policy_is_refused_when_the_config_is_read(tmp_path):
    """A policy that would accept lossy merges makes the config itself invalid, with its line number."""
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n\n[[rules]]\ndecide = "accept"\nkind = "merge"\n')
    with pytest.raises(ConfigError) as refused:
        _config(tmp_path, policy=str(bad))
    assert "bad.toml:3" in str(refused.value) and "lossy" in str(refused.value)


ONE_PER_PASS = """
name = "one-per-pass"
[limits]
max_per_pass = 1
[[rules]]
reason = "exact duplicates lose nothing"
decide = "accept"
kind = "merge"
source = "detector:exact-duplicate@*"
lossy = false
"""


def test_proposals_held_by_a_spent_budget_are_decided_by_later_passes(make_store, make_app, tmp_path, read_tree):
    """A per-pass budget holds the rest; the next passes (skipped: nothing changed) accept them one by one."""
    files = {}
    for i in range(3):
        body = f"# Topic {i}\n\nBuild flag -O{i} with cache key k{i * 17} and nothing else.\n"
        files[f"t{i}.md"] = files[f"t{i}-copy.md"] = body
    root = make_store(files)
    (tmp_path / "one.toml").write_text(ONE_PER_PASS)
    config = parse_config({"stores": [{"name": "s", "path": str(root), "preset": "generic", "policy": str(tmp_path / "one.toml")}]})
    app = make_app(config)
    before = read_tree(root)
    reports = [run_pass(app, config.stores["s"]) for _ in range(4)]
    assert [r.status for r in reports] == ["completed", "skipped", "skipped", "skipped"]
    assert [(r.policy["accepted"], r.policy["held"]) for r in reports] == [(1, 2), (1, 1), (1, 0), (0, 0)]
    ids = [o.id for o in reports[0].outcomes if o.id]
    assert [get_proposal(app, i).state for i in ids] == ["accepted"] * 3
    assert read_tree(root) == before  # apply = "never": accepted, not written


def test_max_retire_counts_notes_retired_in_place_as_well_as_archived(make_store, make_app):
    """An exact-duplicate merge retiring 6 copies is held by the default policy (max_retire 5)
    whether the store archives retired notes (deepcode) or marks them in place (generic)."""
    body = "# Deploy\n\nRun the deploy script with the staging flag first.\n"
    for preset in ("deepcode", "generic"):
        root = make_store({f"deploy-{i}.md": body for i in range(7)}, name=f"store-{preset}")
        config = parse_config({"stores": [{"name": preset, "path": str(root), "preset": preset, "policy": "default"}]})
        report = run_pass(make_app(config), config.stores[preset])
        (merge,) = [o for o in report.outcomes if o.planned.draft.kind == "merge"]
        assert len(merge.planned.draft.retire) == 6
        assert (report.policy["accepted"], report.policy["held"]) == (0, 1), preset


def test_once_the_budget_is_spent_the_rest_hold_without_reading_their_facts(make_store, make_app, tmp_path, monkeypatch):
    """A spent budget holds every further proposal whatever its facts, so they are not read:
    a pass over a store with hundreds of held proposals stays cheap."""
    from daemon.service.passes import deciding

    files = {}
    for i in range(3):
        body = f"# Topic {i}\n\nBuild flag -O{i} with cache key k{i * 17} and nothing else.\n"
        files[f"t{i}.md"] = files[f"t{i}-copy.md"] = body
    root = make_store(files)
    (tmp_path / "one.toml").write_text(ONE_PER_PASS)
    config = parse_config({"stores": [{"name": "s", "path": str(root), "preset": "generic", "policy": str(tmp_path / "one.toml")}]})
    read = []
    real = deciding.load_facts
    monkeypatch.setattr(deciding, "load_facts", lambda app, pid: read.append(pid) or real(app, pid))
    report = run_pass(make_app(config), config.stores["s"])
    assert (report.policy["accepted"], report.policy["held"]) == (1, 2)
    assert len(read) == 1


def test_a_policy_never_accepts_a_merge_that_would_leave_a_reference_dangling(make_store, make_app, clock, read_tree):
    """An exact-duplicate merge the default policy accepts holds instead when a pinned note cites the copy it retires (both copies pinned-cited: no survivor avoids it), and nothing is applied; its control, with the citations unpinned, is accepted and applied."""
    ports = "---\nname: Ports\n---\nThe API listens on 8080.\n"
    files = {"MEMORY.md": "# M\n- [Ports](ports.md)\n", "ports.md": ports, "ports-copy.md": ports.replace("Ports", "Ports copy"),
             "rules.md": "---\npinned: true\n---\nSee [the copy](ports-copy.md).\n",
             "more-rules.md": "---\npinned: true\n---\nSee [ports](ports.md).\n"}  # fmt: skip
    root = make_store(files)
    config = _config(root, policy="default", apply="accepted")
    report = run_pass(make_app(config), config.stores["s"])
    (merge,) = [o for o in report.outcomes if o.planned.draft.kind == "merge"]
    view = get_proposal(make_app(config), merge.id)
    assert (view.state, view.reads["holds"]) == ("pending", ["leaves 1 dangling reference"])
    assert report.stats["policy"]["applied"] == 0 and read_tree(root) == {p: t.encode() for p, t in files.items()}
    unpinned = {p: t.replace("pinned: true", "pinned: false") for p, t in files.items()}
    control = make_store(unpinned, name="control")
    config = parse_config({"stores": [{"name": "control", "path": str(control), "preset": "deepcode", "policy": "default", "apply": "accepted"}]})
    clock.advance(minutes=1)
    report = run_pass(make_app(config), config.stores["control"])
    (merge,) = [o for o in report.outcomes if o.planned.draft.kind == "merge"]
    assert get_proposal(make_app(config), merge.id).state == "applied"
    assert "ports-copy.md" not in (control / "rules.md").read_text() + (control / "more-rules.md").read_text()


def test_a_note_a_pinned_note_cites_survives_so_the_citation_stays_right(make_store, make_app):
    """Of two exact copies, the one a pinned note cites is kept, so the merge needs no rewrite of the pinned note and no policy has to hold it."""
    ports = "---\nname: Ports\n---\nThe API listens on 8080.\n"
    root = make_store({"MEMORY.md": "# M\n- [Ports](ports.md)\n", "ports.md": ports, "ports-copy.md": ports,
                       "rules.md": "---\npinned: true\n---\nSee [the copy](ports-copy.md).\n"})  # fmt: skip
    config = _config(root, policy="default")
    report = run_pass(make_app(config), config.stores["s"])
    (merge,) = [o for o in report.outcomes if o.planned.draft.kind == "merge"]
    assert merge.planned.draft.survivor == "ports-copy.md" and "a pinned note cites it" in merge.planned.draft.rationale
    assert get_proposal(make_app(config), merge.id).state == "accepted"
