"""Tests of the reStructuredText normalizer's large-document path: line data a page at a time,
huge blocks' children streamed (``LARGE_CHARS``, ``PAGE_LINES`` and ``STREAM_CHARS`` forced small)."""

from __future__ import annotations

import dataclasses
import json
import tracemalloc

import pytest

from tests.conftest import REPO
from transforms.structure.normalizers import rst
from transforms.structure.normalizers.rst import normalize_rst
from transforms.structure.tree import Node, StreamedChildren, check_blocks


@pytest.fixture
def large(monkeypatch):
    """Every document takes the large path, pages of two lines, children over 10 code points streamed."""
    monkeypatch.setattr(rst, "LARGE_CHARS", 0)
    monkeypatch.setattr(rst, "PAGE_LINES", 2)
    monkeypatch.setattr(rst, "PAGE_CHARS", 1000)
    monkeypatch.setattr(rst, "STREAM_CHARS", 10)


def tree(nodes) -> list:
    """Every field of every node, children (streamed or not) as lists, recursively."""
    return [
        (n.kind, n.start, n.end, n.level, n.title, n.language, n.fence, n.header_rows, tree(n.children)) for n in nodes
    ]


def test_a_long_list_streams_its_items(large):
    text = "- a\n- b\n- c\n\npara\n"
    doc = normalize_rst(text)
    listed, paragraph = doc.blocks
    assert paragraph == Node("paragraph", 13, 17)
    assert (listed.kind, listed.start, listed.end, listed.level) == ("list", 0, 11, 1)
    assert type(listed.children) is StreamedChildren  # 11 code points from the first item's start to the last one's end
    items = [Node("list_item", 0, 3), Node("list_item", 4, 7), Node("list_item", 8, 11)]
    assert list(listed.children) == items
    assert list(listed.children) == items  # made again, the same
    check_blocks(doc)


def test_a_short_list_keeps_a_tuple(large):
    doc = normalize_rst("- a\n- b\n")
    assert tuple(doc.blocks) == (Node("list", 0, 7, (Node("list_item", 0, 3), Node("list_item", 4, 7)), level=1),)


def test_grid_table_rows_streamed(large):
    text = "+---+---+\n| a | b |\n+===+===+\n| 1 | 2 |\n+---+---+\n| 3 | 4 |\n+---+---+\n"
    (table,) = normalize_rst(text).blocks
    assert (table.kind, table.start, table.end, table.header_rows) == ("table", 0, 69, 1)
    assert type(table.children) is StreamedChildren
    assert list(table.children) == [Node("table_row", 0, 29), Node("table_row", 30, 49), Node("table_row", 50, 69)]


def test_simple_table_rows_streamed_with_a_continuation_line(large):
    text = "=== ===\na   b\n=== ===\n1   2\n    x\n3   4\n=== ===\n"
    (table,) = normalize_rst(text).blocks
    assert (table.kind, table.start, table.end, table.header_rows) == ("table", 0, 47, 1)
    assert list(table.children) == [Node("table_row", 0, 21), Node("table_row", 22, 33), Node("table_row", 34, 47)]


def test_simple_table_header_without_body_takes_the_bottom_border(large):
    text = "=== ===\na   b\n=== ===\n=== ===\n"
    assert tree(normalize_rst(text).blocks) == [
        (
            "table",
            0,
            29,
            0,
            "",
            "",
            "",
            1,
            [
                ("table_row", 0, 29, 0, "", "", "", 0, []),
            ],
        )
    ]


def test_quote_with_crlf_streams_its_blocks(large):
    text = "Intro\r\n\r\n   q1\r\n\r\n   q2\r\n"
    para, quote = normalize_rst(text).blocks
    assert para == Node("paragraph", 0, 5)
    assert (quote.kind, quote.start, quote.end) == ("quote", 9, 23)
    assert type(quote.children) is StreamedChildren
    assert list(quote.children) == [Node("paragraph", 9, 14), Node("paragraph", 18, 23)]


def test_title_levels_across_pages(large):
    text = "Title\n=====\n\nSub\n---\n\nTwo\n===\n"
    assert tuple(normalize_rst(text).blocks) == (
        Node("heading", 0, 11, level=1, title="Title"),
        Node("heading", 13, 20, level=2, title="Sub"),
        Node("heading", 22, 29, level=1, title="Two"),
    )


