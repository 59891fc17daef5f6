"""The pass: scan a store, plan, validate, record and decide; never write the store.

``run.py`` is the pipeline; ``proposing`` turns drafts into proposals, ``storing`` keeps them,
``deciding`` lets the store's policy decide, ``llm_pass`` and ``coverage`` are the model's
part and its ledger, ``noop`` the lane of a store where nothing changed, ``timecaps`` the
pass's time limits, ``report`` what a pass says, ``notify`` who is told, ``orphans`` passes
whose process died, ``findings`` and ``citations`` what a pass reports beside proposals.
"""

from daemon.service.face import face

__getattr__, __dir__ = face(__name__, {
    "run_pass": "run", "Progress": "run",
    "PassReport": "report", "Outcome": "report", "PolicyOutcome": "report", "coverage_left": "report", "llm_unfinished": "report",
    "pass_over": "noop", "pass_named": "noop", "Unchanged": "noop", "skip_named": "noop", "result_line": "noop", "watched_skip": "noop",
    "close_dead_passes": "orphans",
    "load_facts": "deciding",
    "waiting_proposals": "notify", "notify_waiting": "notify",
})  # fmt: skip
