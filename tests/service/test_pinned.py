"""Invariant 3: a pinned note's bytes never change, through a detector, validation, apply or revert."""

from __future__ import annotations

from daemon.config import parse_config
from daemon.core.proposals import SUPERSEDE, Draft
from daemon.service.apply.applying import apply, revert
from daemon.service.passes.run import run_pass
from daemon.service.passes.proposing import make_proposal
from daemon.service.proposals import decide, get_proposal, list_proposals
from daemon.service.workspace import observe

GUIDE = (
    "Deploys go through the staging cluster first and need a green canary for thirty minutes before "
    "promotion to production traffic is allowed by the release captain on duty, who also signs the change "
    "record and informs the support rotation in the shared channel.\n"
)

PINNED_STORE = {
    "MEMORY.md": "# Memory\n\n- [Rules](rules.md) — team rules\n",
    # pinned in frontmatter; its exact duplicate is newer, so it would win without the pin
    "rules.md": "---\nname: Rules\npinned: true\n---\nAlways wrap errors with context.\n",
    "rules-copy.md": "---\nname: Rules copy\nupdated_at: 2025-02-01\n---\nalways wrap errors  with context.\n",
    # pinned by the store setting pinned = ["zz-*.md"]; its duplicate is newer and shorter-named
    "zz-glob-pinned.md": "Use UTC everywhere in stored times.\n",
    "a-copy.md": "---\nupdated_at: 2025-02-01\n---\nUse UTC everywhere in stored times.\n",
    # pinned and declared superseded: must never be retired
    "old.md": "---\npinned: true\nsuperseded_by: new.md\n---\nThe API lives on port 8080.\n",
    "new.md": "---\nsupersedes: old.md\n---\nThe API lives on port 9090.\n",
    # a near duplicate whose merge would have to append to the pinned note
    "guide.md": "---\npinned: true\n---\n" + GUIDE,
    "guide-2.md": GUIDE + "Rollbacks reuse it.\n",
}
PINNED = ("rules.md", "zz-glob-pinned.md", "old.md", "guide.md")


def _config(root, pinned=("zz-*.md",)):
    return parse_config({"stores": [{"name": "s", "path": str(root), "preset": "deepcode", "settings": {"pinned": list(pinned)}}]})


def _changed(outcome) -> set[str]:
    change = outcome.planned.change
    return set(change.written) if change else set()


def test_exact_duplicate_of_pinned_note_merges_into_it_unchanged(make_store, make_app):
    """An exact duplicate of a pinned note (frontmatter or glob) is retired into it, and the pinned note's bytes stay."""
    root = make_store(PINNED_STORE)
    config = _config(root)
    report = run_pass(make_app(config), config.stores["s"])
    merges = {o.planned.draft.survivor: o for o in report.outcomes if o.planned.draft.kind == "merge"}
    assert sorted(merges) == ["rules.md", "zz-glob-pinned.md"]
    assert merges["rules.md"].planned.draft.retire == ("rules-copy.md",)
    assert merges["zz-glob-pinned.md"].planned.draft.retire == ("a-copy.md",)
    for survivor, outcome in merges.items():
        change = outcome.planned.change
        assert outcome.state == "pending"
        assert change.base[survivor] == change.result[survivor]
        assert survivor not in change.written


def test_no_planned_proposal_changes_a_pinned_note(make_store, make_app):
    """Across every detector, no pending proposal changes, moves or retires a pinned note (old.md's declared supersession included)."""
    root = make_store(PINNED_STORE)
    config = _config(root)
    report = run_pass(make_app(config), config.stores["s"])
    assert report.outcomes, "the store has proposals to make"
    for outcome in report.outcomes:
        assert not set(PINNED) & _changed(outcome), outcome.planned.draft.title
        assert not set(PINNED) & set(outcome.planned.draft.retire)


def test_near_duplicate_that_would_append_to_pinned_note_is_not_proposed(make_store, make_app):
    """The near duplicate of guide.md is merged only when guide.md is not pinned (the merge would append to it)."""
    unpinned = make_store({**PINNED_STORE, "guide.md": GUIDE}, name="unpinned")
    pinned = make_store(PINNED_STORE, name="pinned")
    kinds = {}
    for label, root in (("unpinned", unpinned), ("pinned", pinned)):
        config = _config(root)
        report = run_pass(make_app(config), config.stores["s"], dry_run=True)
        kinds[label] = [o.planned.draft.survivor for o in report.outcomes if "near" in o.planned.draft.source]
    assert kinds == {"unpinned": ["guide.md"], "pinned": []}


def test_draft_retiring_a_pinned_note_is_refused_with_reason(make_store, clock):
    """A supersede draft that retires pinned old.md is refused, and the reason says it is pinned."""
    root = make_store(PINNED_STORE)
    config = _config(root)
    view = observe(config.stores["s"]).view
    draft = Draft(kind=SUPERSEDE, source="detector:declared-supersession@1", confidence=0.95, title="Supersede old.md with new.md", rationale="declared", retire=("old.md",), survivor="new.md")
    planned = make_proposal(draft, view, clock())
    assert planned.state == "refused"
    assert planned.reason == "old.md is pinned; no proposal may change it"
    assert planned.diff == ""


