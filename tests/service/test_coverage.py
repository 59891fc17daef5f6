"""A pass proves what the model was shown: every due note in a call, related notes together, and
a store too big for one pass covered over passes, after which an unchanged store costs nothing."""

from __future__ import annotations

import json
import random

from sqlalchemy import func, select

from daemon.config import parse_config
from daemon.db import schema as t
from daemon.llm.fakes import FakeModel
from daemon.llm.limits import ModelLimits
from daemon.service.passes.run import run_pass


_SYLLABLES = [a + b for a in "bdfgklmnprstvz" for b in "aeiou"]


def prose(rng: random.Random, words: int, per_line: int = 12) -> str:
    """Pseudo-words, wrapped into lines: notes that share no topic unless a test says so."""
    vocab = ["".join(rng.choice(_SYLLABLES) for _ in range(3)) for _ in range(words)]
    return "\n".join(" ".join(vocab[i : i + per_line]) for i in range(0, words, per_line)) + "\n"

EMPTY = json.dumps({"v": 1, "proposals": []})
LARGE = ModelLimits(128_000, 16_384, "declared by the test: a 128k model")


def queued(n: int, known: ModelLimits | None = None) -> FakeModel:
    model = FakeModel(known)
    for _ in range(n):
        model.enqueue(EMPTY)
    return model


def setup(make_store, make_app, files: dict[str, str], model: FakeModel, **llm: object):  # noqa: ANN001, ANN201
    root = make_store(files)
    config = parse_config({"llm": {"model": "openai/test-model", **llm}, "stores": [{"name": "s", "path": str(root), "preset": "generic"}]})
    app = make_app(config)
    app.model_client = lambda settings: model
    return root, app, config.stores["s"]


def nine_notes() -> dict[str, str]:
    """About 27 KB: one 12 KB note, two notes a person would merge (a tech stack and a style guide,
    few shared words), six unrelated notes."""
    rng = random.Random(9)
    files = {"architecture.md": "# Architecture\n" + prose(rng, 1900)}
    files["tech_stack.md"] = "# Tech stack\nThe backend is Python 3.12 with FastAPI; the web client uses Vite.\n" + prose(rng, 200)
    files["code_style.md"] = "# Code style\nFormat Python with ruff and TypeScript with prettier.\n" + prose(rng, 200)
    for i in range(6):
        files[f"topic_{i}.md"] = f"# Topic {i}\n" + prose(rng, 260)
    return files


def sent_keys(model: FakeModel) -> list[set[str]]:
    return [set(r.key.split("|")) for r in model.requests]


def test_a_store_that_fits_the_models_window_goes_whole_in_one_call(make_store, make_app):
    """A 27 KB store, just over the old 6,000-token call, is one call for a 128k model: every note shown, complete."""
    files = nine_notes()
    assert 26_000 < sum(len(v) for v in files.values()) < 30_000
    model = queued(1, LARGE)
    _, app, store = setup(make_store, make_app, files, model)
    report = run_pass(app, store)
    assert sent_keys(model) == [set(files)]
    coverage = report.llm["coverage"]
    assert (coverage["due"], coverage["shown"], coverage["left"]) == (9, 9, 0) and report.llm["complete"] is True
    assert coverage["budget"]["window"] == 128_000 and coverage["budget"]["reply"] == 16_384
    assert model.requests[0].max_output_tokens == 16_384


def test_under_a_small_window_every_note_is_shown_and_no_note_rides_in_every_call(make_store, make_app):
    """The same store for an unknown model (the 8,192-token fallback): several calls, each note in
    one of them (the 12 KB one too), none in all of them, and complete only because every note was shown."""
    files = nine_notes()
    model = queued(12)
    _, app, store = setup(make_store, make_app, files, model)
    report = run_pass(app, store)
    keys = sent_keys(model)
    assert len(keys) >= 2 and set().union(*keys) == set(files)
    assert not any(all(path in key for key in keys) for path in files)
    assert sum("architecture.md" in key for key in keys) == 1
    assert report.llm["coverage"]["shown"] == 9 and report.llm["complete"] is True
    assert report.llm["coverage"]["budget"]["source"] == "fallback for a model whose limits are unknown"


def many_notes(n: int, seed: int = 3) -> dict[str, str]:
    rng = random.Random(seed)
    return {f"notes/n{i:03d}.md": f"# Note {i}\n" + prose(rng, 300) for i in range(n)}


