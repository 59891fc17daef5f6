"""``dreamd serve``: a small local web face to review pending proposals and decide them.

A Starlette app over the same service calls as the CLI and the same templates as the HTML
report. Every request must name the address served as its Host (else 400: DNS rebinding) and
carry the access token or its cookie (see web_access); every form post needs its own CSRF
token, and may hold at most ``FORM_FIELDS`` fields in ``FORM_BYTES`` (else 400 or 413, unread). A decision binds to what the page showed: the form carries a key
of the proposal's base and result hashes and its diff, and the server refuses, saying why on
the page, if the proposal is no longer that or no longer pending. Decisions are recorded as
``human:<user>`` through the surface ``web``.
"""

from __future__ import annotations

import json
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from daemon.core.errors import ConfigError, DreamdError, ProposalError
from daemon.core.hashing import hash_text
from daemon.core.proposals import ACCEPTED, KINDS, PENDING
from daemon.service.context import App
from daemon.service.review.pages import base_blobs, environment, proposal_page, render_index, render_proposal
from daemon.service.proposals import ProposalView, Selection, decide, get_proposal, list_proposals
from daemon.service.review.web_access import Access, answers_to

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
DONE = {"accepted": "accepted; dreamd apply writes it", "rejected": "rejected; the same change will not be proposed again"}
FORM_FIELDS = 20  # the pages' forms send four
FORM_BYTES = 64 * 1024  # and a reason a person typed


class _BadForm(Exception):
    """A post no page of this server sends: its status and what to say."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


def shown_key(view: ProposalView) -> str:
    """What an accept or reject form binds to: the proposal's base and result hashes and its diff."""
    return hash_text(json.dumps({"base": view.base, "result": view.result, "diff": view.diff}, sort_keys=True))


def decide_shown(app: App, proposal_id: int, decision: str, key: str, reason: str | None) -> ProposalView:
    """Decide the proposal only if it is still what the page showed and may still be decided."""
    view = get_proposal(app, proposal_id)
    verb = f"{decision}ed"
    if not key or key != shown_key(view):
        raise ProposalError(f"proposal #{proposal_id} is not the one this page showed; nothing was {verb}")
    allowed = (PENDING,) if decision == "accept" else (PENDING, ACCEPTED)
    if view.state not in allowed:
        why = f" ({view.state_reason})" if view.state_reason else ""
        raise ProposalError(f"proposal #{proposal_id} is {view.state}{why}; nothing was {verb}")
    return decide(app, proposal_id, decision, reason)


class _Pages:
    """The routes, over one App and one Access."""

    def __init__(self, app: App, access: Access) -> None:
        self.app = app
        self.access = access
        self.env = environment()

    def _html(self, text: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(text, status_code=status, headers=HEADERS)

    def message(self, heading: str, text: str, status: int) -> HTMLResponse:
        return self._html(self.env.get_template("message.html").render(heading=heading, text=text, index_href="/"), status)

    async def index(self, request: Request) -> Response:
        query = request.query_params
        filters: dict[str, Any] = {key: query.get(key, "").strip() for key in ("store", "kind", "source", "min_confidence")}
        filters.update(kinds=KINDS, error=None)
        views = await run_in_threadpool(list_proposals, self.app, None, [PENDING])
        filters["stores"] = sorted({v.store for v in views})
        try:
            selection = _selection(filters)
        except ValueError as exc:
            filters["error"] = str(exc)
            selection = Selection()
        shown = [v for v in views if (not filters["store"] or v.store == filters["store"]) and selection.matches(v, v.pass_id)]
        heading = f"{len(shown)} pending proposal{'s' if len(shown) != 1 else ''}" + (f" of {len(views)}" if len(shown) != len(views) else "")
        text = render_index(self.env, shown, href=lambda pid: f"/proposals/{pid}", index_href="/", heading=heading, filters=filters)
        return self._html(text, 400 if filters["error"] else 200)

    async def proposal(self, request: Request) -> Response:
        done = request.query_params.get("done")
        notice = {"text": f"#{request.path_params['pid']} {DONE[done]}", "refused": False} if done in DONE else None
        return await self._proposal(request.path_params["pid"], notice, 200)

    async def _proposal(self, proposal_id: int, notice: dict[str, Any] | None, status: int) -> Response:
        try:
            view = await run_in_threadpool(get_proposal, self.app, proposal_id)
        except ProposalError as exc:
            return self.message("Not found", str(exc), 404)
        page = proposal_page(view, await run_in_threadpool(base_blobs, self.app, [view]))
        return self._html(render_proposal(self.env, page, index_href="/", forms=self._forms(view), notice=notice), status)

    def _forms(self, view: ProposalView) -> dict[str, Any]:
        def form(decision: str) -> dict[str, str]:
            return {"action": f"/proposals/{view.id}/{decision}", "csrf": self.access.form_token(f"{decision}:{view.id}")}

        return {
            "key": shown_key(view),
            "accept": form("accept") if view.state == PENDING else None,
            "reject": form("reject") if view.state in (PENDING, ACCEPTED) else None,
        }

    async def accept(self, request: Request) -> Response:
        return await self._decide(request, "accept")

    async def reject(self, request: Request) -> Response:
        return await self._decide(request, "reject")

    async def _decide(self, request: Request, decision: str) -> Response:
        proposal_id = request.path_params["pid"]
        try:
            form = await _form(request)
        except _BadForm as exc:
            return self.message("Bad request", f"{exc}; nothing was {decision}ed", exc.status)
        why = self.access.refusal(form.get("csrf"), f"{decision}:{proposal_id}")
        if why is not None:
            return self.message("Forbidden", f"{why}; nothing was {decision}ed", 403)
        reason = form.get("reason", "").strip() or None
        if decision == "reject" and reason is None:
            return await self._proposal(proposal_id, {"text": "a rejection needs a reason; nothing was rejected", "refused": True}, 400)
        try:
            await run_in_threadpool(decide_shown, self.app, proposal_id, decision, form.get("key", ""), reason)
        except DreamdError as exc:
            return await self._proposal(proposal_id, {"text": str(exc), "refused": True}, 409)
        return RedirectResponse(f"/proposals/{proposal_id}?done={decision}ed", status_code=303, headers=HEADERS)


def _selection(filters: dict[str, Any]) -> Selection:
    """The filters of the index as a Selection; ValueError says which one is wrong."""
    if filters["kind"] and filters["kind"] not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    minimum = _confidence(filters["min_confidence"]) if filters["min_confidence"] else None
    return Selection(kind=filters["kind"] or None, source=filters["source"] or None, min_confidence=minimum)


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:  # NaN too
        raise ValueError("min confidence must be a number from 0 to 1")
    return value


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
