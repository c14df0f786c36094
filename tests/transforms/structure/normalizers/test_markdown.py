"""The Markdown normalizer: exact blocks for the traps of real Markdown, and the whole corpus."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.transforms.structure.normalizers.test_text import assert_no_text_lost, assert_well_formed, outline
from transforms.structure.normalizers.markdown import normalize_markdown
from transforms.structure.tree import NormalizedDocument


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
    assert [(n.kind, n.title) for n in root[0].children] == [
        ("heading", "Title"),
        ("section", "Deep *one*"),
        ("section", "Sub"),
    ]


def test_a_headings_trailing_pilcrow_permalink_is_left_out_of_its_title_only():
    doc = normalize_markdown("# `textwrap` \u2014 Text wrapping\u00b6\n\n## \u00b6\n\n## Mid \u00b6 mark\n")
    assert outline(doc) == [
        (
            "heading",
            "# `textwrap` \u2014 Text wrapping\u00b6",
            {"level": 1, "title": "`textwrap` \u2014 Text wrapping"},
        ),
        ("heading", "## \u00b6", {"level": 2, "title": "\u00b6"}),
        ("heading", "## Mid \u00b6 mark", {"level": 2, "title": "Mid \u00b6 mark"}),
    ]


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
        (
            "table",
            "| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |",
            {"header_rows": 1},
            [("table_row", "| a | b |\n|---|:-:|"), ("table_row", "| 1 | 2 |"), ("table_row", "| 3 | 4 |")],
        ),
        (
            "list",
            "1. one\n\n   para in one\n2. two\n   - nested",
            {"level": 1},
            [
                ("list_item", "1. one\n\n   para in one", [("paragraph", "   para in one")]),
                (
                    "list_item",
                    "2. two\n   - nested",
                    [
                        ("list", "   - nested", {"level": 2}, [("list_item", "   - nested")]),
                    ],
                ),
            ],
        ),
        (
            "quote",
            "> quoted\n> - item",
            [("paragraph", "> quoted"), ("list", "> - item", {"level": 1}, [("list_item", "> - item")])],
        ),
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


@pytest.mark.slow
def test_every_corpus_markdown_document_is_well_formed_and_loses_nothing(shared_data):
    table = pq.read_table(shared_data("corpus/docs.parquet"), columns=["content", "content_format"])
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
    # 30,000 nested list markers would crash the Rust parser (SIGSEGV).
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
    """The parser, recording ``keep(text)`` of every text it is handed (its length by default)."""

    def __init__(self, parser, seen, keep=len):
        self._parser, self._seen, self._keep = parser, seen, keep

    def tree(self, source):
        self._seen.append(self._keep(source))
        return self._parser.tree(source)


@pytest.mark.slow
def test_corpus_markdown_parsed_in_small_windows_gives_the_same_blocks(monkeypatch, shared_data):
    from transforms.structure.normalizers import markdown

    table = pq.read_table(shared_data("corpus/docs_small.parquet"), columns=["content", "content_format"])
    documents = [
        c
        for c, f in zip(table.column("content").to_pylist(), table.column("content_format").to_pylist())
        if f == "markdown"
    ]
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
        return (
            n.kind,
            n.start,
            n.end,
            n.level,
            n.title,
            n.language,
            n.fence,
            n.header_rows,
            tuple(one(c) for c in n.children),
        )

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
    window, hence the normalizer's state, stays bounded, instead of doubling up to the block)."""
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

    pieces = [
        "<div>\n",
        "</div>\n",
        "\n",
        "\n\n",
        " \t\n",
        "text line\n",
        "<!-- c\n",
        " --> x\n",
        "<script>\n",
        "</SCRIPT> t\n",
        "<pre\n",
        "</pre>\n",
        "<?php\n",
        "?>\n",
        "<!DOCTYPE x\n",
        "<!doctype x\n",
        ">\n",
        "<![CDATA[\n",
        "]]>\n",
        "```\n",
        "````py x\n",
        "```` \t\n",
        "~~~\n",
        "   ```\n",
        "    ```\n",
        "\t```\n",
        "    code\n",
        "\tcode\n",
        "  \n",
        "<pre\x0cx\n",
        "<pre\u00a0x\n",
        "# H\n",
        "- item\n",
        "> q\n",
        "| a | b |\n|---|---|\n",
        "para\r\n",
        "\r",
        "é😀\n",
        "<custom-tag>\n",
        "  <div>\n",
        "text",
    ]
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


