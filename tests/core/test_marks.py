"""Evidence marked in a note's text: the quote where the note holds it, else the lines it names."""

from __future__ import annotations

from daemon.core.marks import Piece, mark

TEXT = "one\ntwo words\nthree\nfour\n"


def test_a_quote_is_marked_where_the_note_holds_it():
    """Only the quoted words are marked, the rest stays plain and every character is kept."""
    assert mark(TEXT, [(2, 2, "words")]) == [Piece("one\ntwo ", False), Piece("words", True), Piece("\nthree\nfour\n", False)]


def test_a_quote_the_note_does_not_hold_marks_the_lines_it_names():
    """A paraphrase marks lines 2-3 whole, without their last newline."""
    assert mark(TEXT, [(2, 3, "paraphrased")]) == [Piece("one\n", False), Piece("two words\nthree", True), Piece("\nfour\n", False)]


def test_overlapping_evidence_is_one_mark():
    """Two items over the same words do not nest or repeat a mark."""
    assert mark(TEXT, [(2, 2, "two words"), (2, 2, "words\nthree")]) == [Piece("one\n", False), Piece("two words\nthree", True), Piece("\nfour\n", False)]


def test_evidence_pointing_nowhere_marks_nothing():
    """A missing quote with lines beyond the note leaves the text unmarked."""
    assert mark(TEXT, [(9, 12, "absent")]) == [Piece(TEXT, False)]


def test_long_unmarked_stretches_fold_keeping_lines_next_to_each_mark():
    """Forty lines with line 20 quoted: the 16 lines above its three neighbours and the 16 below fold; every character is kept."""
    from daemon.core.marks import Fold, folded

    text = "".join(f"line {i}\n" for i in range(1, 41))
    parts = folded(mark(text, [(20, 20, "line 20")]))
    assert [(type(p).__name__, p.lines if isinstance(p, Fold) else p.marked) for p in parts] == [
        ("Fold", 16), ("Piece", False), ("Piece", True), ("Piece", False), ("Fold", 17),
    ]  # fmt: skip
    assert "".join(p.text for p in parts) == text


def test_short_unmarked_stretches_are_not_folded():
    """Fewer than eight lines beyond the kept ones stay as they are."""
    from daemon.core.marks import folded

    assert folded(mark(TEXT, [(2, 2, "words")])) == mark(TEXT, [(2, 2, "words")])