def test_item_holding_a_long_nested_list(large):
    text = "- top\n\n  - a\n  - b\n  - c\n"
    (outer,) = normalize_rst(text).blocks
    assert tree([outer]) == [
        (
            "list",
            0,
            24,
            1,
            "",
            "",
            "",
            0,
            [
                (
                    "list_item",
                    0,
                    24,
                    0,
                    "",
                    "",
                    "",
                    0,
                    [
                        (
                            "list",
                            7,
                            24,
                            2,
                            "",
                            "",
                            "",
                            0,
                            [
                                ("list_item", 7, 12, 0, "", "", "", 0, []),
                                ("list_item", 13, 18, 0, "", "", "", 0, []),
                                ("list_item", 19, 24, 0, "", "", "", 0, []),
                            ],
                        ),
                    ],
                ),
            ],
        ),
    ]


def test_lone_cr_and_a_last_line_without_break(large):
    text = "a\rb\r\rc"
    assert tuple(normalize_rst(text).blocks) == (Node("paragraph", 0, 3), Node("paragraph", 5, 6))


def test_diagnostics_kept_in_order(large, monkeypatch):
    text = (
        "- item\n\n  +---+\n  | a |\n\n"  # a grid table without a closing border, in an item
        "===  ===\nx    y\n===  ===\nz\n\n"  # a simple table without a bottom border
        "- b\n- c\n- d\n"
    )
    large_doc = normalize_rst(text)
    monkeypatch.setattr(rst, "LARGE_CHARS", 1 << 20)
    whole = normalize_rst(text)
    assert large_doc.diagnostics == whole.diagnostics
    assert len(whole.diagnostics) == 2
    assert tree(large_doc.blocks) == tree(whole.blocks)


DOCUMENTS = [
    "Title\n=====\n\n" + "".join(f"- item {i}\n\n  more {i}\n\n  - sub {i}\n" for i in range(30)),
    "".join(f"term {i}\n   definition {i}\n\n   - x\n   - y\n\n" for i in range(20)),
    "Text::\n\n" + "    code\n" * 30 + "\n" + "   quoted\n\n      deeper\n" * 20,
    "+---+---+\n| a | b |\n+===+===+\n" + "| 1 | x |\n+---+   |\n| 2 | y |\n+---+---+\n" * 15,
    "===  ===\na    b\n===  ===\n" + "1    2\n     3\n-----\n" * 15 + "===  ===\n",
    ".. code-block:: python\n\n" + "   x = 1\n" * 20 + "\n.. note::\n\n   body\n\n" + "#. one\n#. two\n" * 10,
    "".join("  " * i + "- n\n\n" for i in range(70)),
    "".join("   " * i + "q\n\n" for i in range(70)),
    ("\t- tab\n\t  more\n\n" * 10).replace("\n", "\r\n"),
    "===\nTop\n===\n\n" + "| line block\n" * 40 + "\n----\n\nend\n",
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "page_lines, page_chars, stream_chars",
    [(1, 1, 0), (2, 1000, 5), (3, 1, 40), (1000, 20, 300), (4096, 1 << 18, 65536)],
)
@pytest.mark.parametrize("index", range(len(DOCUMENTS)))
def test_large_path_same_blocks_as_whole_path(monkeypatch, index, page_lines, page_chars, stream_chars):
    text = DOCUMENTS[index]
    whole = normalize_rst(text)
    assert not any(type(n.children) is StreamedChildren for b in whole.blocks for n in b.walk())
    monkeypatch.setattr(rst, "LARGE_CHARS", 0)
    monkeypatch.setattr(rst, "PAGE_LINES", page_lines)
    monkeypatch.setattr(rst, "PAGE_CHARS", page_chars)
    monkeypatch.setattr(rst, "STREAM_CHARS", stream_chars)
    large_doc = normalize_rst(text)
    assert large_doc.diagnostics == whole.diagnostics
    assert tree(large_doc.blocks) == tree(whole.blocks)
    assert tree(large_doc.blocks) == tree(whole.blocks)  # streamed children made again, the same
    check_blocks(large_doc)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        "a\n",
        "\n\n\n",
        "ab\ncd\n\nef",
        "a\r\nb\rc\n\r\n",
        "\r",
        "\r\n",
        "x" * 50 + "\n" + "y\n" * 9 + "z" * 30,
        "long line\r\n" * 7 + "\r" * 5 + "end",
    ],
)
@pytest.mark.parametrize("page_lines, page_chars", [(1, 1), (2, 1), (3, 7), (2, 1000), (1000, 5), (4, 12)])
def test_pages_cover_every_line_once(monkeypatch, text, page_lines, page_chars):
    """Pages cut by lines and by code points hold the lines, starts and indents of the whole text."""
    from transforms.structure.normalizers.text import split_lines

    monkeypatch.setattr(rst, "PAGE_LINES", page_lines)
    monkeypatch.setattr(rst, "PAGE_CHARS", page_chars)
    pages = rst._Pages(text)
    lines, starts = split_lines(text)
    assert pages.count == len(lines)
    sizes = [len(pages.make(p)[0]) for p in range(len(pages.page_starts))]
    assert all(0 < size <= page_lines for size in sizes)
    assert pages.page_lines == [sum(sizes[:p]) for p in range(len(sizes))]
    columns = [rst._Column(pages, field) for field in range(3)]
    for i in list(range(len(lines))) + list(reversed(range(len(lines)))):
        assert (columns[0][i], columns[1][i], columns[2][i]) == (lines[i], starts[i], rst._indent(lines[i]))
    assert list(columns[2].levels(0, len(lines))) == [rst._indent(line) for line in lines]