@pytest.mark.slow
def test_a_whitespace_only_paragraph_is_found_by_regex_exactly_as_by_isspace():
    """``_convert`` tests a paragraph for text with ``\\S`` (no copy of the paragraph) where it
    used ``str.isspace``: the two agree on every code point."""
    from transforms.structure.normalizers.markdown import _NOT_SPACE

    disagree = [c for c in range(0x110000) if (_NOT_SPACE.match(chr(c)) is None) != chr(c).isspace()]
    assert disagree == []


_TITLE_PIECES = [
    "# ",
    "## ",
    "###### ",
    "Title",
    " *em* ",
    "`co  de`",
    "\\*",
    "&amp;",
    "<b>x</b>",
    "[l](u)",
    "  ",
    "\t",
    "é😀",
    " #",
    "\n",
    "\n===\n",
    "\n---\n",
    "\r\n",
    "- ",
    "> ",
    "1. ",
    "![i](s)",
    "**",
    "x",
    "\u00a0",
]


@pytest.mark.slow
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


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["\n", "> ", ">", "- ", "* ", "+\t", "1. ", "12) ", "١. ", " ", "\t", "x", "-", "\r"]),
        max_size=60,
    ),
    st.integers(min_value=1, max_value=3),
)
def test_the_deep_line_candidates_are_those_of_the_pattern_without_the_lookahead(pieces, nesting):
    """The lookahead that turns lines away early changes no match (checked at small nestings)."""
    import re

    from transforms.structure.normalizers import markdown

    text = "".join(pieces)
    new = re.compile(
        markdown._DEEP_CANDIDATE.pattern.replace("{8}", "{%d}" % nesting).replace("{400}", "{%d}" % (2 * nesting))
    )
    old = re.compile(_OLD_DEEP_CANDIDATE.replace("{8}", "{%d}" % nesting) % (2 * nesting))
    assert [m.span() for m in new.finditer(text)] == [m.span() for m in old.finditer(text)]


# -- huge lists and tables: read a window at a time, items and rows streamed -------------------


def _streamed(monkeypatch, text: str, window: int, stream_window: int) -> tuple[tuple, list[int], int]:
    """The deep outline of ``text`` with both windows small (streamed children iterated, twice:
    each iteration parses again and must give the same), the length of every text handed to the
    parser, and how many top-level blocks have streamed children."""
    from transforms.structure.normalizers import markdown
    from transforms.structure.tree import StreamedChildren

    monkeypatch.setattr(markdown, "WINDOW_CHARS", window)
    monkeypatch.setattr(markdown, "STREAM_WINDOW_CHARS", stream_window)
    parsed: list[int] = []
    real_parser = markdown._parser
    monkeypatch.setattr(markdown, "_parser", lambda front_matter=True: _Spy(real_parser(front_matter), parsed))
    try:
        doc = normalize_markdown(text)
        deep = _deep(doc)
        assert _deep(doc) == deep
        assert_well_formed(doc)
        return deep, parsed, sum(isinstance(b.children, StreamedChildren) for b in doc.blocks)
    finally:
        monkeypatch.undo()


