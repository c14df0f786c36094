"""Tests of the plain-text normalizer, and block checks shared by the normalizer tests."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.structure.normalizers.text import normalize_text, split_lines
from transforms.structure.tree import Node, NormalizedDocument, check_blocks

_FIELDS = ("level", "title", "language", "fence", "header_rows")


def outline(doc: NormalizedDocument, nodes: Iterable[Node] | None = None) -> list[tuple]:
    """Blocks as ``(kind, sliced text[, non-default fields][, children])`` tuples, for exact asserts."""
    out = []
    for node in doc.blocks if nodes is None else nodes:
        entry: tuple = (node.kind, doc.text[node.start : node.end])
        fields = {name: getattr(node, name) for name in _FIELDS if getattr(node, name)}
        if fields:
            entry += (fields,)
        if node.children:
            entry += (outline(doc, node.children),)
        out.append(entry)
    return out


def assert_well_formed(doc: NormalizedDocument) -> None:
    """``check_blocks`` plus: every node starts at a line start, ends before a line break, has text."""
    check_blocks(doc)
    text = doc.text
    for block in doc.blocks:
        for node in block.walk():
            assert node.start == 0 or text[node.start - 1] in "\r\n", f"{node} does not start a line"
            assert text[node.end - 1] not in "\r\n", f"{node} ends with a line break"
            assert text[node.start : node.end].strip(), f"{node} is whitespace only"


def assert_no_text_lost(doc: NormalizedDocument) -> None:
    """Nothing but whitespace lies outside every top-level block."""
    text = doc.text
    previous = 0
    for block in doc.blocks:
        gap = text[previous : block.start]
        assert not gap.strip(), f"text outside any block before {block}: {gap[:80]!r}"
        previous = block.end
    assert not text[previous:].strip(), f"text outside any block at the end: {text[previous:][:80]!r}"


def test_split_lines_breaks_only_on_lf_crlf_and_lone_cr():
    assert split_lines("a\nb\r\nc\rd") == (["a", "b", "c", "d"], [0, 2, 5, 7])
    assert split_lines("a\x0bb\x0cc\x1cd\u2028e\x85f") == (["a\x0bb\x0cc\x1cd\u2028e\x85f"], [0])
    assert split_lines("") == ([""], [0])
    assert split_lines("x\n") == (["x", ""], [0, 2])
    assert split_lines("\r\r\n\n") == (["", "", "", ""], [0, 1, 3, 4])


def test_paragraphs_are_runs_of_non_blank_lines():
    doc = normalize_text("First line\nsecond line\n\n\nSecond paragraph\n   \nThird\n")
    assert doc.content_format == "text" and doc.verbatim and doc.diagnostics == ()
    assert doc.text == "First line\nsecond line\n\n\nSecond paragraph\n   \nThird\n"
    assert outline(doc) == [
        ("paragraph", "First line\nsecond line"),
        ("paragraph", "Second paragraph"),
        ("paragraph", "Third"),
    ]
    assert [(b.start, b.end) for b in doc.blocks] == [(0, 22), (25, 41), (46, 51)]
    assert_well_formed(doc)
    assert_no_text_lost(doc)


def test_nothing_else_is_recognized():
    text = "# Not a heading\n- not a list\n    not code\n\n| a | b |\n|---|---|"
    doc = normalize_text(text)
    assert outline(doc) == [
        ("paragraph", "# Not a heading\n- not a list\n    not code"),
        ("paragraph", "| a | b |\n|---|---|"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\r\nb\r\n\r\nc", [(0, 4), (8, 9)]),
        ("a\rb\r\rc\r", [(0, 3), (5, 6)]),
        ("a\r\n\rb", [(0, 1), (4, 5)]),
        ("\n\n  x  \n\n", [(2, 7)]),
        ("\ta\tb\t\n\t\n\t c", [(0, 5), (8, 11)]),
    ],
)
def test_line_breaks_and_whitespace(text, expected):
    doc = normalize_text(text)
    assert [(b.start, b.end) for b in doc.blocks] == expected
    assert_well_formed(doc)
    assert_no_text_lost(doc)


def test_unicode_whitespace_lines_separate_and_odd_breaks_do_not():
    # A line of no-break spaces and an ideographic space is blank; \x0c and \u2028 are not line breaks.
    text = "one\n\u00a0\u3000\ntwo\x0cstill two\u2028still\n\x0b\nthree"
    doc = normalize_text(text)
    assert outline(doc) == [
        ("paragraph", "one"),
        ("paragraph", "two\x0cstill two\u2028still"),
        ("paragraph", "three"),
    ]
    assert_no_text_lost(doc)


def test_offsets_are_code_points():
    text = "\U0001f600 smile\n\nna\u00efve caf\u00e9 \u4e2d\u6587"
    doc = normalize_text(text)
    assert [(b.start, b.end) for b in doc.blocks] == [(0, 7), (9, 22)]
    assert outline(doc) == [("paragraph", "\U0001f600 smile"), ("paragraph", "na\u00efve caf\u00e9 \u4e2d\u6587")]


@pytest.mark.parametrize("text", ["", " ", "\n", "\r\n\r\n", " \t\n\u00a0\n"])
def test_empty_and_whitespace_only(text):
    doc = normalize_text(text)
    assert doc.blocks == () and doc.text == text


def test_huge_single_line():
    text = "word " * 400_000
    doc = normalize_text(text)
    assert [(b.start, b.end) for b in doc.blocks] == [(0, len(text))]


@pytest.mark.slow
def test_corpus_text_documents(shared_data):
    import pyarrow.parquet as pq

    table = pq.read_table(shared_data("corpus/docs.parquet"), columns=["content", "content_format"])
    documents = [row["content"] for row in table.to_pylist() if row["content_format"] == "text"]
    assert documents
    for content in documents:
        doc = normalize_text(content)
        assert doc.text == content
        assert_well_formed(doc)
        assert_no_text_lost(doc)


def _reference_paragraphs(text: str) -> list[tuple[int, int]]:
    """Runs of lines holding a non-whitespace character, from the lines themselves."""
    lines, starts = split_lines(text)
    runs: list[tuple[int, int]] = []
    open_start = None
    for line, start in zip(lines, starts, strict=True):
        if any(not c.isspace() for c in line):
            if open_start is None:
                open_start = start
            end = start + len(line)
        elif open_start is not None:
            runs.append((open_start, end))
            open_start = None
    if open_start is not None:
        runs.append((open_start, end))
    return runs


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(alphabet=st.characters(blacklist_characters="\r\n"), max_size=40),  # one line
        st.text(alphabet=st.sampled_from(["a", " ", "\t", "\u00a0", "\u3000", "\x0b", "\x1c", "\n", "\r", "é"])),
    )
)
def test_paragraphs_are_the_runs_of_non_blank_lines(text):
    doc = normalize_text(text)
    assert doc.text is text and type(doc.blocks) is tuple
    assert [(b.start, b.end) for b in doc.blocks] == _reference_paragraphs(text)
    assert all(b.kind == "paragraph" and not b.children for b in doc.blocks)