def _peak_bytes(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_a_huge_list_is_never_held(monkeypatch):
    """50,000 items: held whole, about 10 MB of nodes and line data; streamed, a page and a few items."""
    monkeypatch.setattr(rst, "LARGE_CHARS", 1000)
    monkeypatch.setattr(rst, "PAGE_LINES", 256)
    monkeypatch.setattr(rst, "PAGE_CHARS", 1 << 18)
    monkeypatch.setattr(rst, "STREAM_CHARS", 1000)
    text = "".join(f"- {i % 7}\n" for i in range(50_000))
    kept = []
    normalize = lambda: kept.append(normalize_rst(text))  # noqa: E731
    assert _peak_bytes(normalize) < 600_000
    (listed,) = kept[0].blocks
    assert type(listed.children) is StreamedChildren and (listed.start, listed.end) == (0, len(text) - 1)
    count = [0]

    def walk():
        for _item in listed.children:
            count[0] += 1

    assert _peak_bytes(walk) < 600_000
    assert count[0] == 50_000
    monkeypatch.setattr(rst, "LARGE_CHARS", 1 << 20)
    assert _peak_bytes(lambda: normalize_rst(text)) > 5_000_000  # the whole path holds it all


# -- the benchmark scripts (tiny inputs, so that they cannot rot) ------------------------------------


@pytest.mark.slow
def test_rst_fuzz_runs_and_finds_a_difference(monkeypatch, capsys):
    from benchmarks.differential import rst_fuzz

    args = [
        "--corpus",
        str(REPO / "sample" / "docs.parquet"),
        "--generated",
        "3",
        "--mutated",
        "2",
        "--chunks-every",
        "2",
    ]
    assert rst_fuzz.main(args) == 0
    counts = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert counts["documents"] == 6 and counts["differences"] == 0 and counts["chunk comparisons"] > 0
    right = rst.normalize_rst

    def wrong(text):  # one code point off at the end of the last block
        doc = right(text)
        last = doc.blocks[-1]
        moved = Node(last.kind, last.start, last.end - 1, last.children, level=last.level, title=last.title)
        return dataclasses.replace(doc, blocks=doc.blocks[:-1] + (moved,))

    monkeypatch.setattr(rst, "normalize_rst", wrong)
    assert rst_fuzz.main(args[:2] + ["--generated", "0", "--mutated", "0", "--chunks-every", "0"]) == 1
    assert "DIFFERENCE: corpus document 0" in capsys.readouterr().out


def test_rst_big_blocks_writes_one_row_documents(tmp_path):
    import pyarrow.parquet as pq

    from benchmarks import rst_big_blocks

    assert (
        rst_big_blocks.main(["--chars", "2000", "--out", str(tmp_path), "--only", "grid_table", "--only", "list_short"])
        == 0
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid_table.parquet", "list_short.parquet"]
    rows = pq.read_table(tmp_path / "grid_table.parquet").to_pylist()
    assert len(rows) == 1 and rows[0]["content_format"] == "rst" and rows[0]["metadata"] is None
    assert len(rows[0]["content"]) >= 2000
    (table,) = normalize_rst(rows[0]["content"]).blocks
    assert table.kind == "table" and table.header_rows == 1
