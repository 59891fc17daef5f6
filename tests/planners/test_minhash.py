"""MinHash, LSH and shingling building blocks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.planners.minhash import MinHasher, Shingler, jaccard, lsh_pairs


def _sets(rng: np.random.Generator, share: float, size: int = 300) -> tuple[np.ndarray, np.ndarray]:
    common = rng.integers(0, 2**63, int(size * share), dtype=np.uint64)
    a = np.concatenate([common, rng.integers(0, 2**63, size - common.size, dtype=np.uint64)])
    b = np.concatenate([common, rng.integers(0, 2**63, size - common.size, dtype=np.uint64)])
    return np.unique(a), np.unique(b)


def test_signature_agreement_estimates_jaccard():
    """The share of equal signature slots is an unbiased estimate of the Jaccard."""
    rng = np.random.default_rng(5)
    hasher = MinHasher(128)
    for share in (0.3, 0.7, 0.9):
        errors = []
        for _ in range(20):
            a, b = _sets(rng, share)
            errors.append(float(np.mean(hasher.signature(a) == hasher.signature(b))) - jaccard(a, b))
        assert abs(np.mean(errors)) < 0.03


def test_signatures_are_seeded():
    """Two hashers with the default seed give identical signatures."""
    shingles = Shingler(5)("a b c d e f g h i j k")
    assert (MinHasher(64).signature(shingles) == MinHasher(64).signature(shingles)).all()


def test_shingles_depend_on_word_order_and_short_texts_get_one():
    """Reordered words give other shingles, and a text shorter than k is one shingle."""
    shingle = Shingler(3)
    assert jaccard(shingle("a b c d"), shingle("d c b a")) == 0.0
    assert shingle("only two").size == 1


def test_lsh_pairs_only_equal_bands():
    """Rows agreeing on a whole band pair up; rows agreeing nowhere do not."""
    signatures = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [7, 7, 7, 7]], dtype=np.uint64)
    assert lsh_pairs(signatures, bands=2, rows=2) == {(0, 1)}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "dé", "e", "f"]), max_size=12).map(" ".join), max_size=12), st.integers(1, 5), st.integers(1, 4), st.integers(1, 40))
def test_shingles_of_many_texts_are_each_texts_own(texts: list[str], size: int, chunk: int, chunk_chars: int):
    """Batched shingling gives every text exactly the array it gets alone, texts shorter
    than a shingle, empty ones and batch edges (by count and by size) included."""
    together = Shingler(size).many(texts, chunk=chunk, chunk_chars=chunk_chars)
    alone = [Shingler(size)(text) for text in texts]
    assert len(together) == len(alone)
    assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(together, alone, strict=True))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=40, unique=True), max_size=30), st.integers(1, 64))
def test_signatures_of_many_sets_are_each_sets_own(values: list[list[int]], block: int):
    """Block by block, every set gets exactly the signature it gets alone: sets larger than a
    block, sets that fill one exactly and block edges included."""
    sets = [np.sort(np.array(v, dtype=np.uint64)) for v in values]
    hasher = MinHasher(16)
    together = hasher.signatures(sets, block=block)
    assert together.shape == (len(sets), 16) and together.dtype == np.uint64
    for row, alone in zip(together, sets, strict=True):
        assert np.array_equal(row, hasher.signature(alone))


def test_an_empty_set_has_no_signature_alone_or_among_others():
    """No minimum of nothing: an empty set raises in a block as it does alone."""
    import pytest

    hasher = MinHasher(8)
    for call in (lambda: hasher.signature(np.empty(0, dtype=np.uint64)), lambda: hasher.signatures([np.array([3], dtype=np.uint64), np.empty(0, dtype=np.uint64)])):
        with pytest.raises(ValueError):
            call()


_WORDS = st.text(st.sampled_from("ab\u00e9\u4e2d\U0001f600-_.:/0"), min_size=1, max_size=30)  # 1 to 120 bytes: one to sixteen blocks


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, max_size=40), st.sampled_from([" ", "  "]), st.booleans())
def test_each_word_gets_one_hash_and_distinct_words_distinct_ones(words: list[str], between: str, padded: bool):
    """The words are what spaces separate (runs of spaces, spaces at either end: no empty
    word); equal words hash alike wherever they are, distinct ones apart, whether they differ
    in their first block, their last, or only in length."""
    from daemon.planners.minhash import word_hashes

    text = between.join(words)
    data = (f" {text} " if padded else text).encode("utf-8")
    hashes, starts = word_hashes(data)
    assert hashes.dtype == np.uint64 and len(hashes) == len(words)
    assert [data[s:].split(b" ", 1)[0].decode("utf-8") for s in starts.tolist()] == words
    by_word = {}
    for word, value in zip(words, hashes.tolist(), strict=True):
        assert by_word.setdefault(word, value) == value
    assert len(set(by_word.values())) == len(by_word)


def test_words_alike_but_for_a_byte_past_the_first_block_or_their_length_hash_apart():
    from daemon.planners.minhash import word_hashes

    words = ["abcdefgh", "abcdefgha", "abcdefghb", "abcdefghabcdefgh", "abcdefghabcdefghx", "a", "aa", "abcdefg"]
    hashes, _ = word_hashes(" ".join(words).encode())
    assert len(set(hashes.tolist())) == len(words)


def test_word_hashes_are_the_same_on_every_machine():
    """Pinned: a change of word hash changes which notes LSH pairs, so it is never incidental."""
    from daemon.planners.minhash import word_hashes

    hashes, starts = word_hashes("memory notes r\u00e9sum\u00e9 consolidation".encode())
    assert starts.tolist() == [0, 7, 13, 22]
    assert hashes.tolist() == [3914511707299442309, 10529614467764197592, 12265369461215688384, 13748716455363441998]


def _word_hash(word: bytes) -> int:
    """A word's hash as ``word_hashes`` defines it, a byte at a time in plain Python."""
    mask = (1 << 64) - 1

    def mix(x: int) -> int:
        x ^= x >> 33
        x = x * 0xFF51AFD7ED558CCD & mask
        x ^= x >> 33
        x = x * 0xC4CEB9FE1A85EC53 & mask
        return x ^ x >> 33

    value = 0x243F6A8885A308D3
    for at in range(0, len(word), 8):
        value = mix(value ^ int.from_bytes(word[at : at + 8], "little"))
    return mix(value ^ len(word))


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORDS, max_size=20))
def test_word_hashes_are_their_definition(words: list[str]):
    """Vectorised over every word at once, each hash is still the one its definition gives."""
    from daemon.planners.minhash import word_hashes

    hashes, _ = word_hashes(" ".join(words).encode("utf-8"))
    assert hashes.tolist() == [_word_hash(w.encode("utf-8")) for w in words]


def test_a_batch_of_texts_holds_at_most_its_characters_or_one_text():
    """Large notes are shingled a few at a time: a batch's arrays stay bounded."""
    from daemon.planners.minhash import _batches

    texts = ["x" * 30, "y" * 5, "z" * 10, "w" * 100, "v"]
    assert list(_batches(texts, 100, 20)) == [["x" * 30], ["y" * 5, "z" * 10, "w" * 100], ["v"]]
    assert list(_batches(texts, 2, 1000)) == [texts[:2], texts[2:4], texts[4:]]
    assert list(_batches([], 2, 10)) == []
