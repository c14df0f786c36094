"""StructureAwareChunker with a tokenizer that counts every slice whole (``tiktoken:o200k_base``):
the code points it counts stay linear in a long paragraph, not quadratic."""

from __future__ import annotations

import pytest

from transforms.chunkers import StructureAwareChunker
from transforms.documents import Document
from transforms.tokenizers import BpeTokenizer


class _Metered:
    """A whole-count tokenizer that adds up the code points it is asked to count."""

    def __init__(self, inner: BpeTokenizer) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.max_token_chars = inner.max_token_chars
        self.counted = 0

    def count(self, text: str) -> int:
        self.counted += len(text)
        return self.inner.count(text)

    def boundaries(self, text: str):
        return self.inner.boundaries(text)


@pytest.fixture(scope="module")
def o200k() -> BpeTokenizer:
    return BpeTokenizer("o200k_base")


@pytest.mark.parametrize("unit", ["\U0001f600", "a", "\u0301"])
def test_a_long_run_of_one_character_is_counted_in_linear_code_points(o200k, unit):
    # One line of 60,000 code points: about 470 chunks of 128 tokens (emoji: 2 a piece) or far
    # fewer ('a': 8 a token). Counting the rest of the line whole at every chunk would count
    # about 470 * 30,000 = 14 M code points; the parts near each cut need a few hundred each.
    text = "x" + unit * 60_000
    tokenizer = _Metered(o200k)
    chunker = StructureAwareChunker(tokenizer=tokenizer, max_tokens=128)
    chunks = chunker.chunk(Document(id="d", content=text), tokenizer_identity=o200k.identity)
    assert "".join(c.embedding_text for c in chunks) == text
    assert all(o200k.count(c.embedding_text) <= 128 for c in chunks)
    assert tokenizer.counted < 100 * len(text)
