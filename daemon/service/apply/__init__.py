"""Apply and revert: accepted proposals written through compare-and-swap and the journal.

``applying`` applies and reverts, ``rebasing`` places a proposal's small edits of shared
notes on what earlier applies left there, ``journal`` writes a proposal's files so that a
crash leaves all-old or all-new, ``recovery`` finishes what a crash interrupted before any command
reads or writes a store, ``resolving`` closes a journal left in conflict, ``merged`` finds
proposals someone else already applied, ``interrupt`` lets SIGTERM stop only at safe points,
``later`` says in which order to revert what a later apply wrote over.
"""

from daemon.service.face import face

__getattr__, __dir__ = face(__name__, {
    "apply": "applying", "revert": "applying", "revert_pass": "applying", "ApplyResult": "applying",
    "resolve": "resolving",
    "recover": "recovery", "sweep_temp_files": "recovery", "record_external_changes": "recovery",
    "found_in_store": "merged", "record_found_applied": "merged",
    "Written": "rebasing", "still_applies": "rebasing",
    "install": "interrupt", "shielded": "interrupt",
})  # fmt: skip
