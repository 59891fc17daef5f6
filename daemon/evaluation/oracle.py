"""The oracle model: answers every call as a perfect model would, from the labels.

``dreamd eval --planner oracle`` runs the same pass as ``--planner llm`` with this client in
place of a model. For each call it proposes exactly the labeled cases whose notes the call
holds together, once per pass: a merge of a labeled group into its labeled survivor, with a
lossless merged body (the survivor's text, then every sentence of the others it lacks) and
a verbatim quote of each note; a supersede of every labeled older note by its ``by`` note,
quoting both; a soft-expire quoting the note. What candidate selection never sends together
it cannot propose, and what the checks refuse of its answers is a refusal of a correct
proposal: the pipeline's ceiling, whatever the model.

It reads only the contract of a call: ``ModelRequest.key`` (the notes of the call, as the
eval scopes them: ``store/path|store/path``), and it names notes by path, which the planner
resolves like prompt ids. It never reads the prompt's text, so it keeps working when the
prompts or the candidate selection change. It reads each note from its labeled store and
redacts it as the planner does, so its quotes are verbatim in what a model is shown.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from daemon.core import frontmatter
from daemon.core.proposals import MERGE, SOFT_EXPIRE, SUPERSEDE
from daemon.llm.base import ModelRequest, ModelResponse, ModelSettings
from daemon.llm.fakes import estimate_tokens, prompt_text
from daemon.llm.limits import FALLBACK, ModelLimits
from daemon.planners.llm.checks import MIN_QUOTE
from daemon.planners.lossless import uncovered
from daemon.planners.llm.redact import has_marker, redact
from daemon.evaluation.scoring import Labels

MODEL = "oracle"
SOURCE = f"model:{MODEL}"
CONFIDENCE = 0.9
CUT = "the reply was cut off at its room: a model cannot answer this call whole"
WINDOW = ModelLimits(128_000, 16_384, "declared by the oracle: a model with a 128k window and 16k replies")


class OracleModel:
    """A ModelClient answering from the labels of a corpus, keyed by store name."""

    def __init__(self, labels: Iterable[Labels]) -> None:
        self.labels = {lab.name: lab for lab in labels}
        self.answered: dict[str, set[frozenset[str]]] = {}  # store -> cases answered in a reply that was not cut
        self.cut: dict[str, dict[frozenset[str], dict[str, Any]]] = {}  # store -> case -> {kind, notes, reason}

    def limits(self, settings: ModelSettings) -> ModelLimits:
        """The model the oracle stands for: today's common window, declared (``WINDOW``)."""
        return WINDOW

    def complete(self, request: ModelRequest, settings: ModelSettings) -> ModelResponse:
        store, paths = _scope(request.key)
        labels = self.labels.get(store)
        proposals = _Answer(labels, paths, self.answered.setdefault(store, set())).proposals() if labels else []
        room = request.max_output_tokens or settings.max_output_tokens or FALLBACK.max_output_tokens or 0
        text = _reply(proposals)
        if estimate_tokens(text) > room:  # as a model told its room does: merges as edit scripts
            proposals = [(cases, {**p, "merged_body": None} if p["kind"] == MERGE else p) for cases, p in proposals]
            text = _reply(proposals)
        completion = estimate_tokens(text)
        cut = completion > room
        lost = self.cut.setdefault(store, {})
        for cases, proposal in proposals:
            for case in cases:
                if cut:
                    lost[case] = {"kind": proposal["kind"], "notes": sorted(case), "reason": CUT}
                else:
                    self.answered[store].add(case)
                    lost.pop(case, None)
        return ModelResponse(text, "length" if cut else "stop", estimate_tokens(prompt_text(request)), completion, None, 0.0, settings.model, meta={"oracle": True})

    def lost(self, store: str) -> list[dict[str, Any]]:
        """Cases of ``store`` the oracle answered only in replies cut off at max_output_tokens."""
        return [entry for case, entry in sorted(self.cut.get(store, {}).items(), key=lambda item: sorted(item[0]))]


def _reply(proposals: list[tuple[list[frozenset[str]], dict[str, Any]]]) -> str:
    return json.dumps({"v": 1, "proposals": [p for _, p in proposals]}, ensure_ascii=False)


def _scope(key: str) -> tuple[str, frozenset[str]]:
    """``store/a.md|store/b.md`` -> ("store", {a.md, b.md}); no key: no store."""
    parts = [part.partition("/") for part in key.split("|")] if key else []
    stores = {store for store, _, _ in parts}
    return (stores.pop() if len(stores) == 1 else ""), frozenset(path for _, _, path in parts)


