"""Model access: the one port through which dreamd talks to a language model.

- ``base``: the port (ModelSettings, ModelRequest, ModelResponse, ModelClient);
- ``litellm_client``: the real client; ``translate``: litellm's errors -> dreamd's, in one place;
- ``fakes``: FakeModel, ReplayModel and RecordingClient for tests, the eval harness and benchmarks.

Only ``litellm_client`` imports litellm, and only when a model call is about to be made:
the import costs seconds and ~200 MB, and no command without a model may pay it.
"""
