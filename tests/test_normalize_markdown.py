"""The Markdown normalizer: exact blocks for the traps of real Markdown, and the whole corpus."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

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


@pytest.mark.parametrize("offset", [0, 1, 3])
def test_byte_offsets_become_code_points_across_blocks(offset):
    """The compact byte -> code point map (a count per 256-byte block plus one byte per byte)
    equals a plain running count of UTF-8 lead bytes at every offset, past the end included."""
    import random

    from transforms.structure.normalizers.markdown import _Positions

    rng = random.Random(offset)
    for size in (1, 255, 256, 257, 700, 3000):
        text = "é" + "".join(rng.choice(["a", "é", "€", "😀", "\n", " "]) for _ in range(size))
        positions = _Positions(text, offset, len(text))
        assert not positions.ascii or offset > 0
        if positions.ascii:
            continue
        raw = text[offset:].encode("utf-8")
        expected, count = [], offset
        for byte in raw:
            expected.append(count)
            count += (byte & 0xC0) != 0x80
        expected.append(count)
        got = [positions.code_point(b) for b in range(len(raw) + 3)]
        assert got == expected + [count, count]
        assert positions.interval((0, len(raw) + 5)) == (offset, len(text))


@pytest.mark.parametrize("space", ["\f", "\v", "\u00a0", "\u2028", "\u3000", "\f\u00a0 "])
def test_a_line_of_unicode_whitespace_is_no_block(space):
    """CommonMark's blank lines are spaces and tabs only, so the parser makes a paragraph of a line
    holding a form feed or a no-break space: whitespace only, which no block may be."""
    for text in (f"{space}\n", f"a\n\n{space}\n\nb\n", f"- {space}\n- x\n", f"> {space}\n", f"| a |\n|---|\n{space}\n"):
        doc = normalize_markdown(text)
        assert_well_formed(doc)
        assert_no_text_lost(doc)
    assert outline(normalize_markdown(f"a\n\n{space}\n\nb\n")) == [("paragraph", "a"), ("paragraph", "b")]
