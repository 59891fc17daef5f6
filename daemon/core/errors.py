"""One exception tree for dreamd; every error a user can meet has a stable ``code``.

    DreamdError                     (code, exit_code)
    ├── ConfigError                 bad config file, unknown store or preset
    │   └── MissingKeyError         a store's model has no key to call it with
    ├── StoreError                  a store cannot be read or written
    │   ├── UnsafePathError         a path escapes the store root
    │   ├── EditRacedError          a file was edited in the instant dreamd replaced it (kept: caught file, blob)
    │   └── StoreMovedError         the store's folder is not the one registered (replaced at its path)
    ├── StateError                  the state database is locked, gone or too new
    │   └── DaemonRunningError      another daemon runs on this state database (on this host)
    ├── ProposalError               unknown proposal, illegal state transition
    │   ├── ValidationError         a proposal breaks an invariant (refused)
    │   └── DiffError               a diff does not rebuild its result
    ├── ApplyError                  apply or revert could not proceed
    │   ├── StaleError              files changed since the proposal was made
    │   ├── ConflictError           revert: files changed since the apply
    │   └── UnresolvedError         a journal of the store is in conflict: no apply or revert until resolve
    ├── StoppedError                a worker was asked to stop (SIGTERM) at a safe point
    └── PlannerError                a planner failed
        ├── ModelTransientError     timeout, 429 or 5xx, still failing after bounded retries
        ├── ModelRequestError       authentication or a bad request: fails at once, no retry
        ├── ModelBadOutputError     a reply that is not valid JSON for the schema (after one repair)
        └── BudgetExceededError     a pass reached its token or cost budget

The CLI boundary is the only place that turns these into one line and an exit code.
Programming mistakes stay ``RuntimeError``/``TypeError`` and show a traceback.
"""

from __future__ import annotations


class DreamdError(Exception):
    """Base of every error dreamd reports to a user."""

    code = "error"
    exit_code = 1
    hint = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    def one_line(self) -> str:
        text = f"error[{self.code}]: {self}"
        return f"{text} ({self.hint})" if self.hint else text


class ConfigError(DreamdError):
    code = "config"
    exit_code = 2


class MissingKeyError(ConfigError):
    """The key a store's model needs is not in the environment: refused before the pass starts."""

    code = "model-key"


class StoreError(DreamdError):
    code = "store"
    exit_code = 3


class UnsafePathError(StoreError):
    code = "unsafe-path"


class EditRacedError(StoreError):
    """Someone wrote to a file in the instant dreamd replaced or removed it.

    Their bytes were read from the displaced file and written to a caught file beside the note
    (``stores.caught``) and a blob before anything was lost; the journal is closed as a
    conflict and ``dreamd resolve`` puts them back.
    """

    code = "edit-raced"


class StoreMovedError(StoreError):
    code = "store-moved"


class StateError(DreamdError):
    code = "state"
    exit_code = 4


class DaemonRunningError(StateError):
    """A daemon holds the state database on this host: a second one is refused at start."""

    code = "daemon-running"


class ProposalError(DreamdError):
    code = "proposal"
    exit_code = 5


class ValidationError(ProposalError):
    code = "invalid-proposal"


class DiffError(ProposalError):
    code = "diff"


class ApplyError(DreamdError):
    code = "apply"
    exit_code = 6


class StaleError(ApplyError):
    code = "stale"


class ConflictError(ApplyError):
    code = "conflict"


class UnresolvedError(ApplyError):
    """A journal of the store ended in conflict (its writes failed and could not be rolled
    back, or someone edited a file it was writing): no apply or revert of that store runs
    until ``dreamd resolve`` ends it, so nothing is built on a half-written state."""

    code = "unresolved"


class StoppedError(DreamdError):
    code = "stopped"
    exit_code = 10


class PlannerError(DreamdError):
    code = "planner"
    exit_code = 7


class ModelTransientError(PlannerError):
    code = "model-transient"


class ModelRequestError(PlannerError):
    code = "model-request"


class ModelBadOutputError(PlannerError):
    code = "model-bad-output"


class BudgetExceededError(PlannerError):
    code = "budget"
