"""``dreamd serve``'s routes through Starlette's TestClient, over a real store, pass and SQLite file."""

from __future__ import annotations

import base64
import getpass
import hashlib
import html
import re
import pytest

from daemon.service.context import App
from daemon.service.proposals import get_proposal
from daemon.service.review.pages import SCRIPT

from .helpers import pass_over


def _notice(page: str) -> str:
    return html.unescape(re.search(r'id="notice">(.*?)</p>', page, re.DOTALL).group(1))


def _undecided(app: App, proposal_id: int) -> bool:
    view = get_proposal(app, proposal_id)
    return view.state == "pending" and view.decisions == []


@pytest.mark.parametrize("path", ["/", "/proposals/1"])
def test_a_request_without_the_token_is_forbidden(web, path):
    """With neither the token nor its cookie, every page answers 403."""
    assert web.client.get(path).status_code == 403


def test_a_wrong_token_is_forbidden_and_sets_no_cookie(web):
    """A token that is not this server's is refused, and no cookie comes back."""
    answer = web.client.get("/?token=not-the-token", follow_redirects=False)
    assert (answer.status_code, answer.headers.get("set-cookie")) == (403, None)


def test_the_token_becomes_an_httponly_strict_cookie_and_leaves_the_url(web):
    """Presenting the token redirects to the same page without it, setting an HttpOnly SameSite=Strict cookie."""
    answer = web.client.get(f"/proposals/1?token={web.access.token}&x=1", follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/proposals/1?x=1")
    assert answer.headers["set-cookie"] == f"{web.access.cookie_name}={web.access.token}; HttpOnly; Path=/; SameSite=strict"


def test_a_post_without_the_cookie_is_forbidden_and_decides_nothing(web, reviewed):
    """A form post from a client that never presented the token is refused before its fields are read."""
    web.sign_in()
    form = web.forms(reviewed.build)["accept"]
    web.client.cookies.clear()
    assert web.client.post(f"/proposals/{reviewed.build}/accept", data=form).status_code == 403
    assert _undecided(web.app, reviewed.build)


def test_the_index_lists_pending_proposals_by_store(web, reviewed):
    """Signed in, the index shows the store with both pending proposals linked."""
    web.sign_in()
    page = web.client.get("/").text
    assert f"<h2>{reviewed.root}</h2>" in page and "<h1>2 pending proposals</h1>" in page
    listed = re.search(r"<table class=\"list\">.*?</table>", page, re.DOTALL).group()
    assert re.findall(r'href="(/proposals/\d+)"', listed) == [f"/proposals/{reviewed.build}", f"/proposals/{reviewed.hostile}"]


@pytest.mark.parametrize(("query", "heading"), [
    ("kind=merge", "2 pending proposals"),
    ("kind=supersede", "0 pending proposals of 2"),
    ("source=detector:", "2 pending proposals"),
    ("source=detector:near-duplicate@6", "0 pending proposals of 2"),
    ("min_confidence=1", "2 pending proposals"),
    ("store=elsewhere", "0 pending proposals of 2"),
])  # fmt: skip
def test_the_index_filters_by_store_kind_source_and_confidence(web, query, heading):
    """Each filter keeps only the pending proposals it matches."""
    web.sign_in()
    assert f"<h1>{heading}</h1>" in web.client.get(f"/?{query}").text


@pytest.mark.parametrize("value", ["2", "-0.1", "lots", "nan"])
def test_a_bad_confidence_filter_says_why(web, value):
    """A minimum confidence that is not a number within 0..1 answers 400 with the rule, listing everything pending."""
    web.sign_in()
    answer = web.client.get(f"/?min_confidence={value}")
    assert answer.status_code == 400
    assert '<p class="notice refused">min confidence must be a number from 0 to 1</p>' in answer.text
    assert "<h1>2 pending proposals</h1>" in answer.text


def test_accept_records_a_human_decision_through_the_web(web, reviewed):
    """Accepting with the page's form makes the proposal accepted, decided by human:USER via web."""
    web.sign_in()
    web.client.post(f"/proposals/{reviewed.build}/accept", data=web.forms(reviewed.build)["accept"])
    view = get_proposal(web.app, reviewed.build)
    assert view.state == "accepted"
    assert [(d["decision"], d["actor"], d["surface"]) for d in view.decisions] == [("accept", f"human:{getpass.getuser()}", "web")]


@pytest.mark.parametrize("csrf", ["", "1.2.3", "forged"])
def test_a_missing_or_wrong_csrf_token_is_forbidden_and_decides_nothing(web, reviewed, csrf):
    """A form post whose CSRF token is absent or not this server's answers 403 and leaves the proposal undecided."""
    web.sign_in()
    form = {**web.forms(reviewed.build)["accept"], "csrf": csrf}
    answer = web.client.post(f"/proposals/{reviewed.build}/accept", data=form)
    assert answer.status_code == 403
    assert _notice(answer.text) == "this form was not issued by this server for this action; reload the page; nothing was accepted"
    assert _undecided(web.app, reviewed.build)


def test_a_csrf_token_of_another_proposal_is_forbidden(web, reviewed):
    """The accept token of one proposal cannot accept another."""
    web.sign_in()
    form = {**web.forms(reviewed.hostile)["accept"], "csrf": web.forms(reviewed.build)["accept"]["csrf"]}
    assert web.client.post(f"/proposals/{reviewed.hostile}/accept", data=form).status_code == 403
    assert _undecided(web.app, reviewed.hostile)


def test_a_csrf_token_older_than_its_lifetime_is_forbidden(web, reviewed, clock):
    """A form left open longer than eight hours is refused as too old."""
    web.sign_in()
    form = web.forms(reviewed.build)["accept"]
    clock.advance(hours=8, seconds=1)
    answer = web.client.post(f"/proposals/{reviewed.build}/accept", data=form)
    assert (answer.status_code, _notice(answer.text)) == (403, "this form is too old; reload the page; nothing was accepted")
    assert _undecided(web.app, reviewed.build)


def test_a_csrf_token_is_good_for_one_post(web, reviewed):
    """Sending a reject form twice: the second post is refused, and one decision is recorded."""
    web.sign_in()
    form = {**web.forms(reviewed.build)["reject"], "reason": "keep both"}
    assert web.client.post(f"/proposals/{reviewed.build}/reject", data=form).status_code == 200
    again = web.client.post(f"/proposals/{reviewed.build}/reject", data=form)
    assert (again.status_code, _notice(again.text)) == (403, "this form was sent already; reload the page; nothing was rejected")
    assert len(get_proposal(web.app, reviewed.build).decisions) == 1


def test_a_form_route_answers_only_post(web, reviewed):
    """GET on the accept route is not allowed and decides nothing."""
    web.sign_in()
    assert web.client.get(f"/proposals/{reviewed.build}/accept").status_code == 405
    assert _undecided(web.app, reviewed.build)


def test_accepting_a_proposal_that_went_stale_is_refused_with_why(web, reviewed, make_app):
    """A note edited and passed over after the page was shown: the accept is refused, the page says the proposal is stale and why."""
    web.sign_in()
    form = web.forms(reviewed.build)["accept"]
    with open(reviewed.root / "build-again.md", "a") as note:
        note.write("Also: `make lint`.\n")
    pass_over(make_app(), reviewed.root)
    answer = web.client.post(f"/proposals/{reviewed.build}/accept", data=form)
    assert answer.status_code == 409
    assert _notice(answer.text) == f"proposal #{reviewed.build} is stale (changed since proposed: build-again.md); nothing was accepted"
    view = get_proposal(web.app, reviewed.build)
    assert (view.state, view.decisions) == ("stale", [])


def test_accepting_with_a_key_the_proposal_does_not_have_is_refused(web, reviewed):
    """A form whose hashes key is not the proposal's is refused and decides nothing."""
    web.sign_in()
    form = {**web.forms(reviewed.build)["accept"], "key": web.forms(reviewed.hostile)["accept"]["key"]}
    answer = web.client.post(f"/proposals/{reviewed.build}/accept", data=form)
    assert (answer.status_code, _notice(answer.text)) == (409, f"proposal #{reviewed.build} is not the one this page showed; nothing was accepted")
    assert _undecided(web.app, reviewed.build)


@pytest.mark.parametrize("reason", [None, "", "   \n"])
def test_reject_needs_a_reason(web, reviewed, reason):
    """A rejection without a reason (absent, empty or blank) answers 400, says so and decides nothing."""
    web.sign_in()
    form = web.forms(reviewed.build)["reject"] | ({} if reason is None else {"reason": reason})
    answer = web.client.post(f"/proposals/{reviewed.build}/reject", data=form)
    assert (answer.status_code, _notice(answer.text)) == (400, "a rejection needs a reason; nothing was rejected")
    assert _undecided(web.app, reviewed.build)


def test_reject_with_a_reason_records_it(web, reviewed):
    """A rejection keeps its reason, by human:USER via web, and the page no longer offers to decide."""
    web.sign_in()
    form = {**web.forms(reviewed.hostile)["reject"], "reason": "both are needed"}
    answer = web.client.post(f"/proposals/{reviewed.hostile}/reject", data=form)
    assert _notice(answer.text) == f"#{reviewed.hostile} rejected; the same change will not be proposed again"
    view = get_proposal(web.app, reviewed.hostile)
    assert [(d["decision"], d["surface"], d["reason"]) for d in view.decisions] == [("reject", "web", "both are needed")]
    assert web.forms(reviewed.hostile) == {}


def test_the_proposal_page_escapes_note_text(web, reviewed):
    """The hostile note's markup is shown as text on the served page, never as a tag: the page's one script is the keys'."""
    web.sign_in()
    page = web.client.get(f"/proposals/{reviewed.hostile}").text
    assert page.count("<script") == 1 and f"<script>{SCRIPT}</script>" in page
    assert "<mark>Run &lt;script&gt;alert(&#34;body&#34;)&lt;/script&gt; before &amp; after.</mark>" in page


def test_pages_run_only_the_keys_script_and_cannot_be_framed(web, reviewed):
    """Every page says, in its headers, that it runs only the script whose hash it names, loads nothing and cannot be framed."""
    web.sign_in()
    digest = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    for path in ("/", f"/proposals/{reviewed.build}"):
        policy = web.client.get(path).headers["content-security-policy"]
        assert policy == f"default-src 'none'; script-src '{digest}'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"


def test_no_page_has_an_inline_event_handler_or_a_script_of_its_own(web, reviewed):
    """No tag of the index or a proposal page carries an on...= handler or a javascript: URL, and the only script is the keys'."""
    web.sign_in()
    for path in ("/", f"/proposals/{reviewed.build}", f"/proposals/{reviewed.hostile}"):
        page = web.client.get(path).text
        assert re.findall(r"<[^>]*\son\w+\s*=", page) == [] and "javascript:" not in page.lower()
        assert re.findall(r"<script[^>]*>", page) == ["<script>"]


def test_an_unknown_proposal_is_not_found(web):
    """A proposal id that does not exist answers 404 naming it."""
    web.sign_in()
    answer = web.client.get("/proposals/999")
    assert (answer.status_code, _notice(answer.text)) == (404, "no proposal #999")


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1:8080", "127.0.0.1.evil.example", "[::1]"])
def test_a_request_naming_another_host_is_refused_with_400(web, host):
    """DNS rebinding: a page of another name that resolves to this machine sends that name as
    Host. Such a request answers 400, also with the token (no cookie is set) or the cookie."""
    web.sign_in()
    answer = web.client.get("/", headers={"host": host})
    assert (answer.status_code, _notice(answer.text)) == (400, "this server answers to 127.0.0.1:80 only; open the URL dreamd serve printed")
    with_token = web.client.get(f"/?token={web.access.token}", headers={"host": host}, follow_redirects=False)
    assert (with_token.status_code, with_token.headers.get("set-cookie")) == (400, None)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:80", "localhost", "LOCALHOST:80"])
def test_the_served_address_and_localhost_are_answered(web, host):
    """The address served, with or without its port, and localhost for a loopback address, are this server."""
    web.sign_in()
    assert web.client.get("/", headers={"host": host}).status_code == 200


@pytest.mark.parametrize(("served", "header", "answered"), [
    (("127.0.0.1", 8123), "127.0.0.1:8123", True),
    (("127.0.0.1", 8123), "localhost:8123", True),
    (("127.0.0.1", 8123), "127.0.0.1", False),  # port 80 is not the one served
    (("127.0.0.1", 8123), "evil.example:8123", False),
    (("::1", 8123), "[::1]:8123", True),
    (("::1", 8123), "[0:0:0:0:0:0:0:1]:8123", True),
    (("::1", 8123), "::1:8123", False),
    (("192.168.1.5", 8123), "192.168.1.5:8123", True),
    (("192.168.1.5", 8123), "localhost:8123", False),
    (("0.0.0.0", 8123), "192.168.1.5:8123", True),  # every address: any address, never a name but this machine's
    (("0.0.0.0", 8123), "evil.example:8123", False),
    (("box.lan", 8123), "box.lan:8123", True),
    (("box.lan", 8123), "BOX.LAN.:8123", True),
    (("127.0.0.1", 8123), "", False),
    (("127.0.0.1", 8123), "127.0.0.1:8123:1", False),
    (("127.0.0.1", 8123), "127.0.0.1:x", False),
])  # fmt: skip
def test_which_host_headers_a_server_answers(served, header, answered):
    """The Host header names the address served (or localhost, on loopback) and its port."""
    from daemon.service.review.web_access import answers_to

    assert answers_to(header, *served) is answered


@pytest.mark.parametrize(("decision", "extra", "status", "said"), [
    ("accept", {f"f{i}": "x" for i in range(30)}, 400, "this form has more fields than dreamd's forms send; nothing was accepted"),
    ("reject", {"reason": "x" * (64 * 1024)}, 413, "this form is larger than dreamd's forms send (64 KiB); nothing was rejected"),
], ids=["too-many-fields", "too-large"])  # fmt: skip
def test_a_form_no_page_sends_is_refused_unread(web, reviewed, decision, extra, status, said):
    """A post with more fields than the pages' forms (400, not 500) or a body over 64 KiB (413) decides nothing."""
    web.sign_in()
    answer = web.client.post(f"/proposals/{reviewed.build}/{decision}", data=web.forms(reviewed.build)[decision] | extra)
    assert (answer.status_code, _notice(answer.text)) == (status, said)
    assert _undecided(web.app, reviewed.build)