_HUGE_BLOCKS = {
    "short items": "".join(f"- {i}\n" for i in range(1500)),
    "ordered with nested items": "".join(f"{i % 10}. item {i}\n   - nested\n     more\n" for i in range(600)),
    "loose with lazy lines and paragraphs": "".join(f"* item {i}\nlazy line\n\n  para of {i}\n\n" for i in range(500)),
    "bullet char changes": "".join(f"- a{i}\n" for i in range(400))
    + "".join(f"+ b{i}\n" for i in range(400))
    + "".join(f"* c{i}\n" for i in range(400)),
    "delimiter changes": "".join(f"{i}. a\n" for i in range(400)) + "".join(f"{i}) b\n" for i in range(400)),
    "empty and tab items": "".join(f"-\n-\tx{i}\n\t- tab\n- é😀 {i}\n" for i in range(400)),
    "items with code and quotes": "".join(f"1. x\n   ```\n   code {i}\n\n   ```\n   > q\n" for i in range(300)),
    "crlf and lone cr": "".join(f"- crlf {i}\r\n  - nested\r\n- cr {i}\r" for i in range(500)),
    "table": "| a | b |\n|---|:-:|\n" + "".join(f"| {i} | {i * 7} |\n" for i in range(1500)),
    "table with escaped pipes and ragged rows": "| a | b | c |\n|---|---|---|\n"
    + "".join(f"| x \\| {i} | `a|b` |\n{i}\n| 1 | 2 | 3 | 4 | 5 |\n|\n\\|\n" for i in range(400)),
    "table of non-ascii with tabs": "| ☕ | é |\r\n| --- | --- |\r\n"
    + "".join(f"| 😀 {i} |\té\t|\t\r\n" for i in range(800)),
    "table with lone cr": "| a |\r|---|\r" + "".join(f"| {i} |\r" for i in range(1500)),
}
_ENDINGS = {
    "end of text": "",
    "blank line": "\n\nAfter.\n",
    "heading": "# After\n\ntext\n",
    "quote": "> after\n",
    "indented line": "    indented\n\ntext\n",
    "fence": "```\ncode\n```\n",
    "thematic break": "---\n",
    "html": "<div>\nx\n</div>\n",
    "other list": "1) other\n2) list\n",
    "line without a pipe": "no pipe\nmore\n\nAfter.\n",
    "another huge block": "".join(f"+ {i}\n" for i in range(1000)),
}


@pytest.mark.slow
@pytest.mark.parametrize("ending", sorted(_ENDINGS))
@pytest.mark.parametrize("name", sorted(_HUGE_BLOCKS))
def test_a_huge_list_or_table_is_read_a_window_at_a_time_with_the_whole_parses_blocks(monkeypatch, name, ending):
    """A list or table far larger than the windows, at the start, in the middle and at the end of
    a document: blocks, items and rows identical to one whole parse's (streamed children iterated),
    while no text handed to the parser is much longer than a window."""
    block = _HUGE_BLOCKS[name]
    for text in (block + _ENDINGS[ending], "# Title\n\nSome text before.\n\n" + block + _ENDINGS[ending]):
        whole = _deep(normalize_markdown(text))
        for window, stream_window in ((300, 128), (97, 1000)):
            windowed, parsed, streamed = _streamed(monkeypatch, text, window, stream_window)
            assert windowed == whole, (window, stream_window)
            assert streamed >= 1
            assert max(parsed) <= 2 * max(window, stream_window) + 200


def test_the_windows_of_a_streamed_list_start_at_items_of_the_same_list(monkeypatch):
    """Each window of a streamed list starts on an item's line, and the list it parses there is the
    same kind (bullet character, ordered delimiter) as the list's own."""
    from transforms.structure.normalizers import markdown_streams
    from transforms.structure.tree import LineStarts

    text = "".join(f"- a{i}\n  lazy\n" for i in range(300)) + "".join(f"* b{i}\n" for i in range(300))
    starts = []
    for _, _, parsed, pos in markdown_streams._list_windows(text, 0, 100, LineStarts(text), False):
        starts.append(pos.offset)
        assert parsed.name == "bullet_list" and parsed.meta["marker"] == "-"
    assert len(starts) > 10 and all(text[s] == "-" for s in starts)
    assert starts[-1] < text.index("* b0") < starts[-1] + 200


