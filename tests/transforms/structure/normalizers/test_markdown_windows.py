"""The Markdown normalizer's windows: each case gives the blocks of one whole parse when parsed a
window at a time, where a window's end falls in a construct that a window alone would read
otherwise (small windows stand for the real ones: WINDOW_CHARS 1 Mi code points, WINDOW_LINES
8192, STREAM_WINDOW_CHARS 64 Ki)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.transforms.structure.normalizers.test_markdown import _deep, _Spy, _streamed
from transforms.structure.normalizers.markdown import normalize_markdown

# (text, WINDOW_CHARS, STREAM_WINDOW_CHARS)
_CASES = {
    # Front matter longer than the first window: its closing line is past the window, where the
    # window's parse read "----" as a thematic break and the rest as other blocks.
    "front matter past the first window": ("----\r-x | y\n- in comment -->\n  ```\n----\n", 31, 202),
    "front matter closed by an indented longer line": (
        "---\ntitle: x\n" + "".join(f"key{i}: value {i}\n\n" for i in range(200)) + "  -----  x\n# After\n\n- a\n- b\n",
        100,
        64,
    ),
    "front matter of CR lines": (
        "---\r" + "".join(f"k{i}: v\r\r" for i in range(100)) + "---\r" + "para\r" * 50,
        64,
        64,
    ),
    # A table window of dense non-ASCII text behind a header copy of more than 256 bytes: the
    # table node starts inside the copy, at a negative offset, which must not index before the
    # window's first 256-byte block (an IndexError would make the whole document a chunker_error).
    "table of non-ASCII rows behind a long header": ("|" + " h |" * 40 + "\n|" + "---|" * 40 + "\nx\u2028\n", 100, 100),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_documents_read_in_windows_give_the_whole_parses_blocks(monkeypatch, name):
    text, window, stream_window = _CASES[name]
    whole = _deep(normalize_markdown(text))
    assert _streamed(monkeypatch, text, window, stream_window)[0] == whole


def test_front_matter_longer_than_a_window_is_one_block_and_the_parser_sees_it_once(monkeypatch):
    """Front matter the first window cannot hold is parsed alone (one node), and the windows go on
    after it; the blocks are a whole parse's."""
    text = "---\n" + "".join(f"- item {i}\n" for i in range(300)) + "---\n\n# Title\n\n" + "Para.\n\n" * 100
    whole = _deep(normalize_markdown(text))
    assert whole[0][:3] == ("rule", 0, text.index("---\n\n#") + 3)
    windowed, parsed, _ = _streamed(monkeypatch, text, 200, 200)
    assert windowed == whole
    # (Every pass over the blocks parses the document again: the front matter alone once a pass.)
    assert parsed[0] == text.index("\n\n# Title") + 1 and all(p == parsed[0] or p < 600 for p in parsed)


def test_a_document_of_more_lone_cr_lines_than_window_lines_is_windowed(monkeypatch):
    from transforms.structure.normalizers import markdown

    text = "".join(f"Para {i}\r\r" for i in range(500))
    whole = _deep(normalize_markdown(text))
    monkeypatch.setattr(markdown, "WINDOW_LINES", 100)
    windowed, parsed, _ = _streamed(monkeypatch, text, len(text) + 1, 1 << 16)
    assert windowed == whole and len(parsed) > 5


@pytest.mark.parametrize(
    "header, delimiter",
    [("<div>", "|---|"), ("<!-- c", "---|"), ("<script> | x", "|---|---|"), ("<div>\t| b |", "--|:-:")],
)
def test_an_html_line_that_heads_a_table_is_a_table_wherever_a_window_ends(monkeypatch, header, delimiter):
    """A line that opens an HTML block followed by a delimiter row is a table's header (the parser
    tries tables first): every window size from 10 to 70 code points puts a window's end after it
    in some window, and the blocks stay a whole parse's."""
    text = "P\n\n" * 9 + header + "\n" + delimiter + "\n" + "| 1 | 2 |\n" * 5 + "\n<div>\nhtml\n\nAfter.\n"
    whole = _deep(normalize_markdown(text))
    assert [b[0] for b in whole][9:] == ["table", "html", "paragraph"]
    for window in range(10, 70):
        assert _streamed(monkeypatch, text, window, 64)[0] == whole, window


