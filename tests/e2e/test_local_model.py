"""End to end with a real model: litellm -> HTTP -> llama.cpp -> schema-valid reply -> validation.

The model is small (1.5B): these tests assert on structure and on one clear-cut case only.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from daemon.config import parse_config
from daemon.db import schema as t
from daemon.service.passes.run import run_pass

pytestmark = pytest.mark.slow

DEPLOY = (
    "# Deploying the API\n"
    "To deploy the API, run `make release` and then push the new git tag to origin.\n"
    "CI builds the container image and rolls it out to staging before production.\n"
)
DEPLOY_AGAIN = (
    "# API deployment\n"
    "Deploy the API by running `make release`, then push the new git tag to origin.\n"
    "The CI builds the container image and rolls it out to staging, then to production.\n"
)
UNRELATED = "# Office plants\nThe fern by the window is watered on Mondays; the cactus once a month.\n"


def test_an_llm_pass_through_a_real_model_proposes_the_clear_merge_and_writes_nothing(local_model, make_store, make_app, read_tree, monkeypatch):
    """A real model gets the notes, answers schema-valid JSON, its merge of the pair is validated and recorded with tokens; a merge lumping in the unrelated note is held for a person; the store is untouched."""
    monkeypatch.setenv("DREAMD_E2E_KEY", "unused-by-a-local-server")
    root = make_store({"deploy.md": DEPLOY, "deploy-api.md": DEPLOY_AGAIN, "plants.md": UNRELATED})
    llm = {"model": "openai/local-qwen", "api_base": local_model, "api_key_env": "DREAMD_E2E_KEY", "timeout_s": 300.0,
           "retries": 1, "max_output_tokens": 500, "tokens_per_call": 2500, "tokens_per_pass": 20000}  # fmt: skip
    config = parse_config({"llm": llm, "stores": [{"name": "e2e", "path": str(root), "preset": "generic"}]})
    app = make_app(config)
    before = read_tree(root)

    report = run_pass(app, config.stores["e2e"])

    assert report.status == "completed", report
    assert report.llm["calls"] >= 1 and report.llm["prompt_tokens"] > 0 and report.llm["completion_tokens"] > 0
    with app.engine().connect() as conn:
        calls = conn.execute(select(t.model_calls)).all()
    assert calls and all(c.status in ("ok", "repaired") for c in calls), [(c.status, c.error) for c in calls]
    model = [o for o in report.outcomes if o.planned.draft.source == "model:openai/local-qwen"]
    # the store fits one call: the model reads all three notes and must put the deploy pair together
    merges = [o for o in model if o.planned.draft.kind == "merge" and {"deploy.md", "deploy-api.md"} <= set(o.planned.draft.notes)]
    assert merges, [(o.state, o.planned.draft.kind, o.planned.draft.notes, o.note) for o in model]
    assert all(o.state in ("pending", "refused", "duplicate") for o in model)
    # a small model shown a whole store may lump the unrelated note in: then only a person may accept it
    lumped = [o for o in model if o.state == "pending" and "plants.md" in o.planned.draft.notes]
    assert all(o.planned.draft.confidence <= 0.5 and "plants.md shares no word" in o.planned.draft.rationale for o in lumped)
    assert read_tree(root) == before
