"""Proposals of one pass that edit the same note apply together, or say which conflict and why.

A Serena memories folder of a shop backend: ``core.md`` refers to five topics, each of which
was saved twice, so the pass proposes five merges and every one rewrites a link in
``core.md``. Accepted together, all five apply in one ``apply``; the compare-and-swap stays
strict on the notes each one merges and on anything someone other than dreamd wrote.
"""

from __future__ import annotations

from pathlib import Path

from daemon.config import adhoc_store
from daemon.service.apply.applying import apply
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide_all, get_proposal, list_proposals

TOPICS = ("billing", "search", "queue", "cache", "mail")


def _topic(name: str) -> str:
    return (
        f"# {name.title()}\n\nThe {name} service is written in Go and owned by the platform team. It listens on its own port,\n"
        f"logs JSON to stdout, and is deployed by the release job together with the other services. Its\n"
        f"dashboards live in Grafana under the {name} folder, and its alerts page the on-call engineer.\n"
    )


def _shop() -> dict[str, str]:
    files = {
        "memory_maintenance.md": "# Memory maintenance\n\nRead `mem:core` first; refer to memories as `mem:NAME`.\n",
        "core.md": "# Core\n\nThe shop backend. Services:\n\n" + "".join(f"- {t}: `mem:services/{t}` (older notes: `mem:services/{t}_copy`)\n" for t in TOPICS),
    }
    for topic in TOPICS:
        files[f"services/{topic}.md"] = _topic(topic)
        files[f"services/{topic}_copy.md"] = _topic(topic)
    return files


def _accept_all(app, store) -> list[int]:  # noqa: ANN001
    run_pass(app, store)
    ids = [p.id for p in list_proposals(app, store.name, ["pending"])]
    decide_all(app, ids, "accept")
    return ids


def test_five_merges_rewriting_links_in_one_note_apply_in_one_apply(make_store, make_app, clock):
    """The five merges each rewriting a link in core.md all apply in one apply, and core.md ends with every link on its survivor."""
    root = make_store(_shop(), name="shop/.serena/memories")
    store, app = adhoc_store(root, "serena"), make_app()
    ids = _accept_all(app, store)
    assert len(ids) == 5
    results = apply(app, store_name=store.name)
    assert sorted(r.state for r in results) == ["applied"] * 5
    assert [r.detail for r in results][1:] == ["placed on core.md as earlier applies left it"] * 4
    core = (root / "core.md").read_text()
    assert "_copy" not in core and all(core.count(f"`mem:services/{t}`") == 2 for t in TOPICS)


def test_a_person_s_edit_of_the_shared_note_makes_the_rest_stale_and_nothing_is_written(make_store, make_app, clock, read_tree):
    """After one merge applied, a hand edit of core.md makes the other four stale ("changed since proposed: core.md"), and nothing more is written: only dreamd's own bytes are rebased over."""
    root = make_store(_shop(), name="shop/.serena/memories")
    store, app = adhoc_store(root, "serena"), make_app()
    first, *rest = _accept_all(app, store)
    assert apply(app, [first])[0].state == "applied"
    with open(root / "core.md", "a") as f:
        f.write("- payments: ask the payments team.\n")
    before = read_tree(root.parent)
    results = apply(app, rest)
    assert {(r.state, r.detail) for r in results} == {("stale", "changed since proposed: core.md")}
    assert read_tree(root.parent) == before


def test_a_pass_between_applies_keeps_the_accepted_proposals_whose_note_only_dreamd_changed(make_store, make_app, clock):
    """A pass after one of the five merges applied leaves the other four accepted, and they apply after it."""
    root = make_store(_shop(), name="shop/.serena/memories")
    store, app = adhoc_store(root, "serena"), make_app()
    first, *rest = _accept_all(app, store)
    apply(app, [first])
    clock.advance(minutes=5)
    assert run_pass(app, store).stale == []
    assert {get_proposal(app, pid).state for pid in rest} == {"accepted"}
    assert {r.state for r in apply(app, rest)} == {"applied"}


