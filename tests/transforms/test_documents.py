"""Chunk identities: ``chunk_key`` depends on the document and what is embedded, not on where the
chunk stands, so an edit changes the keys of the chunks it touches only."""

from __future__ import annotations

import hashlib

from transforms.chunkers.structure import StructureAwareChunker
from transforms.documents import CHUNK_SCHEMA, ChunkKeys, Document, chunk_key, is_chunk_key
from transforms.tokenizers import Utf8ByteTokenizer

BYTES = Utf8ByteTokenizer()


def test_chunk_key_is_the_sha256_of_id_embedded_text_and_occurrence():
    expected = hashlib.sha256(b"guide.md\x00Tips\n\nStop at bends.\x000").hexdigest()
    assert chunk_key("guide.md", "Tips\n\nStop at bends.") == expected
    assert chunk_key("guide.md", "Tips\n\nStop at bends.", 2) == (
        hashlib.sha256(b"guide.md\x00Tips\n\nStop at bends.\x002").hexdigest()
    )
    assert CHUNK_SCHEMA.names[-1] == "chunk_key"


def test_repeated_embedded_texts_get_their_occurrence_numbers():
    keys = ChunkKeys("d")
    got = [keys.next(text) for text in ["A.", "B.", "A.", "A.", "B."]]
    assert got == [
        chunk_key("d", "A.", 0),
        chunk_key("d", "B.", 0),
        chunk_key("d", "A.", 1),
        chunk_key("d", "A.", 2),
        chunk_key("d", "B.", 1),
    ]
    assert is_chunk_key(got[3], "d", "A.", 3) and not is_chunk_key(got[3], "d", "A.", 1)
    assert not is_chunk_key(got[0], "e", "A.", 0)  # another document's


def _sections(titles: list[str]) -> str:
    return "".join(f"## {t}\n\nThe {t.lower()} section has one paragraph of its own words.\n\n" for t in titles)


def _chunks(content: str):
    chunker = StructureAwareChunker(tokenizer=BYTES, max_tokens=120, min_preferred_tokens=0)
    return chunker.chunk(Document(id="notes", content=content, content_format="markdown"), tokenizer_identity="b")


def test_a_section_inserted_near_the_top_changes_no_other_chunks_key():
    titles = ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"]
    before = _chunks(_sections(titles))
    after = _chunks(_sections(titles[:1] + ["Inserted"] + titles[1:]))
    assert len(before) == 5 and len(after) == 6  # one chunk a section
    assert [c.chunk_key for c in after[:1] + after[2:]] == [c.chunk_key for c in before]
    assert after[1].chunk_key not in {c.chunk_key for c in before}
    # chunk_id is positional: every chunk after the insert has a new one
    assert {c.chunk_id for c in after[2:]}.isdisjoint({c.chunk_id for c in before})


def test_an_edited_paragraph_changes_its_own_chunks_key_only():
    content = _sections(["Alpha", "Beta", "Gamma"])
    edited = content.replace("The beta section", "The edited beta section")
    before, after = _chunks(content), _chunks(edited)
    changed = [i for i, (b, a) in enumerate(zip(before, after)) if b.chunk_key != a.chunk_key]
    assert len(before) == len(after) == 3 and changed == [1]


def test_keys_are_unique_within_a_document_with_repeated_sections():
    chunks = _chunks(_sections(["Same", "Same", "Same", "Other"]))
    assert len(chunks) == 4 and len({c.chunk_key for c in chunks}) == 4
    assert all(is_chunk_key(c.chunk_key, c.document_id, c.embedding_text, c.chunk_index) for c in chunks)
