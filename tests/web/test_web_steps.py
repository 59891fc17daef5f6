"""``dreamd serve`` beyond one decision: the next pending proposal, previous and next, undo,
apply and "accept every proposal shown". Starlette's TestClient over a real store, pass and
SQLite file; every apply writes real files through the service's apply."""

from __future__ import annotations

import html
import re

from daemon.service.proposals import decide, get_proposal, unaccept
from daemon.service.review import event_log

from .helpers import BUILD


def _notice(page: str) -> str:
    return html.unescape(re.search(r'id="notice">(.*?)</p>', page, re.DOTALL).group(1))


def _form(page: str, action: str) -> dict[str, str]:
    """The hidden fields of the form posting to ``action`` (its path, any query after it)."""
    found = re.search(rf'action="{re.escape(action)}(?:\?[^"]*)?"[^>]*>(.*?)</form>', page, re.DOTALL)
    assert found, action
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', found.group(1)))


def _state(web, proposal_id: int) -> str:  # noqa: ANN001
    return get_proposal(web.app, proposal_id).state


def _events(web, proposal_id: int) -> list[tuple[str, str]]:  # noqa: ANN001
    return [(e["type"], e["surface"]) for e in event_log(web.app) if e["proposal_id"] == proposal_id]


def _accept(web, proposal_id: int, query: str = ""):  # noqa: ANN001, ANN202
    page = web.client.get(f"/proposals/{proposal_id}{query}").text
    return web.client.post(f"/proposals/{proposal_id}/accept{query}", data=_form(page, f"/proposals/{proposal_id}/accept"))


def _reject(web, proposal_id: int, reason: str):  # noqa: ANN001, ANN202
    page = web.client.get(f"/proposals/{proposal_id}").text
    return web.client.post(f"/proposals/{proposal_id}/reject", data=_form(page, f"/proposals/{proposal_id}/reject") | {"reason": reason})


def _undo(web, page: str | None = None):  # noqa: ANN001, ANN202
    page = page if page is not None else web.client.get("/").text
    return web.client.post("/undo", data=_form(page, "/undo"))


# the next pending proposal, previous and next ----------------------------------------


def test_after_a_decision_the_next_pending_proposal_comes_up(web, reviewed):
    """Accepting the first proposal leads to the second, which says what became of the first."""
    web.sign_in()
    answer = _accept(web, reviewed.build)
    assert str(answer.url) == f"http://127.0.0.1/proposals/{reviewed.hostile}?done=accepted&of={reviewed.build}"
    assert _notice(answer.text) == f"#{reviewed.build} accepted; dreamd apply writes it, or the Apply button on the index"


def test_after_the_last_proposal_in_order_the_first_one_still_pending_comes_up(web, reviewed):
    """Rejecting the last proposal leads back to the first, still pending."""
    web.sign_in()
    answer = _reject(web, reviewed.hostile, "both are needed")
    assert str(answer.url) == f"http://127.0.0.1/proposals/{reviewed.build}?done=rejected&of={reviewed.hostile}"


def test_when_nothing_is_left_pending_the_index_comes_up(web, reviewed):
    """Deciding the only proposal still pending leads to the index, which says none is left and what was decided."""
    web.sign_in()
    _accept(web, reviewed.build)
    answer = _accept(web, reviewed.hostile)
    assert str(answer.url) == f"http://127.0.0.1/?done=accepted&of={reviewed.hostile}"
    assert "<h1>0 pending proposals</h1>" in answer.text
    assert _notice(answer.text).startswith(f"#{reviewed.hostile} accepted")


def test_previous_and_next_follow_the_index_order(web, reviewed):
    """The first proposal links to the second as next and has no previous; the second links back."""
    web.sign_in()
    first, second = web.client.get(f"/proposals/{reviewed.build}").text, web.client.get(f"/proposals/{reviewed.hostile}").text
    assert re.findall(r'<a href="([^"]+)" rel="(prev|next)"', first) == [(f"/proposals/{reviewed.hostile}", "next")]
    assert re.findall(r'<a href="([^"]+)" rel="(prev|next)"', second) == [(f"/proposals/{reviewed.build}", "prev")]
    assert '<span class="muted" id="position">1 of 2 pending</span>' in first