@pytest.mark.parametrize("item", ["* \n\t2\n", "- a\n\tb\t\n", "1. \n\t\tx\n", "- \n  \tz\n"])
def test_children_parsed_again_keep_a_tab_expanded_text_past_the_block_out(monkeypatch, item):
    """The parser reports a tight item's text after an expanded tab a few bytes past the real text:
    in a whole parse that falls on the blank line after the list (no block), and the children a
    long document's list parses again from its own text must drop it too (they made it a
    paragraph of the item)."""
    text = "P\n\n" * 30 + item + "\n =  after\n\n" + "P\n\n" * 30
    whole = _deep(normalize_markdown(text))
    for window in (40, 71, 130):
        assert _streamed(monkeypatch, text, window, 64)[0] == whole, window


@pytest.mark.parametrize("line_break", ["\r", "\r\n", "\n"])
def test_a_fences_first_line_ends_at_any_line_break(monkeypatch, line_break):
    """``fence`` is the opening line: a lone "\\r" ends it (it ran on to the next "\\n", so a window
    ending at the "\\r" gave another value than the whole parse)."""
    text = "para\n\n" + "```py" + line_break + "code" + line_break + "# x" + line_break + "```\n\nafter\n"
    doc = normalize_markdown(text)
    assert [(b.kind, b.fence, b.language) for b in doc.blocks][1] == ("code", "```py", "py")
    minimized = "=>\x00= !-91-.=_a    |---|\r```9\r#😀=: 1. - >\x00!"
    whole = _deep(normalize_markdown(minimized))
    assert whole[1][6] == "```9"
    monkeypatch.setattr("transforms.structure.normalizers.markdown.WINDOW_LINES", 18)
    assert _streamed(monkeypatch, minimized, 28, 28)[0] == whole


@pytest.mark.parametrize(
    "block_item", ["- ```\n  x\n\n  y\n  ```\n", "- <div>\n  x\n  </div>\n", "-\n", "1. ```\n   x\n   ```\n"]
)
def test_a_list_loose_by_a_blank_line_between_items_without_paragraphs_is_loose_in_every_window(
    monkeypatch, block_item
):
    """A blank line between items that hold no paragraph (fenced code, HTML, empty items) makes the
    whole list loose; a later window of items with text alone is tight, where the parser cuts an
    item's trailing whitespace ("- \\n  b \\t": the paragraph is "b \\t" loose, "b" tight). Such a
    window is parsed again behind an item of the list to see it."""
    later = "- \n  b \t\n" if block_item[0] == "-" else "1. \n   b \t\n"
    text = block_item * 30 + "\n" + block_item * 30 + later * 200 + "\nAfter\n"
    whole = _deep(normalize_markdown(text))
    assert whole[0][8][-1][8][0][0:3:2] == ("paragraph", len(text) - len("\n\nAfter\n"))  # "b \t": loose
    for window, stream_window in ((300, 64), (200, 128), (100, 40)):
        windowed, _, streamed = _streamed(monkeypatch, text, window, stream_window)
        assert windowed == whole and streamed == 1, (window, stream_window)


def test_the_diagnostic_of_a_cut_block_names_the_line_cap_and_counts_lone_cr_lines():
    """A block of more lines than the largest window holds is cut even when it is short in code
    points (a 20 000-line quote of 360 KB, a known limit): the diagnostic says
    so, and counts a lone "\\r" as a line break."""
    text = "# T\r\r" + "".join(f"> quoted line {i}\r" for i in range(20000)) + "\rAfter.\r"
    doc = normalize_markdown(text)
    assert [b.kind for b in doc.blocks] == ["heading", "quote", "quote", "paragraph"]
    assert doc.diagnostics == (
        "the block on line 3 is longer than a window of 2097152 code points or 16384 lines "
        "(a line of a wide table or opening many containers weighs more): "
        "cut where each window ends",
    )


@pytest.mark.parametrize(
    "text, window, stream_window, window_lines",
    [
        ("  ```\n  - 😀\n  | a | b |\n  ```\n-\n  b \t\r-\t\x00\r\n-\ta\n\n-\t<div>\u2028\n-\t|\n", 56, 21, None),
        ("- \n  - x\n  | a | b |\n  ```\n  cont\n-\n  b\t\t\r\n- x | y\n  \r- `c|d`\r  |---|---|\n", 215, 23, 3),
    ],
)
def test_a_window_ending_on_a_table_header_after_a_blank_line_does_not_make_the_list_loose(
    monkeypatch, text, window, stream_window, window_lines
):
    """A streamed list's window whose last line (a table header) follows a blank line does not
    read that line, without the delimiter row under it, as an item, which would make the window's
    list loose, and the items kept from it (and the whole list's looseness) with it. The tight
    list keeps its items' text trimmed."""
    whole = _deep(normalize_markdown(text))
    if window_lines:
        monkeypatch.setattr("transforms.structure.normalizers.markdown.WINDOW_LINES", window_lines)
    assert _streamed(monkeypatch, text, window, stream_window)[0] == whole


