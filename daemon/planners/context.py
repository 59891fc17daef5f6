"""What every detector is given and must look like.

Kept apart from ``base`` (which lists the default detectors) so that detector modules can
import these types without an import cycle; ``base`` re-exports everything here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from daemon.core.proposals import Draft
from daemon.core.view import StoreView, utc
from daemon.planners.citations import CitedFile
from daemon.planners.settings import DetectorSettings


@dataclass(frozen=True)
class PlanContext:
    """Everything a detector may look at: detectors read nothing else (no files, no clock)."""

    view: StoreView
    now: dt.datetime  # aware; normalised to UTC
    tombstoned_values: dict[str, str] = field(default_factory=dict)  # value hash -> retired path
    settings: DetectorSettings = field(default_factory=DetectorSettings)
    # notes that drafts of earlier detectors in this pass retire: later ones plan around them
    retiring: frozenset[str] = frozenset()
    # change keys of proposals people rejected: such drafts are still made (and recorded
    # as suppressed), but later detectors must not plan as if they will happen
    rejected_changes: frozenset[str] = frozenset()
    # what the store's workspace git says of the files its notes cite (gathered by the
    # service, see daemon.service.passes.citations); empty when the store names no workspace
    citations: Mapping[str, CitedFile] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "now", utc(self.now))


class Detector(Protocol):
    """A deterministic finder of one kind of proposal."""

    name: str
    version: int  # bump when the output for the same input changes

    def detect(self, ctx: PlanContext) -> list[Draft]: ...


def source_of(detector: Detector) -> str:
    """The ``source`` every draft of this detector carries (an event's "who")."""
    return f"detector:{detector.name}@{detector.version}"
