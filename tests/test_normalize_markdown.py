"""The Markdown normalizer: exact blocks for the traps of real Markdown, and the whole corpus."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import shared
from tests.test_normalize_text import assert_no_text_lost, assert_well_formed, outline
from transforms.structure.normalizers.markdown import normalize_markdown


def test_atx_and_setext_headings_levels_may_skip():
    doc = normalize_markdown("Title\n=====\n\n### Deep  *one* ###\n\nSub\n---\n\n#\n")
    assert outline(doc) == [
        ("heading", "Title\n=====", {"level": 1, "title": "Title"}),
        ("heading", "### Deep  *one* ###", {"level": 3, "title": "Deep *one*"}),
        ("heading", "Sub\n---", {"level": 2, "title": "Sub"}),
        ("heading", "#", {"level": 1}),
    ]
    root = doc.root.children
    assert [(n.kind, n.title) for n in root] == [("section", "Title"), ("section", "")]
    assert [(n.kind, n.title) for n in root[0].children] == [("heading", "Title"), ("section", "Deep *one*"), ("section", "Sub")]


def test_headings_inside_code_are_code_and_an_unclosed_fence_runs_to_the_end():
    doc = normalize_markdown("# Real\n\n```python\n# not a heading\n\n    # nor this\n")
    assert outline(doc) == [
        ("heading", "# Real", {"level": 1, "title": "Real"}),
        ("code", "```python\n# not a heading\n\n    # nor this", {"language": "python", "fence": "```python"}),
    ]
    indented = normalize_markdown("Text\n\n    # indented code\n    more\n")
    assert outline(indented) == [("paragraph", "Text"), ("code", "    # indented code\n    more")]


def test_crlf_and_lone_cr_are_line_breaks_and_offsets_are_code_points():
    doc = normalize_markdown("# Tête\r\n\r\nCafé ☕ text\rmore\r\n\r\n- ä\r\n- b\r\n")
    assert outline(doc) == [
        ("heading", "# Tête", {"level": 1, "title": "Tête"}),
        ("paragraph", "Café ☕ text\rmore"),
        ("list", "- ä\r\n- b", {"level": 1}, [("list_item", "- ä"), ("list_item", "- b")]),
    ]


def test_tables_lists_quotes_and_the_rest():
    text = (
        "---\ntitle: front matter\n---\n\n"
        "| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |\n\n"
        "1. one\n\n   para in one\n2. two\n   - nested\n\n"
        "> quoted\n> - item\n\n"
        "<div>\nraw\n</div>\n\n***\n\n[ref]: https://example.org\n"
    )
    doc = normalize_markdown(text)
    assert outline(doc) == [
        ("rule", "---\ntitle: front matter\n---"),
        ("table", "| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |", {"header_rows": 1},
         [("table_row", "| a | b |\n|---|:-:|"), ("table_row", "| 1 | 2 |"), ("table_row", "| 3 | 4 |")]),
        ("list", "1. one\n\n   para in one\n2. two\n   - nested", {"level": 1}, [
            ("list_item", "1. one\n\n   para in one", [("paragraph", "   para in one")]),
            ("list_item", "2. two\n   - nested", [
                ("list", "   - nested", {"level": 2}, [("list_item", "   - nested")]),
            ]),
        ]),
        ("quote", "> quoted\n> - item", [("paragraph", "> quoted"), ("list", "> - item", {"level": 1}, [("list_item", "> - item")])]),
        ("html", "<div>\nraw\n</div>"),
        ("rule", "***"),
        # A link reference definition stays text: nothing is consumed without a block.
        ("paragraph", "[ref]: https://example.org"),
    ]


def test_lone_surrogates_keep_code_point_positions():
    doc = normalize_markdown("# A\ud800b\n\ntext\n")
    assert outline(doc) == [("heading", "# A\ud800b", {"level": 1, "title": "A?b"}), ("paragraph", "text")]


def test_empty_and_whitespace_only():
    assert normalize_markdown("").blocks == ()
    assert normalize_markdown(" \n\t\n\r\n").blocks == ()


def test_every_corpus_markdown_document_is_well_formed_and_loses_nothing():
    table = pq.read_table(shared("corpus/docs.parquet"), columns=["content", "content_format"])
    count = 0
    for content, content_format in zip(table.column("content").to_pylist(), table.column("content_format").to_pylist()):
        if content_format != "markdown":
            continue
        doc = normalize_markdown(content)
        assert_well_formed(doc)
        assert_no_text_lost(doc)
        count += 1
    assert count > 1000


def test_nesting_too_deep_for_the_parser_is_read_as_paragraphs():
    # Found by the hostile pass: 30,000 nested list markers crashed the Rust parser (SIGSEGV).
    for text in ("- " * 30000 + "x\n", ">" * 100000 + " x\n", "".join("  " * i + "- x\n" for i in range(300))):
        doc = normalize_markdown(text)
        assert doc.diagnostics and "read as plain paragraphs" in doc.diagnostics[0]
        assert_well_formed(doc)
        assert_no_text_lost(doc)
    assert normalize_markdown("- " * 100 + "x\n").diagnostics == ()


_WINDOW_TRAPS = (
    "---\ntitle: front matter\n---\n\n# Tête\r\n\r\nSetext\n======\n\n"
    "```bash\n# a comment, not a heading\n\n---\n\nstill code\n```\n\n"
    "---\nnot: front matter here\n---\n\n"
    "- item one\n\n  para of one\n- item two\n  - nested ☕\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    "<div>\nraw html\n\n</div>\n\n"
    "    indented code\n    more\n\n"
    "> quote\nlazy line\n> - in quote\n\n"
    "Para\nSub\n---\n\n"
    "1. one\n2. two\n\n3) three\n\n***\n\nlast *para*\n"
)


@pytest.mark.parametrize("window", [12, 40, 97, 300])
def test_long_markdown_parsed_in_windows_gives_the_same_blocks(monkeypatch, window):
    """A document over WINDOW_CHARS is parsed a window at a time: blocks identical to one parse."""
    from transforms.structure.normalizers import markdown

    text = _WINDOW_TRAPS * 3
    whole = outline(normalize_markdown(text))
    monkeypatch.setattr(markdown, "WINDOW_CHARS", window)
    parsed: list[int] = []
    real_parser = markdown._parser
    monkeypatch.setattr(markdown, "_parser", lambda front_matter=True: _Spy(real_parser(front_matter), parsed))
    windowed = normalize_markdown(text)
    assert outline(windowed) == whole
    assert len(parsed) > 3 and max(parsed) < len(text)  # it was parsed in parts
    assert_well_formed(windowed)


class _Spy:
    def __init__(self, parser, lengths):
        self._parser, self._lengths = parser, lengths

    def tree(self, source):
        self._lengths.append(len(source))
        return self._parser.tree(source)


def test_corpus_markdown_parsed_in_small_windows_gives_the_same_blocks(monkeypatch):
    from transforms.structure.normalizers import markdown

    table = pq.read_table(shared("corpus/docs_small.parquet"), columns=["content", "content_format"])
    documents = [c for c, f in zip(table.column("content").to_pylist(), table.column("content_format").to_pylist())
                 if f == "markdown"]
    wholes = [outline(normalize_markdown(d)) for d in documents]
    monkeypatch.setattr(markdown, "WINDOW_CHARS", 500)
    assert [outline(normalize_markdown(d)) for d in documents] == wholes
    assert sum(len(d) > 500 for d in documents) > 20


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_byte_offsets_become_code_points_across_blocks(offset, sparse):
    """The byte -> code point maps (dense: a count per 256-byte block plus one byte per byte;
    sparse, for text with few non-ASCII characters: the offsets of continuation bytes) equal a
    plain running count of UTF-8 lead bytes at every offset, past the end included."""
    import random

    from transforms.structure.normalizers.markdown import _Positions

    rng = random.Random(offset)
    alphabet = ["a"] * 1000 + ["é", "€", "😀", "\n", " "] if sparse else ["a", "é", "€", "😀", "\n", " "]
    for size in (1, 255, 256, 257, 700, 3000, 20000):
        text = "é" + "".join(rng.choice(alphabet) for _ in range(size))
        positions = _Positions(text, offset, len(text))
        assert not positions.ascii or offset > 0
        if positions.ascii:
            continue
        if size >= 700:
            assert (positions._continuation is not None) == sparse  # the map under test
        raw = text[offset:].encode("utf-8")
        expected, count = [], offset
        for byte in raw:
            expected.append(count)
            count += (byte & 0xC0) != 0x80
        expected.append(count)
        got = [positions.code_point(b) for b in range(len(raw) + 3)]
        assert got == expected + [count, count]
        assert positions.interval((0, len(raw) + 5)) == (offset, len(text))


# -- long documents: raw blocks of any size cost one window, children are parsed again --------


def _deep(doc) -> tuple:
    """Every block and descendant with all its fields (children parsed if lazy)."""

    def one(n):
        return (n.kind, n.start, n.end, n.level, n.title, n.language, n.fence, n.header_rows,
                tuple(one(c) for c in n.children))

    return tuple(one(b) for b in doc.blocks)


def _windowed(monkeypatch, text: str, window: int) -> tuple[tuple, list[int]]:
    """The deep outline of ``text`` parsed in windows of ``window`` characters, and the length of
    every text handed to the parser."""
    from transforms.structure.normalizers import markdown

    monkeypatch.setattr(markdown, "WINDOW_CHARS", window)
    parsed: list[int] = []
    real_parser = markdown._parser
    monkeypatch.setattr(markdown, "_parser", lambda front_matter=True: _Spy(real_parser(front_matter), parsed))
    try:
        return _deep(normalize_markdown(text)), parsed
    finally:
        monkeypatch.undo()


_HUGE_RAW = {
    "unclosed html": "<div>\n" + "<p>raw line é</p>\n" * 3000,
    "html to a blank line": "<div class='x'>\n" + "<span>raw line</span>\n" * 3000 + "   \n\nAfter.\n",
    "comment closed late": "<!-- note\n" + "still a comment\n\n" * 2000 + "end --> tail\n\nAfter.\n",
    "script with blank lines": "<script>\n" + "let a = 1;\n\n" * 2000 + "</SCRIPT>\n\n# After\n",
    "unclosed fence": "```python\n" + "print('x')  # é\n\n" * 2000,
    "fence closed by a longer one": "~~~~ text\n" + "~~~\n```\nline\n" * 1500 + "   ~~~~~~ \t\r\n\r\nAfter.\n",
    "indented code": "    code line\n\n  \n" * 2000 + "Para.\n",
}


@pytest.mark.parametrize("name", sorted(_HUGE_RAW))
def test_a_huge_raw_block_is_ended_by_a_scan_with_the_parser_never_seeing_more_than_two_windows(monkeypatch, name):
    """A raw block (HTML, fenced or indented code) far larger than the window: the same blocks as
    one whole parse, while no text handed to the parser is longer than two windows (the parse
    window, hence the normalizer's state, stays bounded: it used to double up to the block)."""
    text = "# Title\n\nSome text before.\n\n" + _HUGE_RAW[name] + "\n" + "Text after the block.\n\n" * 20
    whole = _deep(normalize_markdown(text))
    windowed, parsed = _windowed(monkeypatch, text, 300)
    assert windowed == whole
    assert len(text) > 40 * 300 and max(parsed) <= 2 * 300 + 100
    raw = [b for b in normalize_markdown(text).blocks if b.kind in ("html", "code")]
    assert max(b.end - b.start for b in raw) > 20 * 300


@pytest.mark.parametrize("eager", [False, True])
def test_children_of_a_long_documents_blocks_come_from_a_parse_of_the_block_alone(monkeypatch, eager):
    """Past WINDOW_CHARS, lists, quotes and tables under EAGER_CHILDREN_CHARS keep no converted
    children: each parses its own text again when asked, and gets exactly the children of the
    whole parse (tab-indented lines, where the parser reports ends past a line, included).
    Larger ones are converted from the window's parse, with the same result."""
    from transforms.structure.normalizers import markdown
    from transforms.structure.tree import LazyChildren

    text = (_WINDOW_TRAPS + "- item\n    ```\n\t```\n\tcode\n\n> q\n| a | b |\n|---|---|\n\n") * 4
    whole = _deep(normalize_markdown(text))
    monkeypatch.setattr(markdown, "WINDOW_CHARS", 60)
    monkeypatch.setattr(markdown, "EAGER_CHILDREN_CHARS", 1 if eager else 4096)
    doc = normalize_markdown(text)
    containers = [b for b in doc.blocks if b.kind in ("list", "quote", "table")]
    lazy = [isinstance(b.children, LazyChildren) and b.children._nodes is None for b in containers]
    assert containers and all(lazy) != eager and any(lazy) != eager
    assert _deep(doc) == whole


def test_raw_block_ends_agree_with_the_parser_on_random_markdown(monkeypatch):
    """Random mixes of the lines that open, close and continue raw blocks (with \\r\\n, lone \\r,
    tabs): windows far smaller than the blocks give exactly the whole parse's blocks."""
    import random

    pieces = ["<div>\n", "</div>\n", "\n", "\n\n", " \t\n", "text line\n", "<!-- c\n", " --> x\n", "<script>\n",
              "</SCRIPT> t\n", "<pre\n", "</pre>\n", "<?php\n", "?>\n", "<!DOCTYPE x\n", "<!doctype x\n", ">\n",
              "<![CDATA[\n", "]]>\n", "```\n", "````py x\n", "```` \t\n", "~~~\n", "   ```\n", "    ```\n", "\t```\n",
              "    code\n", "\tcode\n", "  \n", "<pre\x0cx\n", "<pre\u00a0x\n", "# H\n", "- item\n", "> q\n", "| a | b |\n|---|---|\n", "para\r\n",
              "\r", "é😀\n", "<custom-tag>\n", "  <div>\n", "text"]
    rng = random.Random(7)
    for _ in range(400):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 60)))
        whole = _deep(normalize_markdown(text))
        for window in (5, 40):
            assert _windowed(monkeypatch, text, window)[0] == whole, (window, text)