class _Answer:
    """The proposals of one call: the labeled cases the call holds whole, not answered yet."""

    def __init__(self, labels: Labels, paths: frozenset[str], answered: set[frozenset[str]]) -> None:
        self.labels, self.paths, self.answered = labels, paths, answered
        self.texts: dict[str, str] = {}

    def proposals(self) -> list[tuple[list[frozenset[str]], dict[str, Any]]]:
        """Each proposal with the labeled cases it answers (a supersede: one per older note)."""
        out = [([group], self._merge(group)) for group in self.labels.merges if self._open(group)]
        newer_notes = sorted({self.labels.by[n] for n, kind in self.labels.retire.items() if kind == SUPERSEDE and n in self.labels.by})
        for newer in newer_notes:
            older = [n for n, by in sorted(self.labels.by.items()) if by == newer and self._open(frozenset((n, newer)))]
            if older:  # one proposal per newer note: the planner refuses a second one naming it
                out.append(([frozenset((n, newer)) for n in older], self._supersede(newer, older)))
        out += [([frozenset((n,))], self._expire(n)) for n, kind in sorted(self.labels.retire.items()) if kind == SOFT_EXPIRE and self._open(frozenset((n,)))]
        return out

    def _open(self, case: frozenset[str]) -> bool:
        return case <= self.paths and case not in self.answered

    def _text(self, path: str) -> str:
        """The note as the model is shown it: decoded as the planner does, then redacted."""
        if path not in self.texts:
            data = (Path(self.labels.store) / path).read_bytes()
            self.texts[path] = redact(data.decode("utf-8", errors="replace"))[0]
        return self.texts[path]

    def _body(self, path: str) -> str:
        skip = frontmatter.split((Path(self.labels.store) / path).read_bytes()).header.count(b"\n")
        return "\n".join(self._text(path).split("\n")[skip:])

    def _evidence(self, paths: Iterable[str]) -> list[dict[str, str]]:
        found = [(path, _quote(self._body(path)) or _quote(self._text(path))) for path in paths]
        return [{"note": path, "quote": quote} for path, quote in found if quote]

    def _merge(self, group: frozenset[str]) -> dict[str, Any]:
        survivor = self.labels.survivors.get(group) or sorted(group)[0]
        ordered = [survivor, *sorted(group - {survivor})]
        body: str | None = self._body(survivor)  # unchanged when it already says everything: an exact copy changes no byte
        for path in ordered[1:]:
            missing = uncovered([self._body(path)], body or "", [])
            body = (body or "").rstrip("\n") + "".join(f"\n- {unit}" for unit in missing) + "\n" if missing else body
        if any(has_marker(self._text(p)) for p in ordered):
            body = None  # as the prompt asks: a merge of a redacted note is an edit script, dreamd writes it from the notes
        return _proposal(MERGE, ordered, f"The labels of {self.labels.name} merge these notes into {survivor}.", self._evidence(ordered),
                         survivor=survivor, merged_body=body)  # fmt: skip

    def _supersede(self, newer: str, older: list[str]) -> dict[str, Any]:
        why = f"The labels of {self.labels.name} say {newer} replaces {', '.join(older)}."
        return _proposal(SUPERSEDE, [newer, *older], why, self._evidence([newer, *older]), newer=newer)

    def _expire(self, note: str) -> dict[str, Any]:
        return _proposal(SOFT_EXPIRE, [note], f"The labels of {self.labels.name} say {note} no longer holds.", self._evidence([note]))


def _proposal(kind: str, notes: list[str], rationale: str, evidence: list[dict[str, str]], **roles: str) -> dict[str, Any]:
    return {"kind": kind, "notes": notes, "survivor": roles.get("survivor"), "newer": roles.get("newer"), "merged_body": roles.get("merged_body"),
            "rationale": rationale, "confidence": CONFIDENCE, "evidence": evidence, "dropped": []}  # fmt: skip


def _quote(text: str) -> str | None:
    """A line of ``text`` a check can find verbatim: long enough, no redaction marker, no
    escaped markup; a sentence before a heading or a frontmatter fence."""
    lines = [line.strip() for line in text.splitlines()]
    usable = [line for line in lines if len(line) >= MIN_QUOTE and not has_marker(line) and "&lt;" not in line]
    plain = [line for line in usable if not line.startswith("#") and line != "---"]
    return (plain or usable or [None])[0]