def test_the_index_filters_travel_with_previous_next_and_the_forms(web, reviewed):
    """Opened from an index filtered by kind, a page keeps the filter in its links and in its forms' actions."""
    web.sign_in()
    page = web.client.get(f"/proposals/{reviewed.build}?kind=merge").text
    assert re.findall(r'<a href="([^"]+)" rel="next"', page) == [f"/proposals/{reviewed.hostile}?kind=merge"]
    assert f'action="/proposals/{reviewed.build}/accept?kind=merge"' in page
    assert re.findall(r'<a href="([^"]+)" rel="(?:prev|next)"', web.client.get(f"/proposals/{reviewed.build}?kind=supersede").text) == []


# undo ----------------------------------------------------------------------------------


def test_undo_takes_back_an_accept_as_an_event_and_shows_the_proposal_again(web, reviewed):
    """After an accept, the undo makes the proposal pending again, recorded as proposal.unaccepted through web, and shows it."""
    web.sign_in()
    answer = _undo(web, _accept(web, reviewed.build).text)
    assert str(answer.url) == f"http://127.0.0.1/proposals/{reviewed.build}?done=unaccepted&of={reviewed.build}"
    assert _notice(answer.text) == f"#{reviewed.build} pending again: the accept was taken back"
    assert _state(web, reviewed.build) == "pending"
    assert _events(web, reviewed.build)[-2:] == [("proposal.accepted", "web"), ("proposal.unaccepted", "web")]


def test_undo_takes_back_a_rejection_and_lifts_its_tombstone(web, reviewed):
    """After a rejection, the undo makes the proposal pending again, recorded as proposal.unrejected through web."""
    web.sign_in()
    _undo(web, _reject(web, reviewed.hostile, "both are needed").text)
    assert _state(web, reviewed.hostile) == "pending"
    assert _events(web, reviewed.hostile)[-2:] == [("proposal.rejected", "web"), ("proposal.unrejected", "web")]


def test_undo_again_takes_back_the_decision_before(web, reviewed):
    """Two decisions, two undos: the rejection first, then the accept; no undo is offered after."""
    web.sign_in()
    _accept(web, reviewed.build)
    _undo(web, _reject(web, reviewed.hostile, "both are needed").text)
    assert (_state(web, reviewed.build), _state(web, reviewed.hostile)) == ("accepted", "pending")
    after = _undo(web)
    assert (_state(web, reviewed.build), _state(web, reviewed.hostile)) == ("pending", "pending")
    assert 'id="undo"' not in after.text


def test_an_undo_drawn_before_a_later_decision_is_refused(web, reviewed):
    """An undo form left open while another decision was made takes nothing back, and says which decision is the last now."""
    web.sign_in()
    stale_page = _accept(web, reviewed.build).text
    _reject(web, reviewed.hostile, "both are needed")
    answer = _undo(web, stale_page)
    assert answer.status_code == 409
    assert _notice(answer.text) == f"this undo is out of date (the last decision here is now: rejected #{reviewed.hostile}); nothing was taken back"
    assert (_state(web, reviewed.build), _state(web, reviewed.hostile)) == ("accepted", "rejected")


def test_undo_of_an_accept_already_applied_is_refused_and_changes_nothing(web, reviewed, read_tree):
    """Once the proposal is applied, its accept cannot be taken back: the page says so and points at revert."""
    web.sign_in()
    page = _accept(web, reviewed.build).text
    index = web.client.get("/").text
    web.client.post(f"/proposals/{reviewed.build}/apply", data=_form(index, f"/proposals/{reviewed.build}/apply"))
    applied = read_tree(reviewed.root)
    answer = _undo(web, page)
    assert answer.status_code == 409
    assert _notice(answer.text) == (
        f"the accept of #{reviewed.build} cannot be taken back: #{reviewed.build} is applied; nothing was taken back (dreamd revert {reviewed.build} undoes the apply)"
    )
    assert _state(web, reviewed.build) == "applied" and read_tree(reviewed.root) == applied


