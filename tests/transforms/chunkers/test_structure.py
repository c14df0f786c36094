"""HeadingChunker and StructureAwareChunker: exact chunks of small hand-written documents.

Budgets are in UTF-8 bytes (``Utf8ByteTokenizer``) where the expected chunks are worked out by
hand, and in cl100k_base tokens where the tokenizer matters.
"""

from __future__ import annotations

import dataclasses
from itertools import pairwise

import pytest

from tests.conftest import REPO
from transforms.chunkers import ChunkingError, HeadingChunker, StructureAwareChunker
from transforms.documents import Document
from transforms.structure.normalizers import NormalizerRegistry
from transforms.structure.normalizers.markdown import normalize_markdown
from transforms.structure.packing import build_embedding_text
from transforms.structure.validation import validate_structure_chunks
from transforms.tokenizers import Utf8ByteTokenizer

BYTES = Utf8ByteTokenizer()


def _doc(content: str, content_format: str = "markdown") -> Document:
    return Document(id="d", content=content, content_format=content_format, metadata={"source": "test"})


def _chunks(chunker, content: str, content_format: str = "markdown"):
    identity = getattr(getattr(chunker, "tokenizer", None), "identity", "none")
    return chunker.chunk(_doc(content, content_format), tokenizer_identity=identity)


def _table(chunks):
    """(text, prefix part of embedding_text, headings, start_offset, context, split) per chunk."""
    return [
        (
            c.text,
            c.embedding_text[: len(c.embedding_text) - len(c.text)],
            c.headings,
            c.start_offset,
            c.metadata["structure"]["context"],
            c.metadata["structure"]["split"],
        )
        for c in chunks
    ]


# -- HeadingChunker ------------------------------------------------------------------------------

SECTIONS = (
    "Pre text\n\n"
    "# A\n\n## B\n\nbody b\n\n```\n# not\n```\n\n"
    "## C\nbody c\n\n"
    "Setext\n------\n\nbody s\n\n"
    "# D\n### E\n\ne body\n"
)


def test_heading_chunker_whole_sections_with_their_ancestors():
    chunks = _chunks(HeadingChunker(), SECTIONS)
    assert [(c.text, c.headings, c.start_offset, c.end_offset) for c in chunks] == [
        # Text before the first heading: an empty path.
        ("Pre text\n\n", (), 0, 10),
        # "# A" has no text of its own: it travels with its first subsection (a verbatim slice);
        # "# not" inside the fence is code, not a heading.
        ("# A\n\n## B\n\nbody b\n\n```\n# not\n```\n\n", ("A", "B"), 10, 44),
        # Later subsections get the ancestor's heading line in front: no longer a verbatim slice.
        ("# A\n\n## C\nbody c\n\n", ("A", "C"), None, None),
        # Setext headings count.
        ("# A\n\nSetext\n------\n\nbody s\n\n", ("A", "Setext"), None, None),
        # Levels may skip (1 then 3).
        ("# D\n### E\n\ne body\n", ("D", "E"), 80, 98),
    ]
    assert chunks[2].metadata["structure"]["spans"] == [[10, 15], [44, 57]]
    assert chunks[2].metadata["structure"]["context"] == "headings"
    assert all(c.embedding_text == c.text for c in chunks)
    assert all(c.metadata["source"] == "test" for c in chunks)


def test_heading_chunker_names_a_title_its_subsection_repeats_once():
    chunks = _chunks(HeadingChunker(), "# A\n\nintro\n\n## A\n\nbody\n\n### B\n\nmore\n")
    assert [(c.text, c.headings) for c in chunks] == [
        ("# A\n\nintro\n\n", ("A",)),
        ("# A\n\n## A\n\nbody\n\n", ("A",)),
        ("# A\n\n## A\n\n### B\n\nmore\n", ("A", "B")),
    ]


@pytest.mark.parametrize("text", ["# A\n\n##\n\n### A\n\nbody text\n", "# A\n\n## \n\n### A\n\nbody text\n"])
def test_a_title_repeated_across_an_untitled_section_is_named_once(text):
    """The repeat is of the nearest title kept, not of the parent node: an empty heading between
    two "A" leaves one 'A' in headings and prefix, not ('A', 'A')."""
    chunks = _chunks(HeadingChunker(), text)
    assert [c.headings for c in chunks] == [("A",)]
    chunks = _chunks(_bytes(max_tokens=24, target_tokens=20), text)
    assert [(c.headings, c.metadata["structure"]["prefix"]) for c in chunks] == [(("A",), []), (("A",), ["A"])]


def test_heading_chunker_crlf_and_unclosed_fence():
    chunks = _chunks(HeadingChunker(), "# T\r\n\r\nx\r\n\r\n```\r\n# inside\r\nrest\r\n")
    assert [(c.text, c.headings) for c in chunks] == [("# T\r\n\r\nx\r\n\r\n```\r\n# inside\r\nrest\r\n", ("T",))]


def test_heading_chunker_has_no_budget_and_validates():
    chunks = _chunks(HeadingChunker(), SECTIONS)
    result = validate_structure_chunks(SECTIONS, chunks, tokenizer=BYTES, max_tokens=10_000)
    assert result.problems == () and result.excluded_characters == 0 and result.classification == "complete"


# -- StructureAwareChunker: packing ------------------------------------------------------------


def _bytes(**params) -> StructureAwareChunker:
    params.setdefault("min_preferred_tokens", 0)
    return StructureAwareChunker(tokenizer=BYTES, **params)


def test_small_document_is_one_chunk_with_its_heading_path():
    text = "# Guide\n\nIntro.\n\n## Install\n\nRun it.\n"
    chunks = _chunks(_bytes(max_tokens=600), text)
    assert _table(chunks) == [(text, "", ("Guide",), 0, None, None)]
    assert chunks[0].metadata["structure"]["sections"] == 2  # "# Guide" and "## Install"


