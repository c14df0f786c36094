"""Tests of the reStructuredText normalizer: exact block sequences, nasty input, the real corpus."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.transforms.structure.normalizers.test_text import assert_no_text_lost, assert_well_formed, outline
from transforms.structure.normalizers.rst import normalize_rst


def blocks(text: str) -> list[tuple]:
    doc = normalize_rst(text)
    assert doc.text == text and doc.content_format == "rst" and doc.verbatim
    assert_well_formed(doc)
    assert_no_text_lost(doc)
    return outline(doc)


# -- section titles and transitions -------------------------------------------------------------


def test_titles_levels_follow_first_appearance_of_each_style():
    text = (
        "=========\n Overline\n=========\n\n"
        "Chapter\n=======\n\n"
        "Section  with   spaces\n----------------------\n\n"
        "Other chapter\n=============\n\n"
        "Deep\n~~~~\n"
    )
    assert blocks(text) == [
        ("heading", "=========\n Overline\n=========", {"level": 1, "title": "Overline"}),
        ("heading", "Chapter\n=======", {"level": 2, "title": "Chapter"}),
        ("heading", "Section  with   spaces\n----------------------", {"level": 3, "title": "Section with spaces"}),
        ("heading", "Other chapter\n=============", {"level": 2, "title": "Other chapter"}),
        ("heading", "Deep\n~~~~", {"level": 4, "title": "Deep"}),
    ]


def test_underline_length_rules():
    # Shorter than the title but 4 or more: a title (as docutils, with a note). Under 3: text.
    doc = normalize_rst("A long title\n====\n\nAb\n--\n\nAbc\n'''\n")
    assert outline(doc) == [
        ("heading", "A long title\n====", {"level": 1, "title": "A long title"}),
        ("paragraph", "Ab\n--"),
        ("heading", "Abc\n'''", {"level": 2, "title": "Abc"}),
    ]
    assert doc.diagnostics == ("1 section title(s) with an underline shorter than the title",)
    # "::" after a long line is the literal-block marker, not an underline.
    assert blocks("Run this\n::\n\n   ls\n") == [("paragraph", "Run this\n::"), ("code", "   ls")]


def test_titles_only_at_column_zero_and_not_mid_paragraph():
    text = "  Indented\n  ========\n\nline one\nline two\n========\n"
    assert blocks(text) == [
        ("quote", "  Indented\n  ========", [("paragraph", "  Indented\n  ========")]),
        ("paragraph", "line one\nline two\n========"),
    ]


def test_transition_and_adornment_lines_that_are_not_titles():
    text = "Before\n\n----------\n\nAfter\n\n-----\nNot a title\n=====\n"
    assert blocks(text) == [
        ("paragraph", "Before"),
        ("rule", "----------"),
        ("paragraph", "After"),
        ("paragraph", "-----\nNot a title\n====="),
    ]


def test_more_than_six_styles_are_capped():
    chars = "=-~^\"'+#"
    text = "".join(f"T{i}\n{c * 4}\n\n" for i, c in enumerate(chars))
    doc = normalize_rst(text)
    assert [b.level for b in doc.blocks] == [1, 2, 3, 4, 5, 6, 6, 6]
    assert doc.diagnostics == ("8 title styles: 2 title(s) deeper than level 6 kept at 6",)


def test_wide_characters_count_two_columns_in_a_title():
    assert blocks("\u4e2d\u6587\u6807\u9898\n========\n") == [
        ("heading", "\u4e2d\u6587\u6807\u9898\n========", {"level": 1, "title": "\u4e2d\u6587\u6807\u9898"})
    ]


# -- code ---------------------------------------------------------------------------------------


def test_literal_blocks_after_double_colon():
    text = "Example::\n\n    x = 1\n\n    y = 2\n\nAfter.\n\n::\n\n  expanded form\n\nNo literal::\n\nnot indented\n"
    assert blocks(text) == [
        ("paragraph", "Example::"),
        ("code", "    x = 1\n\n    y = 2"),
        ("paragraph", "After."),
        ("paragraph", "::"),
        ("code", "  expanded form"),
        ("paragraph", "No literal::"),
        ("paragraph", "not indented"),
    ]


def test_code_directives():
    text = (
        ".. code-block:: python\n   :linenos:\n\n   def f():\n       return 1\n\n"
        ".. code:: c\n\n   int x;\n\n"
        ".. sourcecode::\n\n   plain\n\n"
        "..  code-block:: sh\n"
        "After.\n"
    )
    assert blocks(text) == [
        (
            "code",
            ".. code-block:: python\n   :linenos:\n\n   def f():\n       return 1",
            {"language": "python", "fence": ".. code-block:: python\n"},
        ),
        ("code", ".. code:: c\n\n   int x;", {"language": "c", "fence": ".. code:: c\n"}),
        ("code", ".. sourcecode::\n\n   plain", {"fence": ".. sourcecode::\n"}),
        ("code", "..  code-block:: sh", {"language": "sh", "fence": "..  code-block:: sh\n"}),
        ("paragraph", "After."),
    ]


def test_other_directives_comments_and_targets_are_rules():
    text = (
        ".. note::\n\n   A note.\n\n   - with a list\n\n"
        ".. _label:\n\n"
        "..\n   a comment\n   on two lines\n\n"
        ".. [1] A footnote.\n"
        ".. |sub| replace:: text\n\n"
        ".. function:: f(x)\n\n   Body.\n\n      Deeper.\n\nBack at the margin.\n"
    )
    assert blocks(text) == [
        # A directive's line is its fence (repeated when the packer splits the directive).
        ("rule", ".. note::\n\n   A note.\n\n   - with a list", {"fence": ".. note::\n"}),
        ("rule", ".. _label:"),
        ("rule", "..\n   a comment\n   on two lines"),
        ("rule", ".. [1] A footnote."),
        ("rule", ".. |sub| replace:: text"),
        ("rule", ".. function:: f(x)\n\n   Body.\n\n      Deeper.", {"fence": ".. function:: f(x)\n"}),
        ("paragraph", "Back at the margin."),
    ]


def test_two_dots_without_space_are_text():
    assert blocks("..not a comment\n\n...\n") == [("paragraph", "..not a comment"), ("paragraph", "...")]


# -- lists --------------------------------------------------------------------------------------


def test_bullet_lists_nest_by_indentation():
    text = (
        "- item one\n  continued\n\n  second paragraph\n\n  * nested a\n  * nested b\n\n"
        "- item two::\n\n      literal in item\n\n"
        "+ other bullet, other list\n"
    )
    assert blocks(text) == [
        (
            "list",
            text[: text.index("+ other")].rstrip("\n"),
            {"level": 1},
            [
                (
                    "list_item",
                    "- item one\n  continued\n\n  second paragraph\n\n  * nested a\n  * nested b",
                    [
                        ("paragraph", "  second paragraph"),
                        (
                            "list",
                            "  * nested a\n  * nested b",
                            {"level": 2},
                            [("list_item", "  * nested a"), ("list_item", "  * nested b")],
                        ),
                    ],
                ),
                ("list_item", "- item two::\n\n      literal in item", [("code", "      literal in item")]),
            ],
        ),
        ("list", "+ other bullet, other list", {"level": 1}, [("list_item", "+ other bullet, other list")]),
    ]


def test_enumerated_lists():
    text = (
        "1. one\n2. two\n\n#. auto\n\n"
        "(a) paren\n(b) paren\n\n"
        "i) roman\n\n"
        "A. Smith wrote\nthis line.\n\n"
        "3.14 is not a marker\n\n"
        "(1)\n   Body on the next line.\n"
    )
    assert blocks(text) == [
        (
            "list",
            "1. one\n2. two\n\n#. auto",
            {"level": 1},
            [("list_item", "1. one"), ("list_item", "2. two"), ("list_item", "#. auto")],
        ),
        ("list", "(a) paren\n(b) paren", {"level": 1}, [("list_item", "(a) paren"), ("list_item", "(b) paren")]),
        ("list", "i) roman", {"level": 1}, [("list_item", "i) roman")]),
        ("paragraph", "A. Smith wrote\nthis line."),
        ("paragraph", "3.14 is not a marker"),
        (
            "list",
            "(1)\n   Body on the next line.",
            {"level": 1},
            [("list_item", "(1)\n   Body on the next line.", [("paragraph", "   Body on the next line.")])],
        ),
    ]


def test_unicode_bullets_and_item_ending_at_unindent():
    text = "\u2022 bullet\n  more\nback at margin\n"
    assert blocks(text) == [
        ("list", "\u2022 bullet\n  more", {"level": 1}, [("list_item", "\u2022 bullet\n  more")]),
        ("paragraph", "back at margin"),
    ]


def test_definition_lists():
    text = "term\n   Definition.\n\n   Second paragraph.\n\nterm two : classifier\n   Def two.\n\nplain\n"
    assert blocks(text) == [
        (
            "list",
            "term\n   Definition.\n\n   Second paragraph.\n\nterm two : classifier\n   Def two.",
            {"level": 1},
            [
                (
                    "list_item",
                    "term\n   Definition.\n\n   Second paragraph.",
                    [("paragraph", "   Definition."), ("paragraph", "   Second paragraph.")],
                ),
                ("list_item", "term two : classifier\n   Def two.", [("paragraph", "   Def two.")]),
            ],
        ),
        ("paragraph", "plain"),
    ]


def test_deeply_nested_lists_are_guarded():
    text = "".join("  " * depth + f"- level {depth}\n\n" for depth in range(200))
    doc = normalize_rst(text)
    assert_well_formed(doc)
    assert_no_text_lost(doc)
    assert doc.blocks[0].kind == "list"
    levels = [n.level for n in doc.blocks[0].walk() if n.kind == "list"]
    assert levels[:3] == [1, 2, 3]
    assert any("nested deeper than" in note for note in doc.diagnostics)


# -- tables -------------------------------------------------------------------------------------


GRID = """\
+-------+-------+
| A     | B     |
+=======+=======+
| 1     | spans |
+-------+ two   |
| 2     | rows  |
+-------+-------+
| 3     | 4     |
+-------+-------+
"""


def test_grid_table_with_header():
    assert blocks(GRID) == [
        (
            "table",
            GRID.rstrip("\n"),
            {"header_rows": 1},
            [
                ("table_row", "+-------+-------+\n| A     | B     |\n+=======+=======+"),
                ("table_row", "| 1     | spans |\n+-------+ two   |\n| 2     | rows  |\n+-------+-------+"),
                ("table_row", "| 3     | 4     |\n+-------+-------+"),
            ],
        )
    ]


def test_grid_table_without_header_and_unterminated():
    text = "+---+---+\n| a | b |\n+---+---+\n| c | d |\n\nafter\n"
    doc = normalize_rst(text)
    assert outline(doc) == [
        (
            "table",
            "+---+---+\n| a | b |\n+---+---+\n| c | d |",
            [
                ("table_row", "+---+---+\n| a | b |\n+---+---+"),
                ("table_row", "| c | d |"),
            ],
        ),
        ("paragraph", "after"),
    ]
    assert doc.diagnostics == ("grid table at line 1 does not end with a border",)
    assert blocks("+---+\n") == [("paragraph", "+---+")]


SIMPLE = """\
=====  ==========
Name   Value
=====  ==========
x      first
       continued