@pytest.mark.slow
def test_no_stream_window_of_a_tight_list_followed_by_a_table_after_a_blank_line_makes_it_loose(monkeypatch):
    text = "".join("-\n  b \t\n" for _ in range(300)) + "\n-\t<div>\n-\t|\n" + "| 1 |\n" * 50
    whole = _deep(normalize_markdown(text))
    assert [b[0] for b in whole] == ["list", "table"]
    for stream_window in range(16, 120):
        assert _streamed(monkeypatch, text, 300, stream_window)[0] == whole, stream_window


def test_blank_lines_do_not_count_towards_a_windows_lines():
    """A short list with 20 000 blank lines inside is more lines than the largest window holds,
    but blank lines make no parse tree: it is read whole, as one parse reads it, not cut."""
    from transforms.structure.normalizers import markdown
    from transforms.structure.tree import StreamedChildren

    text = "# T\n\n- a\n" + "\n" * 20000 + "- b\n- c\n" + " \t\r\n" * 20000 + "After.\n"
    doc = normalize_markdown(text)
    assert not doc.diagnostics
    pos = markdown._Positions(text)
    whole = [markdown._convert(node, pos, 0) for node in markdown._parser().tree(text).children]

    def deep(n):
        children = list(n.children) if isinstance(n.children, StreamedChildren) else n.children
        return (n.kind, n.start, n.end, tuple(deep(c) for c in children))

    assert [deep(b) for b in doc.blocks] == [deep(b) for b in whole if b is not None]


def _parsed_texts(monkeypatch, text: str, **sizes) -> tuple[tuple, list[str]]:
    """The deep outline of ``text`` with the normalizer's sizes set (streamed children iterated),
    and every text handed to the parser."""
    from transforms.structure.normalizers import markdown

    whole = _deep(normalize_markdown(text))
    texts: list[str] = []
    real_parser = markdown._parser
    for name, value in sizes.items():
        monkeypatch.setattr(markdown, name, value)
    monkeypatch.setattr(markdown, "_parser", lambda front_matter=True: _Spy(real_parser(front_matter), texts, keep=str))
    doc = normalize_markdown(text)
    assert _deep(doc) == whole
    return whole, texts


def _cells(text: str) -> int:
    """What the parser makes of ``text`` at most, in table cells: its lines times its widest
    delimiter row's columns."""
    widths = [line.count("|") - 1 for line in text.split("\n") if re.fullmatch(r"\|(?:-+\|)+", line)]
    return text.count("\n") * max(widths, default=1)


def test_a_wide_table_over_many_short_rows_is_parsed_a_few_rows_at_a_time(monkeypatch):
    """The parser gives every row as many cells as the delimiter row has columns (2,000 columns
    over 2,000 one-cell rows, 16 KB of text, took 1.9 GB): a window holds at most WINDOW_CELLS
    cells' worth of rows, counted at the widest delimiter row in it, whatever its size in
    characters, and the body's later windows are parsed behind a one-column table. Blocks are a
    whole parse's."""
    columns = 60
    text = "# T\n\n|" + " h |" * columns + "\n|" + "---|" * columns + "\n" + "| x |\n" * 400 + "\nAfter.\n"
    whole, texts = _parsed_texts(monkeypatch, text, WINDOW_CELLS=600, STREAM_WINDOW_CHARS=400)
    assert [kind for kind, *_ in whole] == ["heading", "table", "paragraph"] and len(whole[1][-1]) == 401
    assert len(texts) > 10 and any(t.startswith("| a |\n|---|\n") for t in texts)
    # At most 600 cells, twice that while a window doubles, plus the two lines before the rows.
    assert max(_cells(t) for t in texts) <= 2 * 600 + 2 * columns


def test_a_short_document_with_a_wide_table_over_many_rows_is_read_in_windows(monkeypatch):
    """Under WINDOW_CHARS and WINDOW_LINES, a document is still windowed when a wide table's
    cells make a larger tree than a window may: 2,000 columns over 2,000 rows is never parsed whole."""
    text = "|" + "a|" * 2000 + "\n|" + "-|" * 2000 + "\n" + "|x|\n" * 2000
    texts: list[str] = []
    from transforms.structure.normalizers import markdown

    real_parser = markdown._parser
    monkeypatch.setattr(markdown, "_parser", lambda front_matter=True: _Spy(real_parser(front_matter), texts, keep=str))
    doc = normalize_markdown(text)
    blocks = tuple(doc.blocks)  # (a stream: the document is read in windows)
    assert [b.kind for b in blocks] == ["table"] and blocks[0].end == len(text) - 1
    assert sum(1 for _ in blocks[0].children) == 2001
    assert max(_cells(t) for t in texts) <= 2 * markdown.WINDOW_CELLS + 2 * 2000


