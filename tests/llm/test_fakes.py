"""The in-package fakes: FakeModel (queued replies) and ReplayModel / RecordingClient (recorded ones)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon.core.errors import ConfigError, ModelTransientError
from daemon.llm.base import ModelSettings
from daemon.llm.fakes import EMPTY_REPLY, FakeModel, RecordingClient, ReplayModel, replay_key

from .helpers import request

FAKE = ModelSettings(model="fake/model")


def test_fake_model_answers_in_order_and_records_requests() -> None:
    """Queued replies come back in order; every request is kept."""
    fake = FakeModel().enqueue('{"proposals": []}', prompt_tokens=10, completion_tokens=3).enqueue("second")
    first = fake.complete(request(key="k1"), FAKE)
    second = fake.complete(request(key="k2"), FAKE)
    assert (first.text, first.prompt_tokens, first.completion_tokens) == ('{"proposals": []}', 10, 3)
    assert second.text == "second" and second.model == "fake/model"
    assert [r.key for r in fake.requests] == ["k1", "k2"]
    assert fake.pending == 0


def test_fake_model_estimates_tokens_when_not_given() -> None:
    """Without counts, tokens are estimated as characters // 4."""
    req = request()
    response = FakeModel().enqueue("x" * 40).complete(req, FAKE)
    assert response.completion_tokens == 10
    assert response.prompt_tokens == len(f"{req.system}\n{req.user}") // 4


def test_fake_model_raises_queued_errors() -> None:
    """enqueue_error makes the next call raise that exception."""
    fake = FakeModel().enqueue_error(ModelTransientError("model fake: 503")).enqueue("ok")
    with pytest.raises(ModelTransientError):
        fake.complete(request(), FAKE)
    assert fake.complete(request(), FAKE).text == "ok"
    assert len(fake.requests) == 2


def test_fake_model_with_empty_queue_is_a_test_bug() -> None:
    """An unexpected call is a RuntimeError, not a model error a planner would swallow."""
    with pytest.raises(RuntimeError, match="FakeModel: no reply queued"):
        FakeModel().complete(request(), FAKE)


def test_fake_model_can_refuse_and_truncate() -> None:
    """Refusals and finish reasons are reproducible without HTTP."""
    fake = FakeModel().enqueue("", refusal="I can't help with that.").enqueue('{"propo', finish_reason="length")
    assert fake.complete(request(), FAKE).refusal == "I can't help with that."
    assert fake.complete(request(), FAKE).finish_reason == "length"


def test_replay_model_hits_and_misses(tmp_path: Path) -> None:
    """Recorded keys replay their text and counts; unknown keys give no proposals and count a miss."""
    path = tmp_path / "replies.json"
    path.write_text(json.dumps({"v": 1, "model": "openai/gpt-4o-mini", "replies": {
        "a.md|b.md": {"text": '{"proposals": [1]}', "prompt_tokens": 500, "completion_tokens": 20,
                      "finish_reason": "stop"},
    }}))
    replay = ReplayModel.load(path)
    hit = replay.complete(request(key="a.md|b.md"), FAKE)
    miss = replay.complete(request(key="c.md"), FAKE)
    assert (hit.text, hit.prompt_tokens, hit.completion_tokens) == ('{"proposals": [1]}', 500, 20)
    assert (miss.text, miss.prompt_tokens, miss.completion_tokens) == (EMPTY_REPLY, 0, 0)
    assert replay.misses == 1 and replay.missed_keys == ["c.md"]
    assert replay.model == "openai/gpt-4o-mini"


def test_replay_model_estimates_unrecorded_token_counts() -> None:
    """A reply recorded without counts still costs tokens (len // 4), so benchmarks count them."""
    replay = ReplayModel({"k": {"text": "y" * 80}})
    req = request(key="k")
    response = replay.complete(req, FAKE)
    assert response.completion_tokens == 20
    assert response.prompt_tokens == len(f"{req.system}\n{req.user}") // 4
    assert response.finish_reason == "stop"


def test_repair_turn_has_its_own_replay_key() -> None:
    """A repair request (extra messages) must not replay the first, broken answer."""
    first = request(key="a.md|b.md")
    repair = request(key="a.md|b.md", extra_messages=({"role": "user", "content": "valid JSON please"},))
    assert replay_key(first) == "a.md|b.md"
    assert replay_key(repair).startswith("a.md|b.md#") and replay_key(repair) != replay_key(first)
    assert replay_key(request(key="")).startswith("prompt:")


@pytest.mark.parametrize(
    "content",
    ['{"v": 2, "model": "m", "replies": {}}', '{"v": 1}', "not json", "[]"],
)
def test_replay_model_refuses_unknown_files(tmp_path: Path, content: str) -> None:
    """A newer version, a missing replies object or broken JSON is a config error."""
    path = tmp_path / "replies.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match="replay file"):
        ReplayModel.load(path)


def test_recording_client_saves_what_the_real_client_answered(tmp_path: Path) -> None:
    """Recorded replies replay identically, keyed by the request."""
    path = tmp_path / "replies.json"
    inner = FakeModel().enqueue('{"proposals": ["m"]}', prompt_tokens=900, completion_tokens=40)
    inner.enqueue('{"proposals": []}', prompt_tokens=300, completion_tokens=5, finish_reason="length")
    recorder = RecordingClient(inner, path)
    live = [recorder.complete(request(key=k), ModelSettings(model="openai/gpt-4o-mini")) for k in ("a", "b")]

    data = json.loads(path.read_text())
    assert data["v"] == 1 and data["model"] == "openai/gpt-4o-mini" and sorted(data["replies"]) == ["a", "b"]
    replay = ReplayModel.load(path)
    again = [replay.complete(request(key=k), FAKE) for k in ("a", "b")]
    assert [(r.text, r.prompt_tokens, r.completion_tokens, r.finish_reason) for r in again] == [
        (r.text, r.prompt_tokens, r.completion_tokens, r.finish_reason) for r in live
    ]
    assert replay.misses == 0


def test_recording_client_extends_an_existing_file(tmp_path: Path) -> None:
    """Recording into an existing file keeps the replies already there."""
    path = tmp_path / "replies.json"
    seed = ReplayModel(model="openai/gpt-4o-mini")
    seed.record("old", '{"proposals": []}', prompt_tokens=1, completion_tokens=1)
    seed.save(path)
    RecordingClient(FakeModel().enqueue("new"), path).complete(request(key="new"), FAKE)
    assert sorted(json.loads(path.read_text())["replies"]) == ["new", "old"]
    assert not list(tmp_path.glob("*.tmp"))
