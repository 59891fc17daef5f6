"""Reverting everything gives back the tree as it was: the same files, and the same folders.

An apply that retires a note creates the archive folder (and the folders under it the note's
path needs); DeepCode's temp files wait in the archive folder inside the store. A revert
takes away the folders applies created once they are empty, for an archive inside the notes
folder and one beside it, and never a folder that was there before or still holds a file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from daemon.config import adhoc_store
from daemon.service.apply.applying import apply, revert, revert_pass
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide_all, list_proposals

OTHER = "Sessions are rows of the sessions table, keyed by a random id and swept nightly by the reaper job.\n"
STEPS = "Build the image with make image, push it to the registry, then bump the tag in the Helm values by hand.\n"


def _tree(top: Path) -> tuple[frozenset[str], dict[str, bytes]]:
    """Every folder and every file's bytes below ``top`` (hidden ones too)."""
    folders, files = set(), {}
    for dirpath, dirnames, filenames in os.walk(top):
        folders |= {(Path(dirpath) / d).relative_to(top).as_posix() for d in dirnames}
        files |= {(Path(dirpath) / f).relative_to(top).as_posix(): (Path(dirpath) / f).read_bytes() for f in filenames}
    return frozenset(folders), files


# preset, where the notes root sits, the archive folder the apply creates (relative to the notes root's parent)
LAYOUTS = {
    "inside (deepcode)": ("deepcode", "work/.deepcode/memory", ".deepcode/memory/.dreamd-archive"),
    "beside (serena)": ("serena", "shop/.serena/memories", ".serena/memories.dreamd-archive/deploy"),
}


def _applied_all(make_store, make_app, preset: str, where: str):  # noqa: ANN001, ANN202
    files = {"MEMORY.md": "# Memory\n\n- [Deploy](deploy/steps.md)\n", "memory_maintenance.md": "Read `mem:core` first.\n", "core.md": "Deploys: `mem:deploy/steps`.\n"}
    files |= {"deploy/steps.md": STEPS, "deploy/steps_copy.md": STEPS} if preset == "serena" else {"steps.md": STEPS, "steps_copy.md": STEPS}
    root = make_store(files, name=where)
    store, app = adhoc_store(root, preset), make_app()
    top = root.parent.parent
    before = _tree(top)
    report = run_pass(app, store)
    decide_all(app, [p.id for p in list_proposals(app, store.name, ["pending"])], "accept")
    assert {r.state for r in apply(app, store_name=store.name)} == {"applied"}
    return app, root, top, before, report.pass_id


@pytest.mark.parametrize("layout", LAYOUTS)
def test_reverting_everything_leaves_the_tree_as_it_was(make_store, make_app, clock, layout):
    """After pass, accept everything, apply and revert of the pass, every file and every folder is as before: the archive folder the apply made is gone."""
    preset, where, made = LAYOUTS[layout]
    app, _, top, before, pass_id = _applied_all(make_store, make_app, preset, where)
    assert made in _tree(top)[0]
    revert_pass(app, pass_id)
    assert _tree(top) == before


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_folder_that_was_there_before_the_apply_stays(make_store, make_app, clock, layout):
    """An empty archive folder made by someone before the apply is still there after the revert."""
    preset, where, made = LAYOUTS[layout]
    archive = made.split("/deploy")[0]
    root = Path(make_store({}, name=where))
    (root.parent.parent / archive).mkdir(parents=True)
    app, _, top, before, pass_id = _applied_all(make_store, make_app, preset, where)
    revert_pass(app, pass_id)
    assert _tree(top) == before and archive in before[0]


def test_a_folder_holding_another_apply_s_file_stays_until_that_one_is_reverted(make_store, make_app, clock):
    """Reverting the apply that made the archive folder keeps it while a later apply's file is in it; reverting that one too takes it away."""
    files = {"memory_maintenance.md": "Read `mem:core` first.\n", "core.md": "Notes: `mem:a` and `mem:b`.\n", "a.md": STEPS, "a_copy.md": STEPS, "b.md": OTHER, "b_copy.md": OTHER}
    root = make_store(files, name="shop/.serena/memories")
    store, app = adhoc_store(root, "serena"), make_app()
    before = _tree(root.parent)
    run_pass(app, store)
    first, second = sorted(p.id for p in list_proposals(app, store.name, ["pending"]))
    decide_all(app, [first, second], "accept")
    apply(app, [first, second])
    archive = root.parent / "memories.dreamd-archive"
    revert(app, first)
    assert archive.is_dir() and len(list(archive.iterdir())) == 1
    revert(app, second)
    assert _tree(root.parent) == before
