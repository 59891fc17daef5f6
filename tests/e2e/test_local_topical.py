"""End to end with a real model on a small topical store: what people consolidate by hand.

Two notes a person folds into one development guide (few shared words), a checkpoint
series a newer status note makes obsolete, and an unrelated note. The store fits one
call, so the model reads all of it at once. The 1.5B model is no oracle of judgement: this
asserts the route (one whole-store call), structure and safety, and prints what it proposed.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from daemon.config import parse_config
from daemon.db import schema as t
from daemon.service.passes.run import run_pass

pytestmark = pytest.mark.slow

TOPICAL = {
    "tech_stack.md": "# Tech stack\nThe backend is Python 3.12 with FastAPI and SQLAlchemy.\nThe frontend is React with Vite.\n",
    "code_style_conventions.md": "# Code style conventions\nPython code is formatted with ruff, lines up to 100 characters.\nReact components are function components with hooks.\n",
    "checkpoint_week7_complete.md": "---\nupdated_at: 2026-04-10\n---\n# Checkpoint: week 7 complete\nThe importer is done. 80 tests pass.\n",
    "checkpoint_week8_complete.md": "---\nupdated_at: 2026-04-17\n---\n# Checkpoint: week 8 complete\nThe exporter is done. 97 tests pass.\n",
    "project_status.md": "---\nupdated_at: 2026-05-28\n---\n# Project status\nImporter and exporter are done and released. 131 tests pass.\n",
    "office_plants.md": "# Office plants\nThe fern by the window is watered on Mondays.\n",
}


def test_a_small_topical_store_goes_to_a_real_model_whole_and_nothing_is_written(local_model, make_store, make_app, read_tree, monkeypatch):
    """One whole-store call through litellm to llama.cpp; every model proposal is checked and recorded; the store is untouched."""
    monkeypatch.setenv("DREAMD_E2E_KEY", "unused-by-a-local-server")
    root = make_store(TOPICAL)
    llm = {"model": "openai/local-qwen", "api_base": local_model, "api_key_env": "DREAMD_E2E_KEY", "timeout_s": 600.0,
           "retries": 0, "max_output_tokens": 900, "tokens_per_call": 4000, "tokens_per_pass": 20000}  # fmt: skip
    config = parse_config({"llm": llm, "stores": [{"name": "e2e", "path": str(root), "preset": "generic"}]})
    app = make_app(config)
    before = read_tree(root)

    report = run_pass(app, config.stores["e2e"])

    assert report.status == "completed", report
    assert report.llm["whole_store"] is True and report.llm["calls"] == 1, report.llm
    with app.engine().connect() as conn:
        (call,) = conn.execute(select(t.model_calls)).all()
    assert sorted(call.notes["paths"]) == sorted(TOPICAL)
    model = [o for o in report.outcomes if o.planned.draft.source == "model:openai/local-qwen"]
    for o in model:  # shown with -s: what the model proposed and what became of it
        d = o.planned.draft
        print(f"\n{o.state}: {d.kind} {d.notes} confidence {d.confidence} lossy {d.lossy} derived {[e.path for e in d.evidence if e.derived]}: {o.note or ''}\n  {d.rationale}")
    print(f"\ncall: {call.status} {call.error or ''} {call.prompt_tokens} prompt + {call.completion_tokens} completion tokens, {call.latency_ms} ms")
    assert all(o.state in ("pending", "refused", "duplicate") for o in model)
    assert all("office_plants.md" not in o.planned.draft.retire for o in model if o.state == "pending")
    assert read_tree(root) == before