@pytest.mark.parametrize("space", ["\f", "\v", "\u00a0", "\u2028", "\u3000", "\f\u00a0 "])
def test_a_line_of_unicode_whitespace_is_no_block(space):
    """CommonMark's blank lines are spaces and tabs only, so the parser makes a paragraph of a line
    holding a form feed or a no-break space: whitespace only, which no block may be."""
    for text in (f"{space}\n", f"a\n\n{space}\n\nb\n", f"- {space}\n- x\n", f"> {space}\n", f"| a |\n|---|\n{space}\n"):
        doc = normalize_markdown(text)
        assert_well_formed(doc)
        assert_no_text_lost(doc)
    assert outline(normalize_markdown(f"a\n\n{space}\n\nb\n")) == [("paragraph", "a"), ("paragraph", "b")]


# -- the conversion's fast paths give what the general code gives --------------------------------


def test_a_whitespace_only_paragraph_is_found_by_regex_exactly_as_by_isspace():
    """``_convert`` tests a paragraph for text with ``\\S`` (no copy of the paragraph) where it
    used ``str.isspace``: the two agree on every code point."""
    from transforms.structure.normalizers.markdown import _NOT_SPACE

    disagree = [c for c in range(0x110000) if (_NOT_SPACE.match(chr(c)) is None) != chr(c).isspace()]
    assert disagree == []


