"""A failed model call is not "no proposals": the pass says its LLM part is incomplete, and the notes are sent again."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from daemon.config import parse_config
from daemon.core.errors import ModelTransientError
from daemon.llm.fakes import FakeModel
from daemon.service.passes import run_pass
from daemon.service.status import store_status

BUILD = "# Build checks\nRun make test before pushing because CI only checks lint.\n"
BUILD_AGAIN = "# Build how-to\nCI only checks lint, so run make test before pushing.\n"
COPY = "# Copy\nThe brand colour is teal.\n"
EMPTY = json.dumps({"v": 1, "proposals": []})


def setup(make_store, make_app, model):  # noqa: ANN001, ANN201
    root = make_store({"build.md": BUILD, "build-howto.md": BUILD_AGAIN, "colour.md": COPY, "colour-copy.md": COPY})
    config = parse_config({"llm": {"model": "openai/test-model"}, "stores": [{"name": "s", "path": str(root), "preset": "generic"}]})
    app = make_app(config)
    app.model_client = lambda settings: model
    return root, app, config.stores["s"]


def test_a_reply_that_stays_garbage_leaves_the_llm_part_incomplete_and_keeps_detector_proposals(make_store, make_app):
    """Not JSON after the repair: the pass completes with the detectors' merge, but llm.complete is false and says why."""
    model = FakeModel().enqueue("Sure, here you go!").enqueue("still not json")
    _, app, store = setup(make_store, make_app, model)
    report = run_pass(app, store)
    assert report.status == "completed" and [o.planned.draft.source.split("@")[0] for o in report.outcomes if o.state == "pending"] == ["detector:exact-duplicate"]
    llm = report.llm
    assert (llm["complete"], llm["failed_calls"], llm["calls"]) == (False, 1, 1)
    assert llm["incomplete"].startswith("1 of 1 model call failed (the reply is not JSON: ") and llm["incomplete"].endswith("; their notes are sent again at the next pass")
    assert report.summary("pass #1") == f"s: pass #1: 4 notes, 1 pending (LLM part incomplete: {llm['incomplete']})"


def test_the_notes_of_a_failed_call_are_sent_again_at_the_next_pass(make_store, make_app, clock):
    """The unchanged store is not skipped after a failed call: the same notes go again, and once answered the store rests."""
    model = FakeModel().enqueue("not json").enqueue("not json either").enqueue(EMPTY)
    _, app, store = setup(make_store, make_app, model)
    run_pass(app, store)
    clock.advance(hours=1)
    again = run_pass(app, store)
    assert again.status == "completed" and again.llm["complete"] is True
    assert model.requests[2].key == model.requests[0].key
    clock.advance(hours=1)
    assert run_pass(app, store).status == "skipped" and len(model.requests) == 3


@pytest.mark.parametrize(("kwargs", "said"), [({"finish_reason": "length"}, "cut off"), ({"refusal": "I cannot help."}, "refused")])
def test_a_truncated_or_refused_reply_is_incomplete_too(make_store, make_app, kwargs, said):
    model = FakeModel().enqueue(EMPTY, **kwargs)
    _, app, store = setup(make_store, make_app, model)
    report = run_pass(app, store)
    assert report.llm["complete"] is False and said in report.llm["incomplete"]


def test_status_shows_why_the_last_passes_llm_part_is_incomplete(make_store, make_app):
    model = FakeModel().enqueue("nope").enqueue("nope")
    _, app, store = setup(make_store, make_app, model)
    report = run_pass(app, store)
    last = store_status(app, "s")["last_pass"]
    assert (last["status"], last["error"]) == ("completed", report.llm["incomplete"])


def test_a_budget_stop_is_not_a_failure(make_store, make_app):
    """Stopping at tokens_per_pass is planned work left for later, not a failed call: no error is recorded."""
    _, app, store = setup(make_store, make_app, FakeModel())
    store = store.__class__(**{**store.__dict__, "llm": store.llm.__class__(**{**store.llm.__dict__, "tokens_per_pass": 100})})
    report = run_pass(app, store)
    assert report.llm["complete"] is False and report.llm["failed_calls"] == 0 and report.model_failure is None
    assert store_status(app, "s")["last_pass"].get("error") is None


def test_after_a_timeout_the_notes_it_carried_are_due_again(make_store, make_app, clock):
    """A transient error fails the pass; the next pass sends the same notes instead of counting them as planned."""
    model = FakeModel().enqueue_error(ModelTransientError("openai/test-model timed out after 3 attempts")).enqueue(EMPTY)
    _, app, store = setup(make_store, make_app, model)
    with pytest.raises(Exception, match="the model part of the pass failed"):
        run_pass(app, store)
    clock.advance(hours=1)
    report = run_pass(app, store)
    assert report.llm["complete"] is True and model.requests[1].key == model.requests[0].key


class _Garbage(BaseHTTPRequestHandler):
    """An OpenAI-compatible stand-in whose every answer is well-formed HTTP with a reply that is not JSON."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        body = {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1780000000, "model": "stand-in",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "I merged them for you!"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 500, "completion_tokens": 6, "total_tokens": 506},
        }  # fmt: skip
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def garbage_server():  # noqa: ANN201
    server = HTTPServer(("127.0.0.1", 0), _Garbage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_dreamd_pass_against_a_garbage_server_says_so_and_exits_7(cli, make_store, tmp_path, garbage_server):
    """Through litellm and HTTP: the pass is recorded with the detectors' proposal, its last line says the LLM part is incomplete, exit 7."""
    root = make_store({"build.md": BUILD, "build-howto.md": BUILD_AGAIN, "colour.md": COPY, "colour-copy.md": COPY})
    config = tmp_path / "dreamd.toml"
    config.write_text(f'[llm]\nmodel = "openai/stand-in"\napi_base = "{garbage_server}"\nretries = 0\n\n[[stores]]\nname = "s"\npath = "{root}"\npreset = "generic"\n')
    done = cli("--config", str(config), "pass", "s", "--summary")
    assert done.code == 7, done.err
    assert done.out == (
        "s: pass #1: 4 notes, 1 pending (LLM part incomplete: 1 of 1 model call failed (the reply is not JSON: Expecting value at line 1 column 1); "
        "their notes are sent again at the next pass)\n"
    )