def test_undo_without_its_csrf_token_is_forbidden(web, reviewed):
    """An undo post without the form's token answers 403 and takes nothing back."""
    web.sign_in()
    page = _accept(web, reviewed.build).text
    answer = web.client.post("/undo", data=_form(page, "/undo") | {"csrf": "forged"})
    assert answer.status_code == 403 and _state(web, reviewed.build) == "accepted"


# apply ---------------------------------------------------------------------------------


def test_the_index_lists_accepted_proposals_with_an_apply_button(web, reviewed):
    """An accepted proposal is listed under "Accepted, not applied yet" with its Apply form; a pending one is not."""
    web.sign_in()
    decide(web.app, reviewed.build, "accept")
    index = web.client.get("/").text
    listed = index.split('<h2 id="accepted">')[1]
    assert re.findall(r'<a href="/proposals/(\d+)">', listed) == [str(reviewed.build)]
    assert set(_form(index, f"/proposals/{reviewed.build}/apply")) == {"csrf", "key"}


def test_apply_writes_an_accepted_proposal_through_the_service(web, reviewed):
    """The Apply button applies the proposal as dreamd apply does: the copy moves to the archive, the state is applied, the event says web."""
    web.sign_in()
    decide(web.app, reviewed.build, "accept")
    answer = web.client.post(f"/proposals/{reviewed.build}/apply", data=_form(web.client.get("/").text, f"/proposals/{reviewed.build}/apply"))
    assert str(answer.url) == f"http://127.0.0.1/?done=applied&of={reviewed.build}"
    assert _notice(answer.text) == f"#{reviewed.build} applied; dreamd revert {reviewed.build} undoes it"
    assert not (reviewed.root / "build-again.md").exists() and (reviewed.root / ".dreamd-archive" / "build-again.md").is_file()
    assert _state(web, reviewed.build) == "applied" and ("proposal.applied", "web") in _events(web, reviewed.build)


def test_apply_of_a_proposal_other_than_the_page_showed_writes_nothing(web, reviewed, read_tree):
    """An apply form whose key is not the proposal's is refused with why, and no file changes."""
    web.sign_in()
    decide(web.app, reviewed.build, "accept")
    decide(web.app, reviewed.hostile, "accept")
    index = web.client.get("/").text
    before = read_tree(reviewed.root)
    form = _form(index, f"/proposals/{reviewed.build}/apply") | {"key": _form(index, f"/proposals/{reviewed.hostile}/apply")["key"]}
    answer = web.client.post(f"/proposals/{reviewed.build}/apply", data=form)
    assert (answer.status_code, _notice(answer.text)) == (409, f"proposal #{reviewed.build} is not the one this page showed; nothing was written")
    assert read_tree(reviewed.root) == before and _state(web, reviewed.build) == "accepted"


def test_apply_of_a_proposal_whose_note_changed_writes_nothing_and_says_why(web, reviewed):
    """A note edited after the page was drawn: apply marks the proposal stale, says which file changed and leaves the edit."""
    web.sign_in()
    decide(web.app, reviewed.build, "accept")
    form = _form(web.client.get("/").text, f"/proposals/{reviewed.build}/apply")
    (reviewed.root / "build-again.md").write_text(BUILD + "Also: make lint.\n")
    answer = web.client.post(f"/proposals/{reviewed.build}/apply", data=form)
    assert (answer.status_code, _notice(answer.text)) == (409, f"#{reviewed.build} is stale: changed since proposed: build-again.md; nothing was written")
    assert (reviewed.root / "build-again.md").read_text() == BUILD + "Also: make lint.\n"


