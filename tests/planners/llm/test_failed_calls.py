"""A failed model call is not "no proposals": the pass says its LLM part is incomplete, and the notes are sent again."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from daemon.config import parse_config
from daemon.core.errors import ModelTransientError
from daemon.llm.fakes import FakeModel
from daemon.service.passes.run import run_pass
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


def test_a_refused_reply_is_incomplete_too(make_store, make_app):
    model = FakeModel().enqueue(EMPTY, refusal="I cannot help.")
    _, app, store = setup(make_store, make_app, model)
    report = run_pass(app, store)
    assert report.llm["complete"] is False and "refused" in report.llm["incomplete"]


def test_a_reply_cut_off_is_asked_again_in_less_room_and_never_taken_for_no_proposals(make_store, make_app):
    """Cut at its room, the same notes are asked again with merges as edit scripts; that answer counts."""
    model = FakeModel().enqueue('{"v": 1, "proposals": [{"kind": "mer', finish_reason="length").enqueue(EMPTY)
    _, app, store = setup(make_store, make_app, model)
    report = run_pass(app, store)
    assert [r.key for r in model.requests] == [model.requests[0].key] * 2
    assert "merged_body to null" in model.requests[1].extra_messages[-1]["content"]
    assert report.llm["complete"] is True and report.llm["coverage"]["left"] == 0


def test_a_reply_cut_off_twice_is_split_into_smaller_calls_that_show_every_note(make_store, make_app):
    model = FakeModel().enqueue("{", finish_reason="length").enqueue("{", finish_reason="length").enqueue(EMPTY).enqueue(EMPTY)
    _, app, store = setup(make_store, make_app, model)
    report = run_pass(app, store)
    first, *halves = [r.key.split("|") for r in model.requests[1:]]
    assert len(halves) == 2 and sorted(halves[0] + halves[1]) == sorted(model.requests[0].key.split("|"))
    assert all("merged_body to null" in r.extra_messages[0]["content"] for r in model.requests[2:])
    assert report.llm["complete"] is True and report.llm["failed_calls"] == 0 and report.llm["coverage"]["shown"] == 4


def test_a_single_note_cut_off_even_in_less_room_fails_and_stays_due(make_store, make_app):
    model = FakeModel().enqueue("{", finish_reason="length").enqueue("{", finish_reason="length")
    root = make_store({"only.md": BUILD})
    config = parse_config({"llm": {"model": "openai/test-model"}, "stores": [{"name": "s", "path": str(root), "preset": "generic"}]})
    app = make_app(config)
    app.model_client = lambda settings: model
    report = run_pass(app, config.stores["s"])
    assert report.llm["complete"] is False and "cut off" in report.llm["incomplete"] and report.llm["coverage"]["left"] == 1


def test_status_shows_why_the_last_passes_llm_part_is_incomplete(make_store, make_app):
    model = FakeModel().enqueue("nope").enqueue("nope")
    _, app, store = setup(make_store, make_app, model)
    report = run_pass(app, store)
    last = store_status(app, "s")["last_pass"]
    assert (last["status"], last["error"]) == ("completed", report.llm["incomplete"])


def _two_calls(store, pass_calls: int):  # noqa: ANN001, ANN202
    """The store's settings with a call too small for the whole store (two pairs: two calls)
    and a pass budget for ``pass_calls`` of them."""
    import dataclasses

    from daemon.planners.llm.planner import LLMPlanner

    small = dataclasses.replace(store.llm, max_output_tokens=300, tokens_per_call=10_000)
    fixed = LLMPlanner(FakeModel(), small, lambda text: len(text) // 4).fixed_tokens()
    call = fixed + 120
    llm = dataclasses.replace(small, tokens_per_call=call, tokens_per_pass=call + 300 + (pass_calls - 1) * (call + 300) + 150)
    return store._replace(llm=llm)


def test_a_budget_stop_is_not_a_failure_and_the_next_pass_goes_on(make_store, make_app, clock):
    """Stopping at tokens_per_pass is planned work left for later, not a failed call: no error is
    recorded, the pass says how many notes are left, and the next pass shows them."""
    model = FakeModel().enqueue(EMPTY).enqueue(EMPTY)
    _, app, store = setup(make_store, make_app, model)
    store = _two_calls(store, pass_calls=1)
    report = run_pass(app, store)
    coverage = report.llm["coverage"]
    assert report.llm["complete"] is False and report.llm["failed_calls"] == 0 and report.model_failure is None
    assert (coverage["due"], coverage["shown"], coverage["left"], coverage["calls_left"], coverage["passes_left"]) == (4, 2, 2, 1, 1)
    assert report.llm["incomplete"].startswith("2 of 4 due notes not yet shown to the model (token budget reached after 1 of 2 calls")
    assert store_status(app, "s")["last_pass"].get("error") is None
    clock.advance(hours=1)
    again = run_pass(app, store)
    assert again.llm["complete"] is True and again.llm["coverage"]["due"] == 2 and len(model.requests) == 2
    assert set(model.requests[1].key.split("|")) | set(model.requests[0].key.split("|")) == {"build.md", "build-howto.md", "colour.md", "colour-copy.md"}
    clock.advance(hours=1)
    assert run_pass(app, store).status == "skipped" and len(model.requests) == 2


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