def test_sections_merge_up_to_the_target_then_the_path_prefixes_the_embedding_text():
    text = "# Guide\n\nIntro.\n\n## Code\n\n```python\nline_one = 1\nline_two = 2\nline_three = 3\n```\n"
    chunks = _chunks(_bytes(max_tokens=80, target_tokens=60), text)
    assert _table(chunks) == [
        ("# Guide\n\nIntro.\n\n", "", ("Guide",), 0, None, None),
        # The code block fits 80 bytes with its path "Guide": never split.
        (text[17:], "Guide\n\n", ("Guide", "Code"), 17, None, None),
    ]
    assert chunks[1].embedding_text == "Guide\n\n" + text[17:]
    assert chunks[1].embedding_text == build_embedding_text(chunks[1].text, chunks[1].metadata)


def test_oversized_code_is_split_between_lines_and_the_fence_reopened():
    text = "# Guide\n\nIntro.\n\n## Code\n\n```python\nline_one = 1\nline_two = 2\nline_three = 3\n```\n"
    chunks = _chunks(_bytes(max_tokens=50, target_tokens=45, cuts="greedy"), text)
    assert _table(chunks) == [
        ("# Guide\n\nIntro.\n\n", "", ("Guide",), 0, None, None),
        ("## Code\n\n```python\nline_one = 1\n", "Guide\n\n", ("Guide", "Code"), 17, None, "code"),
        ("```python\nline_two = 2\n", "Guide > Code\n\n", ("Guide", "Code"), None, "code_fence", "code"),
        ("```python\nline_three = 3\n```\n", "Guide > Code\n\n", ("Guide", "Code"), None, "code_fence", "code"),
    ]
    # The re-opened fence is the source's own fence line: the text is its spans, concatenated.
    assert chunks[2].metadata["structure"]["spans"] == [[26, 36], [49, 62]]
    assert all(BYTES.count(c.embedding_text) <= 50 for c in chunks)


def test_a_closing_fence_is_never_a_part_of_its_own():
    # Without the rule, 32 bytes gave a last part "```python\n```\n": the fence re-opened and closed
    # on nothing (and 21 bytes a part "```\n"). The closing fence goes with the last line of code.
    text = "## Code\n\n```python\nline_one = 1\nline_two = 2\n```\n"
    assert _table(_chunks(_bytes(max_tokens=32, target_tokens=32, cuts="greedy"), text)) == [
        ("## Code\n\n```python\nline_one = 1\n", "", ("Code",), 0, None, "code"),
        ("```python\nline_two = 2\n```\n", "", ("Code",), None, "code_fence", "code"),
    ]
    assert _table(_chunks(_bytes(max_tokens=21, target_tokens=21, cuts="greedy"), text)) == [
        ("## Code\n\n```python\n", "", ("Code",), 0, None, "code"),
        ("line_one = 1\n", "Code\n\n", ("Code",), 19, None, "code"),
        ("line_two = 2\n```\n", "", ("Code",), 32, None, "code"),
    ]
    # A tilde fence, and a block whose last line is code, not a fence (no closing fence: kept as is).
    tilde = "~~~\nline_one = 1\nline_two = 2\n~~~~\n"
    assert [c.text for c in _chunks(_bytes(max_tokens=24, target_tokens=24, cuts="greedy"), tilde)] == [
        "~~~\nline_one = 1\n",
        "~~~\nline_two = 2\n~~~~\n",
    ]
    unclosed = "```\nline_one = 1\nline_two = 2\n"
    assert [c.text for c in _chunks(_bytes(max_tokens=20, target_tokens=20, cuts="greedy"), unclosed)] == [
        "```\nline_one = 1\n",
        "```\nline_two = 2\n",
    ]


TABLE = "## Data\n\n| key | value |\n|-----|-------|\n" + "".join(f"| k{i} | v{i} |\n" for i in range(6))


def test_oversized_table_is_split_between_rows_with_the_header_repeated():
    chunks = _chunks(_bytes(max_tokens=100, target_tokens=90, cuts="greedy"), TABLE)
    header = "| key | value |\n|-----|-------|\n"
    assert _table(chunks) == [
        (
            "## Data\n\n" + header + "| k0 | v0 |\n| k1 | v1 |\n| k2 | v2 |\n| k3 | v3 |\n",
            "",
            ("Data",),
            0,
            None,
            "table",
        ),
        (header + "| k4 | v4 |\n| k5 | v5 |\n", "Data\n\n", ("Data",), None, "table_header", "table"),
    ]
    assert all(BYTES.count(c.embedding_text) <= 100 for c in chunks)


def test_a_header_too_large_to_repeat_still_splits_between_rows():
    # The header (32 bytes) and a row (12) do not fit 40 together, and the header is over half of it.
    chunks = _chunks(_bytes(max_tokens=40, target_tokens=40), TABLE)
    assert [c.metadata["structure"]["context"] for c in chunks] == [None] * 5
    assert chunks[0].text == "## Data\n\n"  # (the heading, the header and a row do not fit 40 either)
    assert all(c.text.endswith("|\n") for c in chunks[1:])  # every cut is between rows
    assert "".join(c.text for c in chunks) == TABLE


def test_lists_split_between_items_and_nested_lists():
    text = "- item one is here\n- item two is here\n  - nested a\n  - nested b\n- item three\n"
    chunks = _chunks(_bytes(max_tokens=40, target_tokens=30, cuts="greedy"), text)
    assert [c.text for c in chunks] == [
        "- item one is here\n",
        "- item two is here\n",
        "  - nested a\n  - nested b\n",
        "- item three\n",
    ]
    assert "".join(c.text for c in chunks) == text