def test_a_pass_after_a_person_s_edit_of_the_shared_note_marks_the_rest_stale(make_store, make_app, clock):
    """A pass that finds core.md edited by a person after one merge applied marks the other four stale."""
    root = make_store(_shop(), name="shop/.serena/memories")
    store, app = adhoc_store(root, "serena"), make_app()
    first, *rest = _accept_all(app, store)
    apply(app, [first])
    (root / "core.md").write_text((root / "core.md").read_text() + "Edited by hand.\n")
    clock.advance(minutes=5)
    assert sorted(run_pass(app, store).stale) == sorted(rest)


NEAR = "Dead letters after five failures.\n"


def _chained() -> dict[str, str]:
    """``queue.md`` (a near copy of ``queue_notes.md``, so it survives their merge and gets its
    line) refers to ``mem:mail_copy``, which the other merge retires into ``mail.md`` (the one
    more notes refer to)."""
    return {
        "memory_maintenance.md": "# Memory maintenance\n\nRead `mem:core` first; mail is `mem:mail`.\n",
        "core.md": "# Core\n\nQueues: `mem:queue`. Mail: `mem:mail`.\n",
        "ops.md": "# Ops\n\nOutgoing mail: `mem:mail`.\n",
        "queue.md": _topic("queue") + "Mail: `mem:mail_copy`.\n",
        "queue_notes.md": _topic("queue") + NEAR,
        "mail.md": _topic("mail"),
        "mail_copy.md": _topic("mail"),
    }


def _merges(app, store) -> tuple[int, int]:  # noqa: ANN001
    """(the merge into queue.md, the merge of mail_copy.md), both accepted."""
    ids = _accept_all(app, store)
    by_title = {get_proposal(app, pid).title: pid for pid in ids}
    return by_title["Merge 1 near duplicate into queue.md"], by_title["Merge 1 exact duplicate into mail.md"]


def test_a_merge_goes_before_a_proposal_rewriting_links_in_its_survivor(make_store, make_app, clock):
    """Given the link rewrite first, apply still applies the merge into queue.md first, then places the rewrite on the merged text: both apply."""
    root = make_store(_chained(), name="shop/.serena/memories")
    store, app = adhoc_store(root, "serena"), make_app()
    into_queue, of_mail = _merges(app, store)
    results = apply(app, [of_mail, into_queue])
    assert [(r.proposal_id, r.state) for r in results] == [(into_queue, "applied"), (of_mail, "applied")]
    queue = (root / "queue.md").read_text()
    assert NEAR in queue and "`mem:mail`" in queue and "mail_copy" not in queue


def test_a_note_a_merge_keeps_stays_strict_when_another_apply_rewrote_a_link_in_it(make_store, make_app, clock, read_tree):
    """The merge into queue.md goes stale when an earlier apply rewrote a link in queue.md: a note a proposal merges must be what it saw."""
    root = make_store(_chained(), name="shop/.serena/memories")
    store, app = adhoc_store(root, "serena"), make_app()
    into_queue, of_mail = _merges(app, store)
    assert apply(app, [of_mail])[0].state == "applied"
    before = read_tree(root)
    (result,) = apply(app, [into_queue])
    assert (result.state, result.detail) == ("stale", "changed since proposed: queue.md")
    assert read_tree(root) == before


def test_a_link_rewrite_in_a_note_another_apply_retired_is_refused_naming_it(make_store, make_app, clock):
    """Two copies that both link a merged-away note: the merge of the copies retires one, and the link rewrite in it is refused, saying it is gone and by which apply."""
    files = _chained()
    files["queue_notes.md"] = files["queue.md"]  # exact copies now, both linking mem:mail_copy
    root = make_store(files, name="shop/.serena/memories")
    store, app = adhoc_store(root, "serena"), make_app()
    ids = _accept_all(app, store)
    by_title = {get_proposal(app, pid).title: pid for pid in ids}
    into_queue, of_mail = by_title["Merge 1 exact duplicate into queue.md"], by_title["Merge 1 exact duplicate into mail.md"]
    results = {r.proposal_id: (r.state, r.detail) for r in apply(app, [into_queue, of_mail])}
    assert results == {into_queue: ("applied", ""), of_mail: ("stale", f"queue_notes.md changed since proposed (dreamd's applies since: #{into_queue}), and it is gone")}
    assert not Path(root / "queue_notes.md").exists()