_TITLE_PIECES = ["# ", "## ", "###### ", "Title", " *em* ", "`co  de`", "\\*", "&amp;", "<b>x</b>", "[l](u)", "  ",
                 "\t", "é😀", " #", "\n", "\n===\n", "\n---\n", "\r\n", "- ", "> ", "1. ", "![i](s)", "**", "x", "\u00a0"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_TITLE_PIECES), min_size=1, max_size=25))
def test_heading_titles_from_the_one_text_node_path_equal_the_general_ones(pieces):
    """A heading's title is its text nodes' contents joined, whitespace collapsed; the short path
    for a heading with one text node gives exactly that."""
    from transforms.structure.normalizers.markdown import _SPACE, _inline_text, _parser

    text = "".join(pieces)
    for node in _parser().tree(text).walk():
        if node.name in ("heading", "lheading"):
            parts = [c.meta.get("content", "") for c in node.walk() if c.name == "text"]
            assert _inline_text(node) == _SPACE.sub(" ", " ".join(parts)).strip()


def test_the_conversion_uses_the_interval_of_a_parse_that_stands_for_a_longer_one():
    """``_convert`` takes a block's interval from its positions: ``_PastTheEnd``'s ends may go past
    the parsed text (the parser expanding a tab), a plain ASCII window's are cut at its limit."""
    from transforms.structure.normalizers.markdown import _convert, _PastTheEnd, _Positions
    from transforms.structure.tree import LineStarts

    class Parsed:  # a parser node: a code block reported two bytes past the parsed "\tcode"
        name, srcmap, meta, children = "code_block", (0, 7), {}, []

    source = "x\n\tcode  \nmore\n"
    past = _PastTheEnd(source, 2, 7, LineStarts(source))
    assert past.interval((0, 7)) == (2, 9)
    converted = _convert(Parsed(), past, 0)
    assert (converted.kind, converted.start, converted.end) == ("code", 2, 9)
    plain = _convert(Parsed(), _Positions(source, 2, 7), 0)
    assert (plain.start, plain.end) == (2, 7)


_OLD_DEEP_CANDIDATE = r"\n(?:[ \t]*(?:>|[-+*]|\d{1,9}[.)])(?=[ \t>])){8}|\n[ \t]{%d}"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["\n", "> ", ">", "- ", "* ", "+\t", "1. ", "12) ", "١. ", " ", "\t", "x", "-", "\r"]),
                max_size=60),
       st.integers(min_value=1, max_value=3))
def test_the_deep_line_candidates_are_those_of_the_pattern_without_the_lookahead(pieces, nesting):
    """The lookahead that turns lines away early changes no match (checked at small nestings)."""
    import re

    from transforms.structure.normalizers import markdown

    text = "".join(pieces)
    new = re.compile(markdown._DEEP_CANDIDATE.pattern.replace("{8}", "{%d}" % nesting).replace("{400}", "{%d}" % (2 * nesting)))
    old = re.compile(_OLD_DEEP_CANDIDATE.replace("{8}", "{%d}" % nesting) % (2 * nesting))
    assert [m.span() for m in new.finditer(text)] == [m.span() for m in old.finditer(text)]
