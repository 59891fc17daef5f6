"""``dreamd serve``: a small local web face to review pending proposals, decide, apply and undo.

A Starlette app over the same service calls as the CLI and the same templates as the HTML
report. Every request must name the address served as its Host (else 400: DNS rebinding) and
carry the access token or its cookie (see web_access); every form post needs its own CSRF
token, and may hold at most ``FORM_FIELDS`` fields in ``FORM_BYTES`` (else 400 or 413,
unread). A decision, an apply and "accept every proposal shown" bind to what the page showed
(see decisions.py), and the server refuses, saying why on the page, when that changed. After
a decision the next pending proposal the index's filters show comes up; the last decision
made here can be undone. Decisions are recorded as ``human:<user>`` through the surface ``web``.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from daemon.core.errors import ConfigError, DreamdError, ProposalError
from daemon.core.proposals import ACCEPTED, APPLIED, KINDS, PENDING
from daemon.service.context import App
from daemon.service.proposals import ProposalView, Selection, get_proposal, list_proposals
from daemon.service.review.decisions import Decided, accept_shown, apply_shown, batch_key, decide_shown, named, shown_key, take_back
from daemon.service.review.pages import SCRIPT, SCRIPT_HASH, Nav, environment, proposal_pages, render_index, render_proposal
from daemon.service.review.web_access import Access, answers_to

HEADERS = {
    "Content-Security-Policy": f"default-src 'none'; script-src '{SCRIPT_HASH}'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
FORM_FIELDS = 20  # the pages' forms send four
UNDO_DEPTH = 100  # decisions the undo can walk back through
FORM_BYTES = 64 * 1024  # and a reason a person typed


class _BadForm(Exception):
    """A post no page of this server sends: its status and what to say."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


@dataclass(frozen=True)
class Filters:
    """The index's filters, as its query gives them; the pages carry them on, so previous,
    next and "accept every proposal shown" mean the proposals the index showed."""

    store: str = ""
    kind: str = ""
    source: str = ""
    min_confidence: str = ""

    @classmethod
    def of(cls, query: Mapping[str, str]) -> Filters:
        return cls(*(query.get(name, "").strip() for name in FILTERS))

    def selection(self) -> Selection:
        """The filters as a Selection; ValueError says which one is wrong."""
        if self.kind and self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}")
        minimum = _confidence(self.min_confidence) if self.min_confidence else None
        return Selection(store=self.store or None, kind=self.kind or None, source=self.source or None, min_confidence=minimum)

    def keep(self, views: list[ProposalView]) -> list[ProposalView]:
        """The views the filters match, in the index's order (by store, then id); all of them
        when a filter is wrong (the index says which)."""
        try:
            selection = self.selection()
        except ValueError:
            selection = Selection()
        kept = [v for v in views if (not selection.store or v.store == selection.store) and selection.matches(v, v.pass_id)]
        return sorted(kept, key=lambda v: (v.store, v.id))

    def query(self, **more: object) -> str:
        """``?name=value&…`` of the filters set and of ``more``; "" when none is."""
        pairs = [(name, getattr(self, name)) for name in FILTERS if getattr(self, name)]
        pairs += [(name, str(value)) for name, value in more.items() if value is not None]
        return "?" + urlencode(pairs) if pairs else ""


FILTERS = ("store", "kind", "source", "min_confidence")


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:  # NaN too
        raise ValueError("min confidence must be a number from 0 to 1")
    return value


def _ids(text: str | None) -> tuple[int, ...]:
    """Proposal ids from a notice's ``of`` (``3,4,5``); none when it is not that."""
    parts = (text or "").split(",")
    return tuple(int(part) for part in parts) if all(part.isdigit() and len(part) < 12 for part in parts) else ()


def _notice(query: Mapping[str, str]) -> dict[str, Any] | None:
    """What the page says about what was just done (after a redirect), from its query."""
    ids = _ids(query.get("of"))
    it = "it" if len(ids) == 1 else "them"
    done = {
        "accepted": f"accepted; dreamd apply writes {it}, or the Apply button on the index",
        "rejected": f"rejected; the same change{'s' if len(ids) > 1 else ''} will not be proposed again",
        "applied": f"applied; dreamd revert {ids[0] if ids else 'ID'} undoes it",
        "unaccepted": "pending again: the accept was taken back",
        "unrejected": "pending again: the rejection was taken back",
    }.get(query.get("done", ""))
    return {"text": f"{named(ids)} {done}", "refused": False} if done and ids else None