def test_draft_retiring_a_glob_pinned_note_is_refused(make_store, clock):
    """A merge draft retiring a note pinned only by the store's ``pinned`` glob is refused as pinned."""
    from daemon.core.proposals import MERGE

    root = make_store(PINNED_STORE)
    config = _config(root)
    view = observe(config.stores["s"]).view
    draft = Draft(kind=MERGE, source="detector:exact-duplicate@1", confidence=1.0, title="t", rationale="r", retire=("zz-glob-pinned.md",), survivor="a-copy.md")
    planned = make_proposal(draft, view, clock())
    assert (planned.state, planned.reason) == ("refused", "zz-glob-pinned.md is pinned; no proposal may change it")


def _apply_everything(app, store, clock) -> list[int]:
    """Pass, accept every pending proposal, apply; repeat until a pass proposes nothing new."""
    applied: list[int] = []
    for _ in range(8):
        clock.advance(minutes=1)
        report = run_pass(app, store)
        pending = [o.id for o in report.outcomes if o.state == "pending"]
        if not pending:
            return applied
        for pid in pending:
            decide(app, pid, "accept")
        clock.advance(minutes=1)
        applied += [r.proposal_id for r in apply(app, pending) if r.state == "applied"]
    raise AssertionError("passes kept proposing")


def test_accepting_and_applying_everything_then_reverting_never_touches_pinned_notes(make_store, make_app, clock, snapshot_tree):
    """Applying every proposal until none is left, then reverting them all, keeps each pinned note's bytes and mtime."""
    root = make_store(PINNED_STORE)
    config = _config(root)
    app = make_app(config)
    before = snapshot_tree(root)
    applied = _apply_everything(app, config.stores["s"], clock)
    assert len(applied) >= 3
    assert not (root / "rules-copy.md").exists()
    after_apply = snapshot_tree(root)
    for path in PINNED:
        assert after_apply[path] == before[path], path
    for pid in reversed(applied):
        clock.advance(minutes=1)
        assert revert(app, pid).state == "reverted"
    after_revert = snapshot_tree(root)
    for path in PINNED:
        assert after_revert[path] == before[path], path


def test_note_pinned_by_config_after_accept_is_not_written_by_apply(make_store, make_app, clock, read_tree):
    """A proposal accepted before its note was pinned by a new config glob goes stale at apply and writes nothing."""
    root = make_store(PINNED_STORE)
    loose = _config(root, pinned=())
    app = make_app(loose)
    report = run_pass(app, loose.stores["s"])
    (merge,) = [o for o in report.outcomes if o.planned.draft.retire == ("zz-glob-pinned.md",)]
    decide(app, merge.id, "accept")
    before = read_tree(root)
    strict = make_app(_config(root, pinned=("zz-*.md",)))
    (result,) = apply(strict, [merge.id])
    assert result.state == "stale"
    assert result.detail == "pinned, so no proposal may change it: zz-glob-pinned.md"
    assert get_proposal(strict, merge.id).state == "stale"
    assert read_tree(root) == before


def test_stored_proposals_keep_every_pinned_notes_base_hash(make_store, make_app):
    """Every stored proposal's result keeps each pinned note's base hash."""
    root = make_store(PINNED_STORE)
    config = _config(root)
    app = make_app(config)
    run_pass(app, config.stores["s"])
    for proposal in list_proposals(app):
        for path in PINNED:
            if path in proposal.result:
                assert proposal.result[path] == proposal.base[path], (proposal.id, path)


HIDDEN_PINS = {
    "MEMORY.md": "# Memory\n\n- [Rules](rules.md) — team rules\n- [Deploy](deploy.md) — how we deploy\n",
    # a Windows editor's byte order mark before the fence; its copy is newer
    "rules.md": b"\xef\xbb\xbf---\r\nname: Rules\r\npinned: true\r\n---\r\nAlways wrap errors with context.\r\n",
    "rules-copy.md": "---\nname: Rules copy\nupdated_at: 2025-02-01\n---\nalways wrap errors  with context.\n",
    # a quoted, capitalised pin; and one whose YAML does not parse, with an expired TTL
    "deploy.md": "---\nPinned: \"true\"\nttl_days: 1\nupdated_at: 2020-01-01\n---\n" + GUIDE,
    "deploy-2.md": GUIDE + "Rollbacks reuse it.\n",
    "ops.md": "---\ntags: [ops, deploy\npinned: true\nttl_days: 1\nupdated_at: 2020-01-01\n---\nPage the on-call first.\n",
    "ops-copy.md": "---\nupdated_at: 2025-02-01\n---\nPage the on-call first.\n",
}


def test_pins_that_hide_are_still_pins_through_a_policy_that_applies(make_store, make_app, read_tree):
    """A BOM before the fence, a quoted capitalised pin and broken YAML around a pin keep their notes byte for byte under policy "default" with apply = "accepted"."""
    root = make_store(HIDDEN_PINS)
    before = read_tree(root)
    config = parse_config({"stores": [{"name": "s", "path": str(root), "preset": "deepcode", "policy": "default", "apply": "accepted"}]})
    app = make_app(config)
    report = run_pass(app, config.stores["s"])
    after = read_tree(root)
    for path in ("rules.md", "deploy.md", "ops.md"):
        assert after[path] == before[path], path
    retired = {p for o in report.outcomes if o.state == "pending" for p in o.planned.draft.retire}
    assert retired.isdisjoint({"rules.md", "deploy.md", "ops.md"})
    merges = {o.planned.draft.survivor for o in report.outcomes if o.planned.draft.kind == "merge" and o.state == "pending"}
    assert merges <= {"rules.md", "ops.md"}  # the pinned note survives, unchanged; deploy-2's extra line never goes into deploy.md