@pytest.mark.slow
@pytest.mark.parametrize(
    "line", ["- " * 20 + "x\n", "1. " * 12 + "- " * 8 + "y\n", "- > " * 10 + "z\n", "- " + "> " * 20 + "q\n\n"]
)
def test_lines_opening_many_containers_weigh_more_in_a_window(monkeypatch, line):
    """A line opening many lists or quotes (a node or two each) counts as half its container
    markers more lines: "- " * 99 + "x" lines took 1.2 GB per 1 Mi-character window, and
    "> " * 99 + "x" lines between blank lines 528 MiB for a 1 MB document. Blocks are a whole
    parse's."""

    text = "# T\n\n" + line * 300 + "\nAfter.\n"
    _, texts = _parsed_texts(monkeypatch, text, WINDOW_LINES=100, WINDOW_CHARS=1 << 20)
    weight = 1 + (len(line.split()) - 1) // 2
    assert len(texts) > 5
    # A parse holds lines weighing at most the lines of the largest window (2 Mi code points: 200),
    # plus the two items a window drops and parses again.
    assert max(t.count("\n") for t in texts) <= 200 // weight + 3


def test_a_long_table_of_chinese_rows_behind_a_long_header_is_read_at_the_default_sizes():
    """The same fault at the real sizes: a 30-column table with Chinese cells and 9,216 rows (its
    last window a few rows of dense UTF-8 behind a 400-byte header copy) raised IndexError."""
    header = "| " + " | ".join(f"列名{i}" for i in range(30)) + " |\n|" + "---|" * 30 + "\n"
    text = "# 表\n\n" + header + "".join(f"| 数据{i} | 值 |\n" for i in range(9216))
    doc = normalize_markdown(text)
    blocks = tuple(doc.blocks)  # (a stream: the document is read in windows)
    assert [b.kind for b in blocks] == ["heading", "table"]
    rows = list(blocks[1].children)
    assert len(rows) == 9217 and text[rows[-1].start : rows[-1].end] == "| 数据9215 | 值 |"


@pytest.mark.slow
@pytest.mark.parametrize("odd_indent", ["", " "])
def test_a_list_of_items_longer_than_a_stream_window_is_parsed_about_once_a_reading(monkeypatch, odd_indent):
    """A window of a streamed list must hold three items to keep one; rather than doubling from
    the stream window's size and parsing again at every doubling (the corpus's 1 MB table of
    contents, whose items are up to 800 KB, would be parsed about 20 times over), the first window
    is sized to reach the third item's line, found by its marker indented less than the item's
    content (siblings need not be indented alike): each window is parsed about once a reading
    (one to find the list's end, one to stream its items). Blocks are a whole parse's."""
    text = (
        "# T\n\n"
        + "".join(
            (odd_indent if k % 2 else "") + f"- item {k}\n" + "".join(f"    - sub {k}.{j}\n" for j in range(200))
            for k in range(8)
        )
        + "\nAfter.\n"
    )
    whole, texts = _parsed_texts(monkeypatch, text, WINDOW_CHARS=2000, STREAM_WINDOW_CHARS=400)
    assert [kind for kind, *_ in whole] == ["heading", "list", "paragraph"] and len(whole[1][-1]) == 8
    windows = Counter(t[: t.index("\n")].strip() for t in texts if t.lstrip(" ").startswith("- item"))
    assert len(windows) >= 3
    # (Doubling from 400 code points would parse each window 10 to 15 times: 5 doublings, two readings.)
    assert max(windows.values()) <= 6
    assert sum(map(len, texts)) <= 4 * len(text)


def test_a_tight_list_is_not_parsed_again_to_learn_whether_it_is_loose(monkeypatch):
    """A list window with no paragraph is parsed again behind a loose probe item only when a
    blank line lies before the list's last text (one that can make it loose). A window's own
    end, and blank lines after the list, do not count as such a blank line, so no window of a
    tight streamed list is parsed twice."""
    text = "# T\n\n" + "".join(f"- item {k}\n" for k in range(300)) + "\n\n  \nAfter.\n"
    whole, texts = _parsed_texts(monkeypatch, text, WINDOW_CHARS=1000, STREAM_WINDOW_CHARS=400)
    assert [kind for kind, *_ in whole] == ["heading", "list", "paragraph"] and len(whole[1][-1]) == 300
    assert sum(t.startswith("- item") for t in texts) >= 6
    assert not [t for t in texts if t.startswith("-    x\n")]