def test_a_store_too_big_for_one_pass_is_covered_over_the_passes_it_announces_then_rests(make_store, make_app, clock):
    """A pass's budget for two calls, a store of about five: the first pass says how many more
    passes it needs, they show every note once, and the unchanged store then makes no call."""
    files = many_notes(40)
    model = queued(40)
    # the fallback window: calls of about 5,300 tokens of notes; two of them a pass
    _, app, store = setup(make_store, make_app, files, model, tokens_per_pass=2 * 8192)
    first = run_pass(app, store)
    coverage = first.llm["coverage"]
    announced = coverage["passes_left"]
    assert first.llm["complete"] is False and coverage["left"] > 0 and announced >= 1
    assert "the rest at the next pass" in first.summary("pass #1")
    passes = 1
    while True:
        clock.advance(hours=1)
        report = run_pass(app, store)
        if report.status == "skipped":
            break
        passes += 1
        assert passes <= 25
    assert passes - 1 <= announced + 1  # the groups the last calls leave open may take one more
    shown = [p for key in sent_keys(model) for p in key]
    assert set(shown) == set(files)
    calls = len(model.requests)
    clock.advance(hours=1)
    assert run_pass(app, store).status == "skipped" and len(model.requests) == calls


def test_related_notes_cut_apart_are_shown_together_by_a_later_pass(make_store, make_app, clock):
    """a~b and c~d are near copies, b and c share a tag; calls hold two notes and a pass makes two:
    b with c is left open by the first pass, sent by the second, and the third rests."""
    rng = random.Random(5)
    text = {k: prose(rng, 320) for k in "ac"}
    files = {
        "a.md": text["a"], "b.md": "---\ntags: [deploy]\n---\n" + text["a"] + "one line more\n",
        "c.md": "---\ntags: [deploy]\n---\n" + text["c"], "d.md": text["c"] + "another line\n",
    }  # fmt: skip
    model = queued(6)
    from daemon.llm.base import ModelSettings
    from daemon.planners.llm.planner import LLMPlanner

    fixed = LLMPlanner(FakeModel(), ModelSettings(model="openai/test-model", max_output_tokens=200), lambda s: len(s) // 4).fixed_tokens()
    per_call = fixed + 2 * (len(files["b.md"]) // 4 + 16) + 80
    _, app, store = setup(make_store, make_app, files, model, max_output_tokens=200, tokens_per_call=per_call, tokens_per_pass=2 * (per_call + 200) + 100)
    first = run_pass(app, store)
    assert sorted(map(sorted, sent_keys(model))) == [["a.md", "b.md"], ["c.md", "d.md"]]
    assert first.llm["complete"] is True and first.llm["coverage"]["groups_open"] == 1
    clock.advance(hours=1)
    second = run_pass(app, store)
    assert second.status == "completed" and sent_keys(model)[2] == {"b.md", "c.md"}
    assert second.llm["coverage"]["groups_open"] == 0
    clock.advance(hours=1)
    assert run_pass(app, store).status == "skipped" and len(model.requests) == 3


def test_a_changed_note_is_due_again_and_sent_with_its_neighbours(make_store, make_app, clock):
    files = nine_notes()
    model = queued(3, LARGE)
    root, app, store = setup(make_store, make_app, files, model)
    run_pass(app, store)
    (root / "topic_3.md").write_text(files["topic_3.md"] + "A new line.\n")
    clock.advance(hours=1)
    report = run_pass(app, store)
    assert report.llm["coverage"]["due"] == 1 and len(model.requests) == 2  # the store still fits: sent whole


def test_a_dry_run_shows_the_model_everything_due_and_records_nothing(make_store, make_app):
    files = nine_notes()
    model = queued(2, LARGE)
    _, app, store = setup(make_store, make_app, files, model)
    dry = run_pass(app, store, dry_run=True)
    assert dry.llm["coverage"]["shown"] == 9
    with app.engine().connect() as conn:
        assert conn.execute(select(func.count()).select_from(t.model_ledger)).scalar() == 0
    report = run_pass(app, store)
    assert report.llm["coverage"]["due"] == 9  # the dry run's call showed nothing the ledger keeps


def test_the_ledger_keeps_a_row_per_note_shown_with_its_hash(make_store, make_app):
    files = nine_notes()
    _, app, store = setup(make_store, make_app, files, queued(1, LARGE))
    run_pass(app, store)
    with app.engine().connect() as conn:
        rows = conn.execute(select(t.model_ledger.c.key, t.model_ledger.c.kind)).all()
    assert sorted(rows) == sorted((path, "note") for path in files)


def test_status_and_history_show_what_the_model_is_still_to_be_shown(make_store, make_app, capsys):
    """After a pass its budget stopped: status says how many notes are shown and left, history the same per pass."""
    from daemon.cli.history import _history_text
    from daemon.cli.run import _status_text
    from daemon.service.review.audit import history
    from daemon.service.status import status

    files = many_notes(40)
    _, app, store = setup(make_store, make_app, files, queued(40), tokens_per_pass=2 * 8192)
    report = run_pass(app, store)
    coverage = report.llm["coverage"]
    (row,) = status(app)["stores"]
    assert row["last_pass"]["coverage"]["left"] == coverage["left"] > 0
    text = _status_text(row)
    assert f"model: {coverage['shown']} of 40 due notes shown" in text and "the rest at the next passes" in text
    _history_text(history(app, store))
    assert f"  coverage: {coverage['shown']} of 40 due notes shown" in capsys.readouterr().out
