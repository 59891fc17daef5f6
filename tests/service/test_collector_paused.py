"""A pass reads, stores and plans with the cyclic garbage collector off (core.heap), asks the
model with it on, and leaves it as it found it."""

from __future__ import annotations

import gc

import pytest

from daemon.config import parse_config
from daemon.llm.fakes import FakeModel
from daemon.service.passes import run
from daemon.service.passes.run import run_pass

NOTES = {"build.md": "# Build\nRun make test before pushing.\n", "build-copy.md": "# Build\nRun make test before pushing.\n"}


class _Watching(FakeModel):
    """A model that notes whether the collector was on when it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.collecting: list[bool] = []

    def complete(self, request, settings):  # noqa: ANN001, ANN201
        self.collecting.append(gc.isenabled())
        return super().complete(request, settings)


@pytest.fixture
def watched(monkeypatch):
    """Whether the collector was on at each stage of a pass: storing the snapshot, the findings."""
    seen: dict[str, bool] = {}

    def noting(name, original):  # noqa: ANN001, ANN202
        def call(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            seen[name] = gc.isenabled()
            return original(*args, **kwargs)

        return call

    monkeypatch.setattr(run, "_record_snapshot", noting("snapshot", run._record_snapshot))
    monkeypatch.setattr(run, "findings", noting("findings", run.findings))
    return seen


@pytest.mark.parametrize("collecting", [True, False])
def test_the_collector_is_off_while_a_pass_reads_and_plans_and_as_it_was_after(make_store, make_app, watched, collecting):
    root = make_store(NOTES)
    app = make_app(parse_config({"stores": [{"name": "s", "path": str(root), "preset": "generic"}]}))
    (gc.enable if collecting else gc.disable)()
    try:
        report = run_pass(app, app.config.stores["s"])
        assert gc.isenabled() is collecting
    finally:
        gc.enable()
    assert report.stats["pending"] == 1  # the exact duplicate: the planning really ran
    assert watched == {"snapshot": False, "findings": False}


def test_the_model_is_asked_with_the_collector_on(make_store, make_app, watched):
    """HTTP clients make cycles, call after call: the model's part of a pass collects them."""
    root = make_store({**NOTES, "colours.md": "# Palette\nThe brand colour is teal.\n"})
    app = make_app(parse_config({"llm": {"model": "openai/test-model"}, "stores": [{"name": "s", "path": str(root), "preset": "generic"}]}))
    model = _Watching().enqueue('{"v": 1, "proposals": []}')
    app.model_client = lambda settings: model
    run_pass(app, app.config.stores["s"])
    assert model.collecting == [True] and watched == {"snapshot": False, "findings": False}
    assert gc.isenabled()
