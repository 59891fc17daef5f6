"""A real store with two pending proposals made by a real pass, for the report and the web face.

One proposal merges two copies of a build note; the other merges two copies of a note
whose name, title and body hold ``<script>`` markup, so every page that shows it has to
escape it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

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