def test_prose_is_split_at_sentences_and_the_space_between_is_left_out():
    chunks = _chunks(
        _bytes(max_tokens=25, target_tokens=20), "One sentence here. Two sentence here. Three sentence here."
    )
    assert [(c.text, c.start_offset, c.metadata["structure"]["split"]) for c in chunks] == [
        ("One sentence here.", 0, "prose"),
        ("Two sentence here.", 19, "prose"),
        ("Three sentence here.", 38, "prose"),
    ]


@pytest.mark.parametrize(
    "text, target_tokens, max_tokens, expected",
    [
        # UTF-8 bytes: 3 a character. Engine 2 had no cut without whitespace after 。！？ and cut at
        # its budget: ("猫が寝た。犬が吠えた！「本", 0), ("当？」と聞いた。", 13).
        (
            "猫が寝た。犬が吠えた！「本当？」と聞いた。",
            30,
            40,
            [("猫が寝た。", 0), ("犬が吠えた！", 5), ("「本当？」と聞いた。", 11)],
        ),
        ("一句。二句。 Three here. 四句！", 15, 20, [("一句。", 0), ("二句。", 3), ("Three here.", 7), ("四句！", 19)]),
    ],
)
def test_chinese_and_japanese_prose_is_split_at_its_sentence_ends(text, target_tokens, max_tokens, expected):
    """。！？ end a sentence with no whitespace after them: a long CJK paragraph is cut at them, not
    at token boundaries mid-word with every chunk at the full budget."""
    chunks = _chunks(_bytes(max_tokens=max_tokens, target_tokens=target_tokens), text, "text")
    assert [(c.text, c.start_offset) for c in chunks] == expected
    assert all(text[c.start_offset : c.end_offset] == c.text for c in chunks)


def test_a_section_that_repeats_its_parents_title_is_one_heading_with_it():
    """An HTML page's <title> over an h2 of the same text (193 of the corpus's 284 pages) made
    every chunk's heading path say it twice. A section whose title repeats its parent's is one
    heading with it: the path gives the title once, and a chunk that opens with the inner heading
    line has no prefix of it at all (the line is in its text)."""
    text = "# Guide\n\nIntro.\n\n## Guide\n\n```python\nline_one = 1\nline_two = 2\nline_three = 3\n```\n"
    assert _table(_chunks(_bytes(max_tokens=50, target_tokens=45, cuts="greedy"), text)) == [
        ("# Guide\n\nIntro.\n\n", "", ("Guide",), 0, None, None),
        ("## Guide\n\n```python\nline_one = 1\n", "", ("Guide",), 17, None, "code"),
        ("```python\nline_two = 2\n", "Guide\n\n", ("Guide",), None, "code_fence", "code"),
        ("```python\nline_three = 3\n```\n", "Guide\n\n", ("Guide",), None, "code_fence", "code"),
    ]
    text = "# Guide\n\n## Guide\n\nIntro.\n\n### Guide\n\nMore.\n\n### Other\n\nEnd.\n"
    assert _table(_chunks(_bytes(max_tokens=30, target_tokens=25, cuts="greedy"), text)) == [
        ("# Guide\n\n## Guide\n\nIntro.\n\n", "", ("Guide",), 0, None, None),
        ("### Guide\n\nMore.\n\n", "", ("Guide",), 27, None, None),
        ("### Other\n\nEnd.\n", "Guide\n\n", ("Guide", "Other"), 45, None, None),
    ]


def test_a_long_heading_path_is_shortened_outermost_first_never_the_text():
    text = "# A very long title that eats room\n\n## Another long subtitle\n\nText here is long enough.\n"
    chunks = _chunks(_bytes(max_tokens=40, target_tokens=40), text)
    assert [(c.text, c.embedding_text, c.metadata["structure"]["prefix_dropped"]) for c in chunks] == [
        ("# A very long title that eats room\n\n", "# A very long title that eats room\n\n", 0),
        ("## Another long subtitle\n\n", "## Another long subtitle\n\n", 1),
        ("Text here is long enough.\n", "Text here is long enough.\n", 2),
    ]


def test_crlf_setext_and_atx_headings():
    text = "Title\r\n=====\r\n\r\nBody one.\r\n\r\nSub\r\n---\r\n\r\nBody two.\r\n"
    chunks = _chunks(_bytes(max_tokens=30, target_tokens=20), text)
    assert _table(chunks) == [
        ("Title\r\n=====\r\n\r\nBody one.\r\n\r\n", "", ("Title",), 0, None, None),
        ("Sub\r\n---\r\n\r\nBody two.\r\n", "Title\n\n", ("Title", "Sub"), 29, None, None),
    ]


def test_no_merge_across_top_level_sections_unless_allowed():
    text = "# One\n\na\n\n# Two\n\nb\n"
    apart = _chunks(_bytes(max_tokens=600), text)
    assert [c.text for c in apart] == ["# One\n\na\n\n", "# Two\n\nb\n"]
    together = _chunks(_bytes(max_tokens=600, allow_cross_top_level_merge=True), text)
    assert [c.text for c in together] == [text]
    assert together[0].metadata["structure"]["sections"] == 2


def test_small_chunks_merge_with_a_neighbour_of_the_same_top_level_section():
    text = "Intro.\n\n# Title\n\n" + "x" * 30 + "\n"
    # Without min_preferred_tokens the preamble stands alone; with it, it joins the section.
    assert len(_chunks(_bytes(max_tokens=40, target_tokens=40), text)) == 2
    merged = _chunks(_bytes(max_tokens=60, target_tokens=60, min_preferred_tokens=20), text)
    assert [(c.text, c.headings) for c in merged] == [(text, ())]


