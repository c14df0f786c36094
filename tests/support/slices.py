"""Slice counts of a Hugging Face tokenizer checked against whole encodes of the slices."""

from __future__ import annotations

import itertools

from hypothesis import strategies as st

from transforms.tokenizers import HuggingFaceTokenizer


def whole_count(tok, text: str) -> int:
    """The reference count: one whole encode (``HuggingFaceTokenizer.count``), whatever fast path
    ``tok``'s own class takes."""
    return HuggingFaceTokenizer.count(tok, text)


def check_slices(tok, text: str, data, draws: int = 10) -> None:
    """``tok.count(text)``, ``draws`` drawn slices' ``count`` and a drawn partition's ``counts``
    from ``tok.slice_counter(text)`` all equal whole encodes (``data``: hypothesis's ``st.data()``)."""
    assert tok.count(text) == whole_count(tok, text)
    counter = tok.slice_counter(text)
    n = len(text)
    for _ in range(draws):
        a = data.draw(st.integers(0, n))
        b = data.draw(st.integers(a, n))
        assert counter.count(a, b) == whole_count(tok, text[a:b]), (a, b)
    points = sorted({0, n, *data.draw(st.lists(st.integers(0, n), max_size=8))})
    assert counter.counts(points) == [whole_count(tok, text[a:b]) for a, b in itertools.pairwise(points)]