def test_a_single_item_longer_than_a_window_is_parsed_whole(monkeypatch):
    """An item holding a long sub-list cannot be cut: the window doubles until it holds three
    items, and the blocks are still the whole parse's."""
    text = (
        "- a\n- big\n"
        + "".join(f"  - sub {i}\n" for i in range(500))
        + "- b\n- c\n"
        + "".join(f"- {i}\n" for i in range(300))
    )
    whole = _deep(normalize_markdown(text))
    windowed, parsed, streamed = _streamed(monkeypatch, text, 200, 200)
    assert windowed == whole and streamed == 1
    assert max(parsed) > 500 * 9  # the big item was parsed whole


_ITEM_FIRST = ["- ", "* ", "+ ", "1. ", "2. ", "3) ", "10. ", "-\t", "-", "- [ ] "]
_ITEM_REST = ["a", "é😀", "text | pipe", "", " \t", "`code`", "# not heading"]
_ITEM_MORE = [
    "  cont\n",
    "lazy\n",
    "\n",
    "  - nested\n",
    "    - deep\n",
    "   1. n\n",
    "  \n",
    "      code\n",
    "  > q\n",
    "\t- t\n",
    "  ```\n  c\n  ```\n",
    "\r\n",
    "===\n",
    "  | a | b |\n  |---|---|\n",
]
_ROW_LINES = [
    "| 1 | 2 |",
    "| 1 \\| 2 |",
    "x",
    "|",
    "| a | b | c | d |",
    "a|b",
    "| é😀 | ☕ |",
    "  | two |",
    "\\|",
    "| `a|b` |",
    "\x0c",
    "===",
    "| 1 | 2 |\t",
    "- | x",
]
_ENDERS = [
    "\n",
    "\n\n",
    "# H\n",
    "> q\n",
    "- item\n",
    "    indented\n",
    "```\n",
    "---\n",
    "<div>\n",
    "\t\n",
    "1. x\n",
    "",
    "para\n",
    "-\n",
]
_BREAKS = ["\n", "\n", "\n", "\r\n", "\r"]


@st.composite
def _lists_and_tables(draw):
    parts = [draw(st.sampled_from(["", "Intro\n\n", "para\n", "# T\n"]))]
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            markers = draw(st.lists(st.sampled_from(_ITEM_FIRST), min_size=1, max_size=2))
            for _ in range(draw(st.integers(1, 60))):
                parts.append(
                    draw(st.sampled_from(markers)) + draw(st.sampled_from(_ITEM_REST)) + draw(st.sampled_from(_BREAKS))
                )
                parts.extend(draw(st.lists(st.sampled_from(_ITEM_MORE), max_size=2)))
        else:
            columns = draw(st.integers(1, 4))
            parts.append("|" + " h |" * columns + draw(st.sampled_from(_BREAKS)))
            parts.append("|" + "---|" * columns + draw(st.sampled_from(_BREAKS)))
            for _ in range(draw(st.integers(0, 60))):
                parts.append(draw(st.sampled_from(_ROW_LINES)) + draw(st.sampled_from(_BREAKS)))
        parts.append(draw(st.sampled_from(_ENDERS)))
    return "".join(parts)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(_lists_and_tables(), st.sampled_from([(64, 64), (200, 100), (30, 500), (100, 16)]))
def test_random_lists_and_tables_read_in_windows_give_the_whole_parses_blocks(text, windows):
    """Random lists (markers, nesting, lazy and blank lines, CRLF, lone CR, tabs, non-ASCII) and
    tables (escaped pipes, ragged rows, rows without pipes, every kind of ending): streamed,
    the same blocks as one whole parse."""
    whole = _deep(normalize_markdown(text))
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _streamed(monkeypatch, text, *windows)[0] == whole


