"""A topical merge into a new note: the model's proposal, the checks, the change and its validation."""

from __future__ import annotations

from daemon.core.changes import build, key_of
from daemon.core.hashing import hash_bytes
from daemon.core.index import IndexSpec
from daemon.core.proposals import Draft
from daemon.core.validate import refusal
from daemon.planners.llm.checks import Refusal, check

from ..factory import note, view
from .store import NOW, proposal, sent_for

SOURCE = "model:openai/test-model"
STACK = "---\nname: tech_stack\ndescription: Languages and tools\ntype: project\n---\nThe backend is Python 3.12 with FastAPI.\nThe frontend uses React and Vite.\n"
STYLE = "---\nname: code_style_conventions\ndescription: How code is written\ntype: project\n---\nFormat Python with ruff; lines stay under 100 characters.\nReact components are function components with hooks.\n"
GUIDE = (
    "- The backend is Python 3.12 with FastAPI; format it with ruff, lines under 100 characters.\n"
    "- The frontend uses React and Vite; components are function components with hooks.\n"
)
QUOTES = [{"note": "n1", "quote": "The backend is Python 3.12 with FastAPI."}, {"note": "n2", "quote": "Format Python with ruff"}]
INDEX = "# Memory\n- [tech_stack](tech_stack.md) - Languages and tools\n- [code_style_conventions](code_style_conventions.md) - How code is written\n"


def store():  # noqa: ANN201 - StoreView
    return view(note("tech_stack.md", STACK), note("code_style_conventions.md", STYLE), note("MEMORY.md", INDEX), index=IndexSpec("MEMORY.md", "links"))


def into_new(**fields: object) -> Draft | Refusal:
    v = store()
    base: dict[str, object] = {"new_path": "development_guide.md", "new_title": "Development guide", "merged_body": GUIDE, "evidence": QUOTES}
    base.update(fields)
    return check(proposal("merge", **base), sent_for(v, "tech_stack.md", "code_style_conventions.md"), SOURCE)


def test_a_merge_into_a_new_note_creates_it_and_retires_every_merged_note() -> None:
    """Both notes retire into a note the merge creates, with the naming keys they use and the title as heading."""
    draft = into_new()
    assert isinstance(draft, Draft) and not draft.lossy
    assert (draft.survivor, draft.retire, draft.title) == ("development_guide.md", ("tech_stack.md", "code_style_conventions.md"), "Merge tech_stack.md, code_style_conventions.md into a new note development_guide.md")
    ((path, data),) = draft.create
    assert path == "development_guide.md"
    assert data.decode() == (
        "---\nname: Development guide\ndescription: The backend is Python 3.12 with FastAPI; format it with ruff, lines under 100 characters.\n"
        "type: project\n---\n# Development guide\n\n" + GUIDE
    )


def test_the_new_note_passes_validation_and_takes_over_the_index_entries() -> None:
    """Built and validated like any merge: the new file is written, both old entries leave the index, the new one is listed."""
    v = store()
    draft = into_new()
    assert isinstance(draft, Draft)
    change = build(draft, v, NOW)
    assert refusal(draft, change, v) is None
    assert change.base["development_guide.md"] is None and change.result["development_guide.md"] == hash_bytes(draft.create[0][1])
    index = change.data[change.result["MEMORY.md"]].decode()  # type: ignore[index]
    assert index == "# Memory\n- [Development guide](development_guide.md) — The backend is Python 3.12 with FastAPI; format it with ruff, lines under 100 characters.\n"
    retired = change.data[change.result["tech_stack.md"]].decode()  # type: ignore[index]
    assert "superseded_by: development_guide.md" in retired


def test_a_merge_into_a_new_note_is_keyed_on_the_notes_it_merges() -> None:
    """Rejecting the merge of these two notes keeps rejecting it, whichever note would hold the text."""
    v = store()
    draft = into_new()
    assert isinstance(draft, Draft)
    plain = Draft(kind="merge", source=SOURCE, confidence=0.5, title="t", rationale="r", survivor="tech_stack.md", retire=("code_style_conventions.md",))
    assert key_of(draft, v) == key_of(plain, v)


def test_a_new_path_that_exists_or_escapes_is_refused() -> None:
    """The new note never overwrites a note, and never lands outside what the agent reads."""
    assert _reason(into_new(new_path="tech_stack.md")) == "new_path 'tech_stack.md' exists already"
    assert _reason(into_new(new_path="../guide.md")) == "path '../guide.md' is not a plain path inside the store"
    assert _reason(into_new(new_path="guide.txt")) == "new_path 'guide.txt' is not a markdown file (.md)"
    assert _reason(into_new(new_path=".dreamd-archive/guide.md")) == "new_path '.dreamd-archive/guide.md' is not where this store's agent reads its notes"
    assert _reason(into_new(new_path="MEMORY.md")) == "new_path 'MEMORY.md' exists already"


def test_a_new_note_needs_a_title_and_not_a_survivor_as_well() -> None:
    assert _reason(into_new(new_title="  ")) == "a merge into a new note must give new_title"
    assert _reason(into_new(survivor="n1")) == "a merge gives either survivor (an existing note) or new_path (a new note), not both"


def test_a_new_note_that_adds_a_fact_is_refused() -> None:
    """A topical merge may regroup what the notes say, never add to it."""
    result = into_new(merged_body=GUIDE + "- Deploy with Kubernetes 1.29 on the staging cluster.\n")
    assert _reason(result) == "merged_body states what none of the merged notes says: “Deploy with Kubernetes 1.29 on the staging cluster.”"


def test_a_new_note_that_drops_a_fact_is_lossy() -> None:
    draft = into_new(merged_body="- The backend is Python 3.12 with FastAPI.\n- The frontend uses React and Vite.\n")
    assert isinstance(draft, Draft) and draft.lossy and "Lossy: 2 sentences" in draft.rationale


def test_core_validation_refuses_a_created_note_that_is_not_the_merge_survivor() -> None:
    """Only the note a merge folds into may be created by it: a second created file is refused."""
    v = store()
    draft = into_new()
    assert isinstance(draft, Draft)
    extra = Draft(**{**draft.__dict__, "create": (*draft.create, ("planted.md", b"x\n"))})
    assert refusal(extra, build(extra, v, NOW), v) == "only a reindex, or a merge into a new note, may create notes, not this merge"


def test_core_validation_refuses_a_new_note_the_agent_would_not_read() -> None:
    """A flat store's agent lists no subfolders: a merge into sub/guide.md is refused by the foundation itself."""
    from daemon.core.reader import MARKDOWN, Listing, ReaderModel

    flat = ReaderModel(agent="a flat lister", listing=Listing(recursive=False, dot_dirs=False), links=(MARKDOWN,))
    v = view(note("a.md", "One fact here.\n"), note("b.md", "One fact here.\n"))
    v = type(v)(notes=v.notes, reader=flat)
    draft = Draft(kind="merge", source=SOURCE, confidence=0.5, title="t", rationale="r", survivor="sub/guide.md", retire=("a.md", "b.md"), create=(("sub/guide.md", b"One fact here.\n"),))
    assert refusal(draft, build(draft, v, NOW), v) == "would create sub/guide.md, which the agent would not read as a note"


def _reason(result: Draft | Refusal) -> str:
    assert isinstance(result, Refusal), result
    return result.reason
