"""Cline's task index lines: the section a status names, and a line handed to another task file."""

from __future__ import annotations

import pytest

from daemon.core.index import BY_STATUS, CLINE_TASKS, IndexSpec, status_named, take_over

SPEC = IndexSpec("tasks/_index.md", CLINE_TASKS, sections=BY_STATUS)
INDEX = ["# Tasks\n", "\n", "## In Progress\n", "- [TASK004] Search - the person's words\n", "\n", "## Completed\n", "- [TASK001] Setup\n", "\n", "## Abandoned\n"]


@pytest.mark.parametrize(
    ("text", "section"),
    [("Abandoned", "Abandoned"), ("Completed", "Completed"), ("Done ✅", "Completed"), ("Cancelled", "Abandoned"),
     ("In Progress", "In Progress"), ("Not started", "Pending"), ("Incomplete", None), ("Abandoned - done another way", "Abandoned")],
)  # fmt: skip
def test_a_status_names_the_section_of_its_first_status_word(text: str, section: str | None):
    """A status word counts at the start of a word only ("Abandoned" holds "done", "Incomplete" "complete"), and the first one decides."""
    assert status_named(text) == section


def test_a_line_taken_over_keeps_its_words_and_moves_to_the_survivors_section():
    """Only the bracketed id changes, and the line goes after the last line of the named section."""
    out = take_over(SPEC, INDEX, 3, "TASK012", "Completed")
    assert out == [*INDEX[:3], "\n", "## Completed\n", "- [TASK001] Setup\n", "- [TASK012] Search - the person's words\n", "\n", "## Abandoned\n"]


def test_a_line_already_in_its_section_only_changes_its_id():
    """A line under the survivor's status stays where it is."""
    assert take_over(SPEC, INDEX, 3, "TASK012", "In Progress") == [*INDEX[:3], "- [TASK012] Search - the person's words\n", *INDEX[4:]]


def test_a_range_id_is_replaced_whole():
    """A line naming a range of tasks ([TASK052..054]) names the one survivor after it."""
    lines = ["## In Progress\n", "- [TASK052..054] Search work - notes\n"]
    assert take_over(SPEC, lines, 1, "TASK060", None) == ["## In Progress\n", "- [TASK060] Search work - notes\n"]


def test_a_line_whose_section_is_missing_stays_where_it_was():
    """With no heading for the survivor's status, the line keeps its place (only its id changes)."""
    assert take_over(SPEC, INDEX, 3, "TASK012", "Pending") == [*INDEX[:3], "- [TASK012] Search - the person's words\n", *INDEX[4:]]