# Inputs whose window ends fall in a construct a window alone reads otherwise: (text, WINDOW_CHARS, STREAM_WINDOW_CHARS).
_STREAMED_REGRESSIONS = [
    # A list loose through a blank line in a later window: a window of it alone is tight, where the
    # parser gives an item's paragraph as bare text with its trailing tab cut.
    (
        "- a\n- é😀\n  > q\n-  \t\n- é😀\n-  \t\n-  \t\n- a\n- text | pipe\r  ```\n  c\n  ```\n- a\r\n-  \t\n- \n- \rlazy\n- a\n- \n- \n- \n- \r- é😀\n- é😀\n\r\n- a\r\n  cont\n-  \t\r\n- é😀\n- \r\n  - nested\n-  \t\n- a\n    - deep\n- \r-  \t\n- \n\r\n- text | pipe\n- a\r\n   1. n\n- text | pipe\r-  \t\n- text | pipe\n- \n- text | pipe\n- text | pipe\r\n- \r- a\n- \r- a\n- text | pipe\n- \n  \n      code\n-  \t\n\n- text | pipe\r\n- a\n- text | pipe\n- \n- a\r\n- \n-  \t\n\n- text | pipe\n- é😀\n- \n- é😀\n- é😀\n- \r\nlazy\n-  \t\r\n  ```\n  c\n  ```\n- \n  ```\n  c\n  ```\n- a\n- \r- é😀\n-  \t\n  - nested\n\n  \n-  \t\n-  \t\r-  \t\n- text | pipe\n- text | pipe\n- é😀\n-  \t\n    - deep\n-  \t\r\n- a\r\n- \n    indented\n| h | h |\n|---|---|\n\\|\n|\n\\|\n===\r\n| 1 | 2 |\t\n| a | b | c | d |\r\nx\r| a | b | c | d |\r\n| 1 | 2 |\n| `a|b` |\n| é😀 | ☕ |\n| 1 | 2 |\t\r| a | b | c | d |\n  | two |\n| 1 | 2 |\t\n| `a|b` |\nx\n\x0c\n| é😀 | ☕ |\n| 1 | 2 |\n| 1 | 2 |\t\rx\n\x0c\n| é😀 | ☕ |\n| 1 | 2 |\t\n| 1 | 2 |\t\r\n# H\n1. é😀\n  cont\n1. é😀\n      code\n1. text | pipe\n1.  \t\n1. text | pipe\n  cont\n1. \r\n1. \n1. \n1. é😀\n1. a\n1.  \t\r\n1. text | pipe\n1. a\n1. text | pipe\n1. a\r\n1. \n1. text | pipe\n  ```\n  c\n  ```\n1. a\n  > q\n1. \n1. é😀\n  ```\n  c\n  ```\n\t- t\n1. text | pipe\r1. é😀\n      code\n1. é😀\rlazy\n1. \n  - nested\n1. text | pipe\r  > q\n1. \n\t- t\n1. text | pipe\n      code\n      code\n1. \n  \n  ```\n  c\n  ```\n1. \n\r\n1.  \t\n1. a\n  \n1.  \t\n\t- t\n   1. n\n1. é😀\r\n  - nested\n1. é😀\n  \n    - deep\n1. text | pipe\n1. text | pipe\n  - nested\n1.  \t\nlazy\n      code\n  - nested\n      code\n1. é😀\n1. é😀\r\n1. \n1.  \t\n1. text | pipe\n\t\n",
        64,
        64,
    ),
    # A table whose delimiter line ends in a lone "\r": the copy behind a window that starts with a
    # blank line joined "\r" + "\n" into one line break, and the table did not end there.
    (
        "Intro\n\n| h | h | h | h |\n|---|---|---|---|\r| `a|b` |\r| é😀 | ☕ |\r| é😀 | ☕ |\r\n| a | b | c | d |\n| 1 | 2 |\t\nx\r\n| 1 | 2 |\n\n| h |\n|---|\na|b\n| 1 | 2 |\t\r  | two |\r\n| 1 \\| 2 |\n===\n| é😀 | ☕ |\n| a | b | c | d |\n| 1 | 2 |\t\n| `a|b` |\n| 1 | 2 |\n| é😀 | ☕ |\na|b\r| é😀 | ☕ |\n| 1 | 2 |\n\\|\n| 1 \\| 2 |\n| 1 | 2 |\n===\n===\n| é😀 | ☕ |\n| é😀 | ☕ |\n| 1 \\| 2 |\n| 1 \\| 2 |\n===\r\n===\n\x0c\n===\n| é😀 | ☕ |\r| 1 \\| 2 |\r\n| 1 | 2 |\r\n  | two |\n\\|\n\\|\n| 1 | 2 |\n| a | b | c | d |\n| 1 \\| 2 |\n===\n| é😀 | ☕ |\n\\|\n  | two |\n|\n| 1 \\| 2 |\n|\n| a | b | c | d |\n| `a|b` |\n| `a|b` |\n|\n\\|\n  | two |\n| 1 | 2 |\t\n| é😀 | ☕ |\n1. x\n| h |\n|---|\r===\n| 1 | 2 |\n| 1 | 2 |\t\n| a | b | c | d |\n| 1 \\| 2 |\n===\r| `a|b` |\n\x0c\n===\n| é😀 | ☕ |\n| 1 | 2 |\n\x0c\n| 1 \\| 2 |\r# H\n",
        100,
        16,
    ),
    # The item a loose list's windows are parsed behind captured the next item, indented two
    # columns, as its child (the item behind is now "-    x": content at column five).
    ("- \nlazy\n  - nested\n" + "- a\n" * 26 + "\r\n- a\n\n", 64, 64),
]