def test_overlap_repeats_whole_blocks_within_the_bound():
    text = "# S\n\n" + "".join(f"Paragraph number {i}.\n\n" for i in range(8))
    chunks = _chunks(_bytes(max_tokens=80, target_tokens=70, overlap_tokens=25, max_overlap_tokens=25), text)
    assert len(chunks) > 2
    for previous, current in pairwise(chunks):
        overlap = previous.end_offset - current.start_offset
        assert 0 < overlap <= 25 and text[current.start_offset : previous.end_offset].startswith("Paragraph")
    result = validate_structure_chunks(text, chunks, tokenizer=BYTES, max_tokens=80, max_overlap_tokens=25)
    assert result.problems == () and 0 < result.max_overlap <= 25


def test_reject_policy_leaves_an_oversized_block_whole_for_validation_to_reject():
    text = "# T\n\n" + "word " * 30 + "\n"
    chunks = _chunks(_bytes(max_tokens=40, oversized_block_policy="reject"), text)
    assert any(BYTES.count(c.embedding_text) > 40 for c in chunks)
    result = validate_structure_chunks(text, chunks, tokenizer=BYTES, max_tokens=40)
    assert [p.reason for p in result.problems] == ["token_budget_exceeded"] and result.oversized_chunks == 1


def test_preserve_code_blocks_false_splits_code_as_prose():
    text = "```\n" + "".join(f"x{i} = {i}\n" for i in range(10)) + "```\n"
    chunks = _chunks(_bytes(max_tokens=30, preserve_code_blocks=False), text)
    assert all(c.metadata["structure"]["context"] is None for c in chunks)
    assert {c.metadata["structure"]["split"] for c in chunks} == {"prose"}


def test_same_input_same_chunks_and_ids(tokenizer):
    chunker = StructureAwareChunker(tokenizer=tokenizer, max_tokens=64)
    first = _chunks(chunker, SECTIONS * 5)
    again = _chunks(StructureAwareChunker(tokenizer=tokenizer, max_tokens=64), SECTIONS * 5)
    assert [(c.chunk_id, c.text) for c in first] == [(c.chunk_id, c.text) for c in again]
    assert chunker.config_hash == StructureAwareChunker(tokenizer=tokenizer, max_tokens=64).config_hash
    assert chunker.config_hash != StructureAwareChunker(tokenizer=tokenizer, max_tokens=65).config_hash


def test_token_budget_is_exact_in_cl100k(tokenizer, recount):
    text = (SECTIONS + TABLE + "Sentence one is here. " * 80 + "\n\n```py\n" + "print(1)\n" * 120 + "```\n") * 3
    for max_tokens in (24, 64, 200, 512):
        chunks = _chunks(StructureAwareChunker(tokenizer=tokenizer, max_tokens=max_tokens), text)
        assert all(recount(c.embedding_text) <= max_tokens for c in chunks), max_tokens
        result = validate_structure_chunks(text, chunks, tokenizer=tokenizer, max_tokens=max_tokens)
        assert result.problems == (), result.problems[:3]


# -- formats, configuration, validation ---------------------------------------------------------


def test_accepted_formats_follow_the_registry():
    chunker = StructureAwareChunker(tokenizer=BYTES, normalizers=NormalizerRegistry({"markdown": normalize_markdown}))
    assert chunker.accepted_content_formats == frozenset({"markdown"})
    with pytest.raises(ChunkingError) as err:
        _chunks(chunker, "plain", content_format="text")
    assert err.value.reason == "unsupported_content_format"
    assert StructureAwareChunker(tokenizer=BYTES).accepted_content_formats == frozenset(
        {"markdown", "text", "rst", "html", "docling"}
    )


def test_invalid_docling_json_is_a_chunking_error():
    with pytest.raises(ChunkingError) as err:
        _chunks(_bytes(max_tokens=100), "{not json", content_format="docling")
    assert err.value.reason == "invalid_docling_json"