def test_apply_without_its_csrf_token_is_forbidden_and_writes_nothing(web, reviewed, read_tree):
    """An apply post with another form's token answers 403 and no file changes."""
    web.sign_in()
    decide(web.app, reviewed.build, "accept")
    before = read_tree(reviewed.root)
    form = _form(web.client.get("/").text, f"/proposals/{reviewed.build}/apply")
    form["csrf"] = _form(web.client.get(f"/proposals/{reviewed.build}").text, f"/proposals/{reviewed.build}/reject")["csrf"]
    assert web.client.post(f"/proposals/{reviewed.build}/apply", data=form).status_code == 403
    assert read_tree(reviewed.root) == before and _state(web, reviewed.build) == "accepted"


def test_a_pending_proposal_cannot_be_applied(web, reviewed, read_tree):
    """The page offers no Apply for a pending proposal, and a post made anyway is refused with why."""
    web.sign_in()
    decide(web.app, reviewed.build, "accept")
    form = _form(web.client.get("/").text, f"/proposals/{reviewed.build}/apply")
    unaccept(web.app, reviewed.build)
    before = read_tree(reviewed.root)
    answer = web.client.post(f"/proposals/{reviewed.build}/apply", data=form)
    assert answer.status_code == 409
    assert _notice(answer.text).startswith(f"proposal #{reviewed.build} is pending")
    assert read_tree(reviewed.root) == before and "apply" not in web.forms(reviewed.build)


# accept every proposal shown ------------------------------------------------------------


def test_accept_every_proposal_shown_accepts_what_the_filter_matches(web, reviewed):
    """With the index filtered to merges, the batch accepts both, through web, and the index says so."""
    web.sign_in()
    index = web.client.get("/?kind=merge").text
    answer = web.client.post("/accept-shown?kind=merge", data=_form(index, "/accept-shown"))
    assert str(answer.url) == f"http://127.0.0.1/?kind=merge&done=accepted&of={reviewed.build}%2C{reviewed.hostile}"
    assert _notice(answer.text) == f"#{reviewed.build} and #{reviewed.hostile} accepted; dreamd apply writes them, or the Apply button on the index"
    assert (_state(web, reviewed.build), _state(web, reviewed.hostile)) == ("accepted", "accepted")
    assert ("proposal.accepted", "web") in _events(web, reviewed.hostile)


def test_accept_every_proposal_shown_accepts_none_when_what_was_shown_changed(web, reviewed):
    """One of the proposals shown was decided elsewhere meanwhile: nothing is accepted, and the page says so."""
    web.sign_in()
    form = _form(web.client.get("/").text, "/accept-shown")
    decide(web.app, reviewed.hostile, "reject", "both are needed")
    answer = web.client.post("/accept-shown", data=form)
    assert answer.status_code == 409
    assert _notice(answer.text) == "the proposals shown changed since the page was drawn (1 pending proposal matches the filters now); nothing was accepted (reload the page)"
    assert _state(web, reviewed.build) == "pending"


def test_a_filter_matching_nothing_offers_no_batch_accept(web, reviewed):
    """An index filtered to a kind no pending proposal has shows no "accept every proposal shown" button."""
    web.sign_in()
    assert 'id="accept-shown"' not in web.client.get("/?kind=supersede").text
    assert 'id="accept-shown"' in web.client.get("/").text


def test_a_batch_accept_is_undone_whole(web, reviewed):
    """The undo after "accept every proposal shown" makes every proposal it accepted pending again."""
    web.sign_in()
    accepted = web.client.post("/accept-shown", data=_form(web.client.get("/").text, "/accept-shown"))
    _undo(web, accepted.text)
    assert (_state(web, reviewed.build), _state(web, reviewed.hostile)) == ("pending", "pending")


def test_accept_every_proposal_shown_needs_its_csrf_token(web, reviewed):
    """A batch accept without the form's token answers 403 and accepts nothing."""
    web.sign_in()
    form = _form(web.client.get("/").text, "/accept-shown") | {"csrf": ""}
    assert web.client.post("/accept-shown", data=form).status_code == 403
    assert (_state(web, reviewed.build), _state(web, reviewed.hostile)) == ("pending", "pending")
