"""Model access: the one port through which dreamd talks to a language model.

Only ``litellm_client`` imports litellm, and only when a model call is about to be made:
the import costs seconds and ~200 MB, and no command without a model may pay it.
"""