y      second

z      third
=====  ==========
"""


def test_simple_table_with_header_and_continuation_lines():
    assert blocks(SIMPLE) == [
        (
            "table",
            SIMPLE.rstrip("\n"),
            {"header_rows": 1},
            [
                ("table_row", "=====  ==========\nName   Value\n=====  =========="),
                ("table_row", "x      first\n       continued"),
                ("table_row", "y      second"),
                ("table_row", "z      third\n=====  =========="),
            ],
        )
    ]


def test_simple_table_without_header_and_without_bottom_border():
    text = "===  ===\na    b\nc    d\n===  ===\n\n===  ===\nno   end\n"
    doc = normalize_rst(text)
    assert outline(doc) == [
        (
            "table",
            "===  ===\na    b\nc    d\n===  ===",
            [
                ("table_row", "===  ===\na    b"),
                ("table_row", "c    d\n===  ==="),
            ],
        ),
        ("paragraph", "===  ===\nno   end"),
    ]
    assert doc.diagnostics == ("simple table at line 6 has no bottom border: read as text",)


def test_single_column_border_is_not_a_simple_table():
    assert blocks("=====\n\ntext\n") == [("rule", "====="), ("paragraph", "text")]


# -- quotes and paragraphs ----------------------------------------------------------------------


def test_block_quotes_hold_their_blocks():
    text = "Para.\n\n   Quoted para.\n\n   - quoted item\n\n      deeper quote\n\n   >>> 1 + 1\n   2\n\nBack.\n"
    assert blocks(text) == [
        ("paragraph", "Para."),
        (
            "quote",
            "   Quoted para.\n\n   - quoted item\n\n      deeper quote\n\n   >>> 1 + 1\n   2",
            [
                ("paragraph", "   Quoted para."),
                (
                    "list",
                    "   - quoted item\n\n      deeper quote",
                    {"level": 1},
                    [
                        (
                            "list_item",
                            "   - quoted item\n\n      deeper quote",
                            [
                                ("quote", "      deeper quote", [("paragraph", "      deeper quote")]),
                            ],
                        ),
                    ],
                ),
                ("paragraph", "   >>> 1 + 1\n   2"),
            ],
        ),
        ("paragraph", "Back."),
    ]


def test_paragraphs_are_maximal_runs():
    text = "One\n- not a list here\n.. nor a comment\n\n  \n\tTwo"
    assert blocks(text) == [
        ("paragraph", "One\n- not a list here\n.. nor a comment"),
        ("quote", "\tTwo", [("paragraph", "\tTwo")]),
    ]


# -- nasty input --------------------------------------------------------------------------------


def test_crlf_and_lone_cr():
    text = "Title\r\n=====\r\n\r\n- a\r\n- b\r\n\r\nText::\r\r  code\r"
    doc = normalize_rst(text)
    assert outline(doc) == [
        ("heading", "Title\r\n=====", {"level": 1, "title": "Title"}),
        ("list", "- a\r\n- b", {"level": 1}, [("list_item", "- a"), ("list_item", "- b")]),
        ("paragraph", "Text::"),
        ("code", "  code"),
    ]
    assert [(b.start, b.end) for b in doc.blocks] == [(0, 12), (16, 24), (28, 34), (36, 42)]
    assert_well_formed(doc)
    assert_no_text_lost(doc)


def test_tabs_count_to_the_next_multiple_of_eight():
    # The tab indents the literal block by 8 columns; the item body "\tmore" is inside the item.
    text = "Code::\n\n\tx = 1\n\n- item\n\tmore\n"
    assert blocks(text) == [
        ("paragraph", "Code::"),
        ("code", "\tx = 1"),
        ("list", "- item\n\tmore", {"level": 1}, [("list_item", "- item\n\tmore")]),
    ]


def test_odd_unicode_line_separators_are_not_line_breaks():
    text = "Title\u2028still title\n=================\n\nA\x0cB\n"
    assert blocks(text) == [
        ("heading", "Title\u2028still title\n=================", {"level": 1, "title": "Title still title"}),
        ("paragraph", "A\x0cB"),
    ]


@pytest.mark.parametrize("text", ["", "\n", "   \n\t\n", "\r\n\r", "\u00a0\n"])
def test_empty_and_whitespace_only(text):
    doc = normalize_rst(text)
    assert doc.blocks == () and doc.diagnostics == ()


def test_unterminated_constructs_at_the_end():
    assert blocks(".. code-block:: python") == [
        ("code", ".. code-block:: python", {"language": "python", "fence": ".. code-block:: python\n"})
    ]
    assert blocks("Text::") == [("paragraph", "Text::")]
    assert blocks("-") == [("list", "-", {"level": 1}, [("list_item", "-")])]
    assert blocks("Title\n=====") == [("heading", "Title\n=====", {"level": 1, "title": "Title"})]
    assert blocks("=====\nTitle") == [("paragraph", "=====\nTitle")]


def test_huge_single_line_is_fast():
    text = "word " * 2_000_000
    started = time.perf_counter()
    doc = normalize_rst(text)
    assert time.perf_counter() - started < 2
    assert [(b.kind, b.start, b.end) for b in doc.blocks] == [("paragraph", 0, len(text))]


def test_many_simple_table_tops_without_bottom_stay_linear():
    text = "===  ===\nx    y\n\n" * 20_000
    started = time.perf_counter()
    doc = normalize_rst(text)
    assert time.perf_counter() - started < 2
    assert len(doc.blocks) == 20_000


_LINE = st.sampled_from(
    [
        "",
        " ",
        "\t",
        "Title",
        "=====",
        "-----",
        "~~~",
        "::",
        "Text::",
        "- item",
        "* item",
        "  - nested",
        "1. one",
        "#. auto",
        "(a) x",
        "  indented",
        "      deeper",
        ".. note::",
        ".. code-block:: py",
        "..",
        "   :linenos:",
        "+---+---+",
        "| a | b |",
        "+===+===+",
        "===  ===",
        "a    b",
        "term",
        "   definition",
        "\u2022 dot",
        ">>> 1",
        "\u00a0",
        "\u4e2d\u6587",
    ]
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINE, max_size=40), st.sampled_from(["\n", "\r\n", "\r"]))
def test_any_line_soup_keeps_the_invariants(lines, newline):
    text = newline.join(lines)
    doc = normalize_rst(text)
    assert doc.text == text
    assert_well_formed(doc)
    assert_no_text_lost(doc)


# -- the real corpus ----------------------------------------------------------------------------


@pytest.mark.slow
def test_corpus_rst_documents(shared_data):
    import pyarrow.parquet as pq

    table = pq.read_table(shared_data("corpus/docs.parquet"), columns=["content", "content_format"])
    documents = [row["content"] for row in table.to_pylist() if row["content_format"] == "rst"]
    assert documents
    kinds: set[str] = set()
    for content in documents:
        doc = normalize_rst(content)
        assert doc.text == content
        assert_well_formed(doc)
        assert_no_text_lost(doc)
        kinds.update(node.kind for block in doc.blocks for node in block.walk())
    assert kinds == {"heading", "paragraph", "code", "rule", "list", "list_item", "table", "table_row", "quote"}