@pytest.mark.parametrize("case", range(len(_STREAMED_REGRESSIONS)))
def test_streamed_lists_and_tables_found_failing_once(monkeypatch, case):
    text, window, stream_window = _STREAMED_REGRESSIONS[case]
    whole = _deep(normalize_markdown(text))
    windowed, _, streamed = _streamed(monkeypatch, text, window, stream_window)
    assert windowed == whole and streamed >= 1


@pytest.mark.slow
@pytest.mark.parametrize("line_break", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("name, line_chars", [("short items", 20), ("table", 20), ("ordered with nested items", 60)])
def test_a_window_of_many_short_lines_ends_after_its_share_of_window_lines(monkeypatch, name, line_chars, line_break):
    """A window also ends after WINDOW_LINES lines (in proportion to its size): a table of short
    rows is parsed a few lines at a time, with the whole parse's blocks. Every line break counts,
    a lone "\\r" included: a table or list of short "\\r" lines (a parse tree of kilobytes a line,
    as with "\\n") is not parsed 1 Mi code points, 100 000 lines, at a time (that would take
    475 MiB for 5 MB of "| 1 | 2 |\\r" rows, 55 MiB with "\\n")."""
    from transforms.structure.normalizers import markdown

    text = ("# T\n\n" + _HUGE_BLOCKS[name] + "\nAfter.\n").replace("\n", line_break)
    whole = _deep(normalize_markdown(text))
    monkeypatch.setattr(markdown, "WINDOW_LINES", 40)
    windowed, parsed, streamed = _streamed(monkeypatch, text, 4000, 1000)
    assert windowed == whole and streamed == 1
    assert max(parsed) < 40 * line_chars


def test_a_streamed_block_whose_window_does_not_parse_as_before_falls_back_to_a_whole_parse(monkeypatch):
    """If a later reading of a streamed list meets a window unlike the first reading's, the
    remaining items come from one parse of the whole list: the children are still the same."""
    from transforms.structure.normalizers import markdown, markdown_streams
    from transforms.structure.tree import StreamedChildren

    text = "".join(f"- item {i}\n" for i in range(400)) + "\nAfter.\n"
    whole = _deep(normalize_markdown(text))
    monkeypatch.setattr(markdown, "WINDOW_CHARS", 200)
    monkeypatch.setattr(markdown, "STREAM_WINDOW_CHARS", 200)
    doc = normalize_markdown(text)
    listed = next(iter(doc.blocks))  # (the top-level blocks are a stream too: one pass's list, kept)
    assert isinstance(listed.children, StreamedChildren)
    real = markdown_streams._list_windows

    def failing(*args):
        for count, window in enumerate(real(*args)):
            if count == 3:
                raise markdown_streams._NotStreamable("test")
            yield window

    monkeypatch.setattr(listed.children, "_args", (failing,) + listed.children._args[1:])
    assert _deep(NormalizedDocument(text=text, blocks=(listed,), content_format="markdown")) == whole[:1]


@pytest.mark.parametrize("line_break", ["\n", "\r\n", "\r"])
def test_a_table_ends_at_a_blank_line_that_ends_a_window(monkeypatch, line_break):
    """A blank line ends a table even as the last line of a window: the pipe lines after it are a
    paragraph (parsed behind the header they would be rows). Every window size from 10 to 90 code
    points puts a window's end on the blank line."""
    text = ("| a | b |\n|---|---|\n" + "| 1 | 2 |\n" * 30 + "\n" + "| 3 | 4 |\n" * 30 + "\nAfter.\n").replace(
        "\n", line_break
    )
    whole = _deep(normalize_markdown(text))
    assert [b[0] for b in whole] == ["table", "paragraph", "paragraph"]
    for stream_window in range(10, 90):
        windowed, _, streamed = _streamed(monkeypatch, text, 40, stream_window)
        assert windowed == whole and streamed == 1, stream_window


@pytest.mark.parametrize(
    "text, kind",
    [
        ("".join(f"> - quoted item {i}\n" for i in range(600)), "quote"),
        ("- top item\n" + "".join(f"  - sub item {i}\n" for i in range(600)), "list"),
        ("".join(f"> quoted line {i}\n" for i in range(600)), "quote"),
    ],
)
def test_a_block_longer_than_the_largest_window_is_cut_where_windows_end(monkeypatch, text, kind):
    """A huge block that is neither raw nor a list or table read in windows (a quote, a list whose
    one item is huge) is cut where a window of MAX_WINDOW_CHARS ends: the parser never sees more
    than that window, no text is lost, each part is a block of the same kind, and a diagnostic
    names the block's line."""
    from transforms.structure.normalizers import markdown

    text = "# Title\n\n" + text + "\nAfter.\n"
    monkeypatch.setattr(markdown, "WINDOW_CHARS", 200)
    monkeypatch.setattr(markdown, "STREAM_WINDOW_CHARS", 200)
    monkeypatch.setattr(markdown, "MAX_WINDOW_CHARS", 800)
    parsed: list[int] = []
    real_parser = markdown._parser
    monkeypatch.setattr(markdown, "_parser", lambda front_matter=True: _Spy(real_parser(front_matter), parsed))
    doc = normalize_markdown(text)
    assert_well_formed(doc)
    assert_no_text_lost(doc)
    assert max(parsed) <= 800 + 40
    blocks = tuple(doc.blocks)  # (a stream: the document is read in windows)
    parts = [b for b in blocks if b.kind == kind]
    # A quote is cut once per largest window; the rest of a cut list's huge item starts with
    # item lines of its own, read from there as a list in windows.
    assert len(parts) >= (len(text) // 900 if kind == "quote" else 2)
    assert blocks[0].kind == "heading" and blocks[-1].kind == "paragraph"
    assert doc.diagnostics and "line 3 is longer than a window of 800 code points" in doc.diagnostics[0]
    assert _deep(normalize_markdown(text)) == _deep(doc)  # deterministic: the same cuts again
