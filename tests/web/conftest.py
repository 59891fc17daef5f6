"""A real store with two pending proposals made by a real pass, for the report and the web face,
and the web face over it through Starlette's TestClient.

One proposal merges two copies of a build note; the other merges two copies of a note
whose name, title and body hold ``<script>`` markup, so every page that shows it has to
escape it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from typing import Any

import pytest

from daemon.config import Config
from daemon.service.context import App

from .helpers import STORE, pass_over


@dataclass(frozen=True)
class Reviewed:
    root: Path
    build: int  # merges build-again.md into build.md
    hostile: int  # merges <script>x.md into hostile-copy.md


@pytest.fixture
def reviewed(make_store: Callable[..., Path], make_app: Callable[..., object]) -> Reviewed:
    """The store, passed over once: exactly two pending proposals."""
    from daemon.service.proposals import list_proposals

    root = make_store(STORE)
    app = make_app()
    pass_over(app, root)
    views = list_proposals(app)
    assert [(v.state, v.kind) for v in views] == [("pending", "merge"), ("pending", "merge")]
    by_retired = {next(p for p, h in v.result.items() if h is None): v.id for v in views}
    return Reviewed(root, build=by_retired["build-again.md"], hostile=by_retired["<script>x.md"])


@dataclass
class Web:
    client: Any  # Starlette's TestClient
    access: Any  # web_access.Access
    app: App

    def sign_in(self) -> None:
        assert self.client.get(f"/?token={self.access.token}").status_code == 200

    def forms(self, proposal_id: int) -> dict[str, dict[str, str]]:
        """The page's forms by what they do: their csrf and key fields."""
        page = self.client.get(f"/proposals/{proposal_id}").text
        found = re.findall(r'action="/proposals/\d+/(\w+)(?:\?[^"]*)?">\s*<input type="hidden" name="csrf" value="([^"]+)">\s*<input type="hidden" name="key" value="([^"]+)">', page)
        return {action: {"csrf": csrf, "key": key} for action, csrf, key in found}


@pytest.fixture
def web(reviewed, db_url, clock) -> Iterator[Web]:  # noqa: ANN001
    """The pages over the reviewed store, through Starlette's TestClient, not yet signed in."""
    from starlette.testclient import TestClient  # the serve extra: only the web tests need it

    from daemon.service.review.web import build
    from daemon.service.review.web_access import Access

    app = App(config=Config(), db_url=db_url, clock=clock, surface="web")
    access = Access.new(clock)
    yield Web(TestClient(build(app, access, ("127.0.0.1", 80)), base_url="http://127.0.0.1"), access, app)
    app.close()
