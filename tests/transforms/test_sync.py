"""What a vector-store sync does with each chunk key (``transforms.sync``), without Beam or a store."""

from __future__ import annotations

import pytest

from transforms.sync import DuplicateChunkKey, plan, store_fingerprint

ROW = {
    "chunk_key": "k" * 64,
    "chunk_id": "i" * 64,
    "document_id": "guide",
    "chunk_index": 0,
    "text": "Stop at bends.",
    "embedding_text": "Tips\n\nStop at bends.",
    "metadata": '{"headings": ["Tips"]}',
}


def test_a_key_the_store_lacks_is_embedded():
    assert plan("k", [ROW], []) == ("embed", ROW)


def test_a_key_held_with_the_same_fingerprint_is_reused():
    assert plan("k", [ROW], [store_fingerprint(ROW)]) == ("reuse", ROW)


@pytest.mark.parametrize(
    ("column", "value"),
    [("chunk_id", "j" * 64), ("metadata", '{"headings": ["Hints"]}'), ("text", "bends."), ("document_id", "g2")],
)
def test_a_key_held_with_other_columns_is_updated(column, value):
    moved = {**ROW, column: value}
    assert plan("k", [moved], [store_fingerprint(ROW)]) == ("update", moved)


def test_a_key_the_run_did_not_produce_is_deleted():
    assert plan("k", [], [store_fingerprint(ROW)]) == ("delete", None)


def test_two_chunks_with_one_key_are_an_error():
    with pytest.raises(DuplicateChunkKey, match=r'written 2 times.*"guide"'):
        plan("k", [ROW, ROW], [])


def test_the_fingerprint_tells_columns_apart_where_their_concatenation_is_the_same():
    one = {**ROW, "text": "ab", "embedding_text": "c"}
    other = {**ROW, "text": "a", "embedding_text": "bc"}
    assert store_fingerprint(one) != store_fingerprint(other)
    assert store_fingerprint(ROW) == store_fingerprint(dict(ROW))
    assert store_fingerprint({**ROW, "metadata": None}) == store_fingerprint({**ROW, "metadata": ""})
