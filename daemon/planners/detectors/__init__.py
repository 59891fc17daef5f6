"""One module per detector; ``daemon.planners.base.DEFAULT_DETECTORS`` lists them in order."""