class _Pages:
    """The routes, over one App and one Access; ``decided``: the pages' decisions, newest last (the undo's stack)."""

    def __init__(self, app: App, access: Access) -> None:
        self.app = app
        self.access = access
        self.env = environment()
        self.decided: list[Decided] = []

    def _remember(self, decided: Decided) -> None:
        self.decided = [*self.decided[-(UNDO_DEPTH - 1) :], decided]

    def _html(self, text: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(text, status_code=status, headers=HEADERS)

    def _redirect(self, url: str) -> RedirectResponse:
        return RedirectResponse(url, status_code=303, headers=HEADERS)

    def message(self, heading: str, text: str, status: int) -> HTMLResponse:
        return self._html(self.env.get_template("message.html").render(heading=heading, text=text, index_href="/", script=None, undo=None), status)

    def _undo(self, filters: Filters) -> dict[str, str] | None:
        if not self.decided:
            return None
        last = self.decided[-1]
        return {"action": f"/undo{filters.query()}", "csrf": self.access.form_token("undo"), "what": last.what, "label": last.label}

    # the index ----------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        return await self._index(Filters.of(request.query_params), _notice(request.query_params), 200)

    async def _index(self, filters: Filters, notice: dict[str, Any] | None, status: int) -> Response:
        views = await run_in_threadpool(list_proposals, self.app, None, [PENDING, ACCEPTED])
        pending = [v for v in views if v.state == PENDING]
        error = None
        try:
            filters.selection()
        except ValueError as exc:
            error, status = str(exc), 400
        shown = filters.keep(pending)
        href = lambda pid: f"/proposals/{pid}{filters.query()}"  # noqa: E731
        fields: dict[str, Any] = {**{name: getattr(filters, name) for name in FILTERS}, "kinds": KINDS, "error": error, "stores": sorted({v.store for v in views})}
        heading = f"{len(shown)} pending proposal{'s' if len(shown) != 1 else ''}" + (f" of {len(pending)}" if len(shown) != len(pending) else "")
        accept_shown = {"action": f"/accept-shown{filters.query()}", "csrf": self.access.form_token("accept-shown"), "ids": ",".join(str(v.id) for v in shown), "key": batch_key(shown)}
        accepted = [{"view": v, "action": f"/proposals/{v.id}/apply{filters.query()}", "csrf": self.access.form_token(f"apply:{v.id}"), "key": shown_key(v)} for v in filters.keep([v for v in views if v.state == ACCEPTED])]
        text = render_index(
            self.env, shown, href=href, index_href="/", heading=heading, filters=fields, notice=notice, accepted=accepted,
            forms={"accept_shown": accept_shown if shown and error is None else None}, first=href(shown[0].id) if shown else None,
            undo=self._undo(filters), script=SCRIPT,
        )  # fmt: skip
        return self._html(text, status)

    # a proposal ---------------------------------------------------------------------

    async def proposal(self, request: Request) -> Response:
        return await self._proposal(request.path_params["pid"], Filters.of(request.query_params), _notice(request.query_params), 200)

    async def _proposal(self, proposal_id: int, filters: Filters, notice: dict[str, Any] | None, status: int) -> Response:
        try:
            view = await run_in_threadpool(get_proposal, self.app, proposal_id)
        except ProposalError as exc:
            return self.message("Not found", str(exc), 404)
        shown = filters.keep(await run_in_threadpool(list_proposals, self.app, None, [PENDING]))
        (page,) = await run_in_threadpool(proposal_pages, self.app, [view])
        text = render_proposal(self.env, page, index_href=f"/{filters.query()}", nav=_nav(view, shown, filters), forms=self._forms(view, filters), notice=notice, undo=self._undo(filters), script=SCRIPT)
        return self._html(text, status)

    def _forms(self, view: ProposalView, filters: Filters) -> dict[str, Any]:
        def form(action: str) -> dict[str, str]:
            return {"action": f"/proposals/{view.id}/{action}{filters.query()}", "csrf": self.access.form_token(f"{action}:{view.id}")}

        return {
            "key": shown_key(view),
            "accept": form("accept") if view.state == PENDING else None,
            "reject": form("reject") if view.state in (PENDING, ACCEPTED) else None,
            "apply": form("apply") if view.state == ACCEPTED else None,
        }

    async def _checked(self, request: Request, action: str, verb: str) -> dict[str, str] | Response:
        """The post's fields, or the page that refuses it: a form no page sends, or one
        without this server's CSRF token for ``action``."""
        try:
            form = await _form(request)
        except _BadForm as exc:
            return self.message("Bad request", f"{exc}; nothing was {verb}", exc.status)
        why = self.access.refusal(form.get("csrf"), action)
        if why is not None:
            return self.message("Forbidden", f"{why}; nothing was {verb}", 403)
        return form

    # deciding -----------------------------------------------------------------------

    async def accept(self, request: Request) -> Response:
        return await self._decide(request, "accept")

    async def reject(self, request: Request) -> Response:
        return await self._decide(request, "reject")

    async def _decide(self, request: Request, decision: str) -> Response:
        """Decide, then go on to the next pending proposal the filters show (the index when none is left)."""
        proposal_id = request.path_params["pid"]
        filters = Filters.of(request.query_params)
        form = await self._checked(request, f"{decision}:{proposal_id}", f"{decision}ed")
        if isinstance(form, Response):
            return form
        reason = form.get("reason", "").strip() or None
        if decision == "reject" and reason is None:
            return await self._proposal(proposal_id, filters, {"text": "a rejection needs a reason; nothing was rejected", "refused": True}, 400)
        try:
            view = await run_in_threadpool(decide_shown, self.app, proposal_id, decision, form.get("key", ""), reason)
        except DreamdError as exc:
            return await self._proposal(proposal_id, filters, {"text": str(exc), "refused": True}, 409)
        self._remember(Decided((proposal_id,), decision))
        shown = filters.keep(await run_in_threadpool(list_proposals, self.app, None, [PENDING]))
        after = [v for v in shown if (v.store, v.id) > (view.store, view.id)] or shown  # on from here, then from the top
        done = filters.query(done=f"{decision}ed", of=proposal_id)
        return self._redirect(f"/proposals/{after[0].id}{done}" if after else f"/{done}")

    async def accept_shown(self, request: Request) -> Response:
        """Accept every pending proposal the index showed with these filters, all or none."""
        filters = Filters.of(request.query_params)
        form = await self._checked(request, "accept-shown", "accepted")
        if isinstance(form, Response):
            return form
        shown = filters.keep(await run_in_threadpool(list_proposals, self.app, None, [PENDING]))
        try:
            filters.selection()
            ids = await run_in_threadpool(accept_shown, self.app, list(_ids(form.get("ids"))), form.get("key", ""), shown)
        except (DreamdError, ValueError) as exc:
            return await self._index(filters, {"text": _said(exc), "refused": True}, 409)
        self._remember(Decided(tuple(ids), "accept"))
        return self._redirect(f"/{filters.query(done='accepted', of=','.join(map(str, ids)))}")

    async def undo(self, request: Request) -> Response:
        """Take back the pages' last decision (the one the page named), and show its proposal, pending again."""
        filters = Filters.of(request.query_params)
        form = await self._checked(request, "undo", "taken back")
        if isinstance(form, Response):
            return form
        if not self.decided or form.get("what") != self.decided[-1].what:
            last = f"the last decision here is now: {self.decided[-1].label}" if self.decided else "no decision made here is left to take back"
            return await self._index(filters, {"text": f"this undo is out of date ({last}); nothing was taken back", "refused": True}, 409)
        last = self.decided.pop()
        try:
            await run_in_threadpool(take_back, self.app, last)
        except DreamdError as exc:  # it moved on (applied, stale): it is no longer this page's to take back
            return await self._index(filters, {"text": _said(exc), "refused": True}, 409)
        return self._redirect(f"/proposals/{last.ids[0]}{filters.query(done=f'un{last.decision}ed', of=','.join(map(str, last.ids)))}")

    # applying -----------------------------------------------------------------------

    async def apply(self, request: Request) -> Response:
        """Apply one accepted proposal through the service's apply, if it is what the page showed."""
        proposal_id = request.path_params["pid"]
        filters = Filters.of(request.query_params)
        form = await self._checked(request, f"apply:{proposal_id}", "written")
        if isinstance(form, Response):
            return form
        try:
            result = await run_in_threadpool(apply_shown, self.app, proposal_id, form.get("key", ""))
        except DreamdError as exc:
            return await self._index(filters, {"text": _said(exc), "refused": True}, 409)
        if result.state != APPLIED:
            return await self._index(filters, {"text": f"#{proposal_id} is {result.state}: {result.detail}; nothing was written", "refused": True}, 409)
        return self._redirect(f"/{filters.query(done='applied', of=proposal_id)}")


def _said(exc: Exception) -> str:
    """An error as one line, with its advice when it has one."""
    hint = getattr(exc, "hint", None)
    return f"{exc} ({hint})" if hint else str(exc)


def _nav(view: ProposalView, shown: list[ProposalView], filters: Filters) -> Nav:
    """Previous and next among the pending proposals the filters show, in the index's order."""
    here = (view.store, view.id)
    before = [v for v in shown if (v.store, v.id) < here]
    after = [v for v in shown if (v.store, v.id) > here]
    href = lambda v: f"/proposals/{v.id}{filters.query()}"  # noqa: E731
    count = f"{len(shown)} pending" + (" shown" if filters.query() else "")
    position = f"{len(before) + 1} of {count}" if any(v.id == view.id for v in shown) else count
    return Nav(href(before[-1]) if before else None, href(after[0]) if after else None, position)


async def _form(request: Request) -> dict[str, str]:
    """A urlencoded form's fields (the first value of each), as the pages' forms post them;
    _BadForm for a body larger or with more fields than they send (read no further)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > FORM_BYTES:
            raise _BadForm(413, f"this form is larger than dreamd's forms send ({FORM_BYTES // 1024} KiB)")
    try:
        fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=FORM_FIELDS)
    except ValueError:  # "Max number of fields exceeded"
        raise _BadForm(400, "this form has more fields than dreamd's forms send") from None
    return {name: values[0] for name, values in fields.items()}


class _RequireHost(BaseHTTPMiddleware):
    """400 unless the Host header names the address served (see web_access.answers_to)."""

    def __init__(self, app: Any, address: tuple[str, int], refuse: Callable[[], Response]) -> None:
        super().__init__(app)
        self.address = address
        self.refuse = refuse

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if not answers_to(request.headers.get("host", ""), *self.address):
            return self.refuse()
        return await call_next(request)


class _RequireToken(BaseHTTPMiddleware):
    """403 unless the request carries the access token (then it becomes a cookie) or its cookie."""

    def __init__(self, app: Any, access: Access, refuse: Callable[[], Response]) -> None:
        super().__init__(app)
        self.access = access
        self.refuse = refuse

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if self.access.admits(request.query_params.get("token")):
            rest = request.url.remove_query_params("token")
            response: Response = RedirectResponse(rest.path + (f"?{rest.query}" if rest.query else ""), status_code=303, headers=HEADERS)
            response.set_cookie(self.access.cookie_name, self.access.token, httponly=True, samesite="strict", path="/")
            return response
        if not self.access.admits(request.cookies.get(self.access.cookie_name)):
            return self.refuse()
        return await call_next(request)


def build(app: App, access: Access, address: tuple[str, int]) -> Starlette:
    """The ASGI app served on ``address`` (host, port): the pages, behind the Host check and the access token."""
    pages = _Pages(app, access)
    refuse = lambda: pages.message("Forbidden", "open the URL dreamd serve printed (it holds the access token)", 403)  # noqa: E731
    served = f"[{address[0]}]:{address[1]}" if ":" in address[0] else f"{address[0]}:{address[1]}"
    elsewhere = lambda: pages.message("Bad request", f"this server answers to {served} only; open the URL dreamd serve printed", 400)  # noqa: E731
    routes = [
        Route("/", pages.index, methods=["GET"]),
        Route("/proposals/{pid:int}", pages.proposal, methods=["GET"]),
        Route("/proposals/{pid:int}/accept", pages.accept, methods=["POST"]),
        Route("/proposals/{pid:int}/reject", pages.reject, methods=["POST"]),
        Route("/proposals/{pid:int}/apply", pages.apply, methods=["POST"]),
        Route("/accept-shown", pages.accept_shown, methods=["POST"]),
        Route("/undo", pages.undo, methods=["POST"]),
    ]
    middleware = [Middleware(_RequireHost, address=address, refuse=elsewhere), Middleware(_RequireToken, access=access, refuse=refuse)]
    return Starlette(routes=routes, middleware=middleware)


def url_of(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def serve(app: App, host: str, port: int, announce: Callable[[str], None]) -> None:
    """Listen on ``host:port`` (0: any free port), announce the URL to open, serve until SIGINT or SIGTERM."""
    access = Access.new(app.clock)
    app.engine()  # the database opens (and migrates) now, not under the first request
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", hint="choose another --host or --port") from None
    listener.listen(64)  # a browser opening the URL at once waits in the backlog, not refused
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build(app, access, (host, port)), log_level="warning", access_log=False, lifespan="off"))
    with _stopped_by_signals(server):
        announce(url_of(host, port, access.token))
        server.run(sockets=[listener])


@contextmanager
def _stopped_by_signals(server: uvicorn.Server) -> Iterator[None]:
    """SIGINT or SIGTERM stops the server, and ``dreamd serve`` exits 0: also when one comes
    before uvicorn takes the signals over, and after, when uvicorn, stopped, raises it
    again for the handler it found (this one)."""

    def stop(_signal: int, _frame: object) -> None:
        server.should_exit = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