@pytest.mark.parametrize(
    "params, message",
    [
        ({"max_tokens": 0}, "max_tokens must be >= 1, got 0"),
        ({"max_tokens": 100, "target_tokens": 200}, "target_tokens must be <= max_tokens (100), got 200"),
        ({"min_preferred_tokens": 500}, "min_preferred_tokens must be <= target_tokens (400), got 500"),
        ({"overlap_tokens": 60}, "overlap_tokens must be <= max_overlap_tokens (50), got 60"),
        ({"semantic_mode": "llm"}, "semantic_mode must be one of ('heuristic', 'refiner'), got 'llm'"),
        ({"semantic_refiner": object()}, "semantic_refiner is only used with semantic_mode 'refiner'"),
        ({"semantic_mode": "refiner", "semantic_refiner": object()}, "needs a ChatBoundaryRefiner"),
        ({"oversized_block_policy": "truncate"}, "oversized_block_policy must be one of"),
        ({"merge_small_sections": "yes"}, "merge_small_sections must be true or false, got 'yes'"),
        ({"normalizers": {"markdown": None}}, "normalizers must be a NormalizerRegistry"),
    ],
)
def test_bad_parameters_name_the_value(params, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        StructureAwareChunker(tokenizer=BYTES, **params)


def test_target_and_min_preferred_shrink_to_a_small_max_tokens():
    chunker = StructureAwareChunker(tokenizer=BYTES, max_tokens=64)
    assert (chunker.target_tokens, chunker.min_preferred_tokens) == (64, 64)
    assert StructureAwareChunker(tokenizer=BYTES, max_tokens=512).to_dict()["target_tokens"] == 400


def test_validation_catches_tampered_and_missing_chunks():
    text = "# A\n\none\n\n# B\n\ntwo\n"
    chunks = _chunks(_bytes(max_tokens=600), text)
    assert len(chunks) == 2
    ok = validate_structure_chunks(text, chunks, tokenizer=BYTES, max_tokens=600)
    assert ok.problems == () and ok.retained_characters == ok.source_characters == len("".join(text.split()))

    from dataclasses import replace

    tampered = [replace(chunks[0], text="# A\n\nONE\n\n"), replace(chunks[1], embedding_text="other")]
    reasons = [
        (p.chunk_index, p.reason)
        for p in validate_structure_chunks(text, tampered, tokenizer=BYTES, max_tokens=600).problems
    ]
    assert reasons == [(0, "offset_mismatch"), (1, "embedding_text_mismatch"), (None, "incomplete_coverage")]

    missing = validate_structure_chunks(text, chunks[1:], tokenizer=BYTES, max_tokens=600)
    assert [p.reason for p in missing.problems] == [
        "incomplete_coverage"
    ] and missing.excluded_characters == 5  # "#", "A", "one"


def test_a_split_rst_directive_repeats_its_directive_line():
    text = ".. function:: parse(text)\n\n" + "".join(f"   Paragraph {i} of the body.\n\n" for i in range(6))
    chunks = _chunks(_bytes(max_tokens=90, target_tokens=80), text, content_format="rst")
    assert len(chunks) > 1
    assert chunks[0].metadata["structure"]["context"] is None and chunks[0].start_offset == 0
    for chunk in chunks[1:]:
        assert chunk.text.startswith(".. function:: parse(text)\n\n   Paragraph")
        assert chunk.metadata["structure"]["context"] == "directive"
        assert chunk.metadata["structure"]["spans"][0] == [0, 27]
    assert all(BYTES.count(c.embedding_text) <= 90 for c in chunks)


# -- the other formats through the same engine ----------------------------------------------------


def test_plain_text_paragraphs():
    text = "First paragraph here.\n\nSecond one.\n"
    chunks = _chunks(_bytes(max_tokens=30, target_tokens=25), text, content_format="text")
    assert [(c.text, c.start_offset, c.headings, c.content_format) for c in chunks] == [
        ("First paragraph here.\n\n", 0, (), "text"),
        ("Second one.\n", 23, (), "text"),
    ]


def test_html_is_chunked_from_its_markdown_rendering():
    html = (
        "<html><head><title>T</title><script>x()</script></head><body><h1>Guide</h1><p>Intro text.</p>"
        "<h2>Use</h2><table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr>"
        "<tr><td>b</td><td>2</td></tr></table></body></html>"
    )
    chunks = _chunks(_bytes(max_tokens=60), html, content_format="html")
    assert [(c.text, c.embedding_text, c.headings, c.start_offset, c.content_format) for c in chunks] == [
        ("# Guide\n\nIntro text.\n\n", "# Guide\n\nIntro text.\n\n", ("Guide",), None, "markdown"),
        (
            "## Use\n\n| k | v |\n| --- | --- |\n| a | 1 |\n| b | 2 |\n",
            "Guide\n\n## Use\n\n| k | v |\n| --- | --- |\n| a | 1 |\n| b | 2 |\n",
            ("Guide", "Use"),
            None,
            "markdown",
        ),
    ]


def test_docling_documents_keep_their_pages():
    from docling_core.types.doc import DoclingDocument
    from docling_core.types.doc.base import BoundingBox, Size
    from docling_core.types.doc.document import ProvenanceItem

    doc = DoclingDocument(name="paged")
    for page in (1, 2):
        doc.add_page(page_no=page, size=Size(width=100, height=100))

    def prov(page):
        return ProvenanceItem(page_no=page, bbox=BoundingBox(l=10, t=20, r=50, b=10), charspan=(0, 1))

    doc.add_title(text="Report", prov=prov(1))
    doc.add_heading(text="Findings", level=1, prov=prov(1))
    doc.add_text(label="text", text="First finding is long enough.", prov=prov(1))
    doc.add_heading(text="Appendix", level=1, prov=prov(2))
    doc.add_text(label="text", text="Second page text.", prov=prov(2))
    chunks = _chunks(_bytes(max_tokens=70, target_tokens=60), doc.model_dump_json(), content_format="docling")
    assert [(c.text, c.headings, c.page_no, c.start_offset, c.content_format) for c in chunks] == [
        ("# Report\n\n## Findings\n\nFirst finding is long enough.\n\n", ("Report", "Findings"), 1, None, "markdown"),
        ("## Appendix\n\nSecond page text.\n", ("Report", "Appendix"), 2, None, "markdown"),
    ]
    assert chunks[1].embedding_text == "Report\n\n## Appendix\n\nSecond page text.\n"


@pytest.mark.parametrize(
    "content, max_tokens", [("漢", 1), ("👍", 2), ("# T\n\n👍👍", 2), ("# Title here\n\n" + "漢" * 5, 1)]
)
def test_a_character_over_the_budget_is_its_own_chunk_not_a_hang(tokenizer, content, max_tokens):
    # A code point needing more tokens than max_tokens must not loop forever.
    chunks = _chunks(StructureAwareChunker(tokenizer=tokenizer, max_tokens=max_tokens), content)
    result = validate_structure_chunks(content, chunks, tokenizer=tokenizer, max_tokens=max_tokens)
    assert result.excluded_characters == 0
    over = [c.text for c in chunks if tokenizer.count(c.embedding_text) > max_tokens]
    assert over and all(len(text) == 1 for text in over)  # only the characters that cannot fit


@pytest.mark.parametrize(
    "content, max_tokens", [("*\n\tcafé", 3), ("# Menü\n\n- a\n-\n\tcafé " + "word " * 200 + "end", 64)]
)
def test_a_tab_indented_item_at_the_end_of_a_non_ascii_document(tokenizer, content, max_tokens):
    # The parser reports a position past the end after expanding the tab: the byte-to-code-point
    # lookup must take it (an IndexError would dead-letter the document).
    chunks = _chunks(StructureAwareChunker(tokenizer=tokenizer, max_tokens=max_tokens), content)
    result = validate_structure_chunks(content, chunks, tokenizer=tokenizer, max_tokens=max_tokens)
    assert result.problems == ()


@pytest.mark.slow
def test_long_documents_chunk_the_same_with_bounded_memory_paths(monkeypatch):
    """Token ends kept in their array (not a list) and long texts encoded in segments change no chunk.

    Also a long paragraph, split in many prose parts whose cut candidates are found lazily.
    """
    import random

    import pyarrow.parquet as pq

    from transforms.structure.packing import limits, prose
    from transforms.tokenizers import TiktokenTokenizer, segments

    rng = random.Random(2)
    words = " ".join(
        "".join(rng.choice("etaoinshrdlu") for _ in range(rng.randint(1, 8))) + rng.choice(["", "", ".", ","])
        for _ in range(30_000)
    )
    sample = pq.read_table(REPO / "sample" / "docs.parquet")
    documents = [Document(id="words", content=words, content_format="text")] + [
        Document(id=i, content=c, content_format=f)
        for i, c, f in zip(*(sample.column(n).to_pylist() for n in ("id", "content", "content_format")))
        if f in ("markdown", "text", "rst")
    ]
    chunker = StructureAwareChunker(tokenizer=TiktokenTokenizer(), max_tokens=128, target_tokens=100)

    def run():
        return [
            [
                (c.text, c.embedding_text, c.start_offset, c.metadata["structure"]["split"])
                for c in chunker.chunk(d, tokenizer_identity="t")
            ]
            for d in documents
        ]

    through = prose.CutCandidates.through
    with monkeypatch.context() as eager:  # every candidate of a paragraph at once
        eager.setattr(prose.CutCandidates, "through", lambda self, position, reach: through(self, -1, float("inf")))
        expected = run()
    assert run() == expected
    monkeypatch.setattr(limits, "LIST_TOKENS", 0)
    monkeypatch.setattr(segments, "SEGMENT_CHARS", 1000)
    assert run() == expected
    assert sum(1 for c in expected[0] if c[3] == "prose") > 100


def test_a_long_text_is_counted_a_part_at_a_time_with_the_same_chunks(monkeypatch, tokenizer):
    """Past limits.PART_CHARS the packer encodes the text a part at a time, cut at stable line starts,
    and keeps the parts apart (never one joined array): no encode sees much more than a part,
    and the chunks are exactly those of one whole encode."""
    from transforms.structure.packing import limits

    section = "# Part {i}\n\nSome prose about part {i}, long enough to need a few tokens. " * 3
    content = "\n\n".join(section.format(i=i) + f"\n\n```\ncode {i}\n```\n\n- a\n- b\n" for i in range(60))
    chunker = StructureAwareChunker(tokenizer=tokenizer, max_tokens=64, target_tokens=48)
    whole = [(c.text, c.start_offset, c.token_count, c.metadata) for c in _chunks(chunker, content)]
    encoded: list[int] = []
    real = type(tokenizer).token_ends
    monkeypatch.setattr(type(tokenizer), "token_ends", lambda self, text: encoded.append(len(text)) or real(self, text))
    monkeypatch.setattr(limits, "PART_CHARS", 500)
    parted = [(c.text, c.start_offset, c.token_count, c.metadata) for c in _chunks(chunker, content)]
    assert parted == whole
    assert len(encoded) > 10 and max(encoded) < 500 + 200 and sum(encoded) == len(content)


@pytest.mark.parametrize("options", [{}, {"overlap_tokens": 12}, {"min_preferred_tokens": 40}])
def test_chunks_stream_out_a_top_level_section_at_a_time_with_the_same_chunks(monkeypatch, tokenizer, options):
    """The packer hands a top-level section's chunks out once it is past the next one: the first
    chunk comes before the last section is packed, and the chunks (small ones merged, overlaps)
    are exactly those of one pass that hands them all out at the end."""
    from transforms.structure.packing.packer import PackingRun

    parts = []
    for i in range(40):
        body = (
            "Tiny." if i % 3 == 0 else f"Prose of part {i}, long enough to need a few tokens of its own. " * (i % 5 + 1)
        )
        parts.append(f"# Top {i % 4}\n\n{body}\n\n## Sub {i}\n\nMore words under it, {i}.\n\n- a {i}\n- b\n")
    content = "\n".join(parts)
    chunker = StructureAwareChunker(tokenizer=tokenizer, max_tokens=64, target_tokens=48, **options)
    sections: list[int] = []
    real_section = PackingRun._section
    monkeypatch.setattr(
        PackingRun,
        "_section",
        lambda self, node, *a: sections.append(len(a) and a[-2] == ()) or real_section(self, node, *a),
    )
    chunks, _ = chunker.stream_with_source(_doc(content), tokenizer_identity=tokenizer.identity)
    first = next(chunks)
    assert sum(sections) < 10  # top-level sections packed when the first chunk came out, of 40
    streamed = [first, *chunks]
    real_done = PackingRun._done_before
    monkeypatch.setattr(PackingRun, "_done_before", lambda self, top: real_done(self, top) if top is None else [])
    at_the_end = _chunks(chunker, content)
    key = lambda c: (c.text, c.start_offset, c.token_count, c.metadata, c.chunk_id)  # noqa: E731
    assert [key(c) for c in streamed] == [key(c) for c in at_the_end]
    assert len(streamed) > 30
    if "min_preferred_tokens" in options:
        assert any(c.metadata["structure"]["sections"] > 1 for c in streamed)  # sections were merged


def test_a_long_texts_token_ends_are_dropped_behind_the_packer(monkeypatch, tokenizer):
    """Parts of a long text are encoded as the packer reaches them and dropped once every chunk
    that starts in them is out: while the chunks stream, only a few parts are held at once."""
    from transforms.structure.packing import counting, limits

    section = "# Part {i}\n\nSome prose about part {i}, long enough to need a few tokens. " * 3
    content = "\n\n".join(section.format(i=i) + f"\n\n```\ncode {i}\n```\n\n- a\n- b\n" for i in range(60))
    chunker = StructureAwareChunker(tokenizer=tokenizer, max_tokens=64, target_tokens=48)
    whole = [(c.text, c.start_offset, c.token_count, c.metadata) for c in _chunks(chunker, content)]
    counters: list = []
    real_init = counting.TokenCounter.__init__
    monkeypatch.setattr(
        counting.TokenCounter, "__init__", lambda self, *a: counters.append(self) or real_init(self, *a)
    )
    monkeypatch.setattr(limits, "PART_CHARS", 500)
    chunks, _ = chunker.stream_with_source(_doc(content), tokenizer_identity=tokenizer.identity)
    held, streamed = [], []
    for c in chunks:
        streamed.append((c.text, c.start_offset, c.token_count, c.metadata))
        held.append(sum(part is not None for part in counters[0]._parts))
    assert streamed == whole
    assert len(counters[0]._parts) > 10 and max(held) <= 4


@pytest.mark.parametrize("part_chars", [None, 300])
def test_non_whitespace_is_counted_as_str_isspace_sees_it(monkeypatch, part_chars):
    """The coverage count (over UTF-8 bytes, a part at a time) equals a count of the code points
    that are not ``str.isspace``, for every whitespace character, at part edges and text ends,
    next to characters that share a whitespace character's lead byte, and with lone surrogates."""
    import random

    from transforms.structure import validation

    if part_chars is not None:
        monkeypatch.setattr(validation, "_PART_CHARS", part_chars)
    rng = random.Random(7)
    spaces = [chr(c) for c in range(0x3001) if chr(c).isspace()]
    # Neighbours of whitespace in UTF-8: same lead byte (C2, E1, E2, E3), controls, surrogates.
    others = [
        "a",
        "\x00",
        "\x08",
        "\x0e",
        "\x1b",
        "\x21",
        "\x7f",
        "\x84",
        "\x86",
        "\xa1",
        "é",
        "\u1681",
        "\u167f",
        "\u200b",
        "\u2027",
        "\u202a",
        "\u2030",
        "\u205e",
        "\u2060",
        "\u3001",
        "\u2fff",
        "—",
        "\ud800",
        "\udfff",
        "😀",
    ]
    assert len(spaces) == 29
    for size in (0, 1, 255, 256, 257, 299, 300, 301, 1000, 5000):
        for mix in (0.05, 0.5, 0.95):
            text = "".join(rng.choice(spaces) if rng.random() < mix else rng.choice(others) for _ in range(size))
            assert validation._non_space(text) == sum(not c.isspace() for c in text), (size, mix)
        tail = "a" * size + rng.choice(spaces)
        assert validation._non_space(tail) == size


def test_pieces_and_packed_chunks_are_built_with_every_field():
    """Pieces and packed chunks are made without their dataclass __init__: each has exactly its
    fields, and equals the object the __init__ builds from them."""
    import dataclasses

    from transforms.chunkers.base import Piece
    from transforms.structure.packing import PackedChunk

    chunker = StructureAwareChunker(tokenizer=BYTES, max_tokens=60, target_tokens=40)
    text = "# A\n\none two three\n\n## B\n\n" + "word " * 40 + "\n\n| h |\n|---|\n| r |\n"
    for content, content_format in ((text, "markdown"), ("<h1>T</h1><p>para</p>", "html")):
        normalized = chunker.normalize(_doc(content, content_format))
        packed = chunker._packer.pack(normalized)
        pieces = list(chunker.split_normalized(normalized))
        assert len(packed) == len(pieces) > 1 if content_format == "markdown" else len(pieces) == 1
        for made, cls in [(c, PackedChunk) for c in packed] + [(p, Piece) for p in pieces]:
            assert set(vars(made)) == {f.name for f in dataclasses.fields(cls)}
            assert made == cls(**vars(made))


def _long_lines_document(seed: int, chars: int) -> str:
    """Markdown with two long lines of random words (no line break inside), between short blocks."""
    import random

    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 9))) for _ in range(300)]
    line = lambda: " ".join(rng.choice(words) for _ in range(chars // 6))[:chars]  # noqa: E731
    return f"Intro words.\n\n{line()}\n\nA short paragraph.\n\n# Heading\n\n{line()}\n\n- a\n- b\n"


@pytest.mark.slow
@pytest.mark.parametrize("options", [{}, {"min_preferred_tokens": 20}, {"overlap_tokens": 12}])
@pytest.mark.parametrize("budget", ["tiktoken", "utf8"])
def test_a_long_line_is_packed_a_part_at_a_time_with_the_same_chunks(monkeypatch, tokenizer, options, budget):
    """A line far longer than a part is encoded a part at a time (cut where the tokenizer says
    its encoding cannot change), its fit test encodes nothing ahead (the lower bound of
    ``max_token_chars``), and its chunks come out while it is packed, the parts behind dropped:
    the chunks are exactly those of one whole encode held to the end, with no part encoded
    twice; counts recounted with tiktoken, texts are slices of the content."""
    from transforms.structure.packing import counting, limits
    from transforms.structure.packing.packer import PackingRun

    budget_tokenizer = tokenizer if budget == "tiktoken" else Utf8ByteTokenizer()
    content = _long_lines_document(4, 60_000 if budget == "tiktoken" else 20_000)
    chunker = StructureAwareChunker(tokenizer=budget_tokenizer, max_tokens=64, target_tokens=48, **options)
    from transforms.chunkers import structure

    packed: list = []  # the packer's chunks, with its own counts (the Chunk's count is the job's)
    real_piece = structure._piece
    monkeypatch.setattr(
        structure, "_piece", lambda source, verbatim, chunk: packed.append(chunk) or real_piece(source, verbatim, chunk)
    )
    key = lambda c: (c.text, c.start_offset, c.end_offset, c.metadata, c.chunk_id, packed[c.chunk_index].token_count)  # noqa: E731

    class Plain:
        """The same tokenizer without part cuts or a token length bound: the unchanged path."""

        identity = budget_tokenizer.identity
        count = budget_tokenizer.count
        token_ends = budget_tokenizer.token_ends
        boundaries = budget_tokenizer.boundaries

        def __init__(self, inner):
            self.count, self.token_ends, self.boundaries = inner.count, inner.token_ends, inner.boundaries

    with monkeypatch.context() as unchanged:
        unchanged.setattr(PackingRun, "_release", lambda self: [])
        reference = StructureAwareChunker(tokenizer=Plain(budget_tokenizer), max_tokens=64, target_tokens=48, **options)
        expected = [key(c) for c in _chunks(reference, content)]
    packed.clear()

    counters: list = []
    encoded: list[int] = []
    real_init = counting.TokenCounter.__init__
    monkeypatch.setattr(
        counting.TokenCounter, "__init__", lambda self, *a: counters.append(self) or real_init(self, *a)
    )
    real_ends = type(budget_tokenizer).token_ends
    monkeypatch.setattr(
        type(budget_tokenizer), "token_ends", lambda self, text: encoded.append(len(text)) or real_ends(self, text)
    )
    monkeypatch.setattr(limits, "PART_CHARS", 500)
    chunks, _ = chunker.stream_with_source(_doc(content), tokenizer_identity=budget_tokenizer.identity)
    streamed, held, reached = [], [], []
    for c in chunks:
        streamed.append(c)
        held.append(sum(part is not None for part in counters[0]._parts))
        reached.append(counters[0]._reached)
    assert [key(c) for c in streamed] == expected
    counter = counters[0]
    assert len(counter._parts) > 20 and counter.encoded_again == 0
    assert max(encoded) < 1000 and sum(encoded) == len(content)  # each part encoded once, none much longer
    # Parts behind the packer dropped while the lines are packed: held are only those it reads
    # ahead (its candidate cuts, 64 * max_tokens + 1024; and near a line's end, where the lower
    # bound no longer rules the rest out, max_token_chars * (max_tokens + 1)).
    ahead = 64 * 64 + 1024 + budget_tokenizer.max_token_chars * 65
    assert max(held) <= ahead // 500 + 4 < len(counter._parts) // 3
    # Chunks of the first long line came out before it was encoded to its end (no whole-tile fit
    # test; its section's chunks are not held until the section ends).
    first_end = content.index("\n\nA short")
    assert sum(1 for r in reached if r < first_end) > 50
    assert len(packed) == len(streamed)
    for c, p in zip(streamed, packed):
        assert content[c.start_offset : c.end_offset] == c.text
        if budget == "tiktoken":
            assert p.token_count == len(tokenizer.encoding.encode_ordinary(c.embedding_text)) <= 64
        else:
            assert p.token_count == len(c.embedding_text.encode("utf-8")) <= 64
    assert sum(1 for c in streamed if c.metadata["structure"].get("split") == "prose") > 20


def test_a_dropped_part_asked_again_is_encoded_again_exactly(tokenizer):
    """A count behind the packer (none is asked, but if one were) encodes the dropped part again."""
    from transforms.structure.packing import Lines, counting, limits

    content = _long_lines_document(5, 6_000)
    lines = Lines(content)
    whole = counting.TokenCounter(content, tokenizer, lines)
    points = list(range(0, len(content) + 1, 97)) + [len(content)]
    expected = [whole.tokens_before(p) for p in points]
    old = limits.PART_CHARS
    limits.PART_CHARS = 400
    try:
        parted = counting.TokenCounter(content, tokenizer, lines)
        assert parted.tokens_before(len(content)) == expected[-1]
        parted.forget_before(len(content))
        assert sum(part is not None for part in parted._parts) == 1 and len(parted._parts) > 10
        assert [parted.tokens_before(p) for p in points] == expected
        assert parted.encoded_again == len(parted._parts) - 1
    finally:
        limits.PART_CHARS = old
    for s, e in [(0, len(content)), (3, 5000), (100, 101), (17, 4000)]:
        assert whole.at_least(s, e) <= whole.span(s, e)
        assert whole.exceeds(s, e, 10) == (whole.span(s, e) > 10)


@pytest.mark.parametrize(
    ("spans", "ok"),
    [
        ([[0, 4]], True),
        (((0, 4),), False),  # not a list
        ([(0, 4)], True),  # a span may be a tuple
        ([[0, 4, 5]], False),
        ([[True, 4]], False),  # a bool is not an offset
        ([[0.0, 4]], False),
        ([[0, "4"]], False),
        ([[4, 4]], False),  # empty
        ([[3, 2]], False),
        ([[-1, 4]], False),
        ([[0, 99]], False),  # past the source
        ([], False),
        (None, False),
    ],
)
def test_validation_reads_only_well_formed_spans_in_range(spans, ok):
    text = "one\n"
    (chunk,) = _chunks(_bytes(max_tokens=600), text)
    structure = {**chunk.metadata["structure"], "spans": spans}
    tampered = dataclasses.replace(chunk, metadata={**chunk.metadata, "structure": structure})
    problems = validate_structure_chunks(text, [tampered], tokenizer=BYTES, max_tokens=600).problems
    assert [p.reason for p in problems] == ([] if ok else ["offset_mismatch", "incomplete_coverage"])
