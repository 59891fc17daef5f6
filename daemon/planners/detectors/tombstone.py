"""Tombstoned values: a note whose content was retired before has come back.

Agents re-learn and re-save facts that a person already retired (rejected, superseded,
expired). The service passes the value hashes (normalised body) of retired notes; a live
note with the same value is proposed for soft-expiry again. Confidence is 0.8, not 1.0:
the fact may have become true again, which is for the reviewer to say.
"""

from __future__ import annotations

from daemon.core.proposals import SOFT_EXPIRE, Draft
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import first_body_line
from daemon.planners.survivor import can_retire


class TombstonedValues:
    name = "tombstoned-value"
    version = 1

    def detect(self, ctx: PlanContext) -> list[Draft]:
        drafts = []
        for note in ctx.view.live_notes():
            earlier = ctx.tombstoned_values.get(note.value_hash)
            if earlier is None or not note.normalised_body or not can_retire(ctx.view, note):
                continue
            reason = f"same content as {earlier}, retired earlier"
            evidence = first_body_line(note)
            drafts.append(
                Draft(
                    kind=SOFT_EXPIRE,
                    source=source_of(self),
                    confidence=0.8,
                    title=f"Expire {note.path}: {reason}",
                    rationale=(
                        f"{note.path} has the same text (case and whitespace ignored) as {earlier}, which was "
                        "retired before; it has probably been re-saved from stale knowledge. Fairly sure, "
                        "unless the fact has become true again."
                    ),
                    evidence=(evidence,) if evidence else (),
                    retire=(note.path,),
                    reason=reason,
                )
            )
        return drafts
