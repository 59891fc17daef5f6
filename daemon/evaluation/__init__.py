"""``dreamd eval``: a planner run in dry run over labeled stores and scored, beside the service
it measures (it uses the pass through ``daemon.service.passes`` and nothing deeper).

``evaluate`` runs the stores, ``scoring`` reads labels and scores, ``oracle`` is the perfect
model that answers from the labels, ``git_fixture`` builds a labeled store's workspace as a git
repository.
"""

from daemon.service.face import face

__getattr__, __dir__ = face(__name__, {
    "run_eval": "evaluate", "eval_model": "evaluate", "oracle_model": "evaluate", "parse_options": "evaluate",
})  # fmt: skip
