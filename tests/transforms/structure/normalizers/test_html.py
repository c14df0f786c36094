"""Tests of the HTML normalizer (HTML rendered as Markdown): exact renderings, nasty input, corpus."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.transforms.structure.normalizers.test_text import assert_no_text_lost, assert_well_formed, outline
from transforms.structure.normalizers.html import normalize_html


def render(html: str) -> tuple[str, list[tuple]]:
    """The Markdown text and the outline of its blocks, after the invariant checks."""
    doc = normalize_html(html)
    assert doc.content_format == "html" and not doc.verbatim
    assert_well_formed(doc)
    assert_no_text_lost(doc)
    if doc.blocks:
        assert doc.text.endswith("\n") and not doc.text.endswith("\n\n")
    else:
        assert doc.text == ""
    return doc.text, outline(doc)


# -- headings and paragraphs --------------------------------------------------------------------


def test_headings_paragraphs_and_inline_flattening():
    html = (
        "<h2>Intro <a class='headerlink' href='#intro'>\u00b6</a></h2>"
        "<p>Some   <b>bold</b>\n and <code>code</code>,<br>a second line<br><br></p>"
        "loose <span>text</span>"
        "<div>div text<p>para in div</p>tail text</div>"
        "<h6>  Small\t title </h6>"
    )
    text, blocks = render(html)
    assert text == (
        "## Intro\n\nSome bold and code,\na second line\n\nloose text\n\ndiv text\n\npara in div\n\n"
        "tail text\n\n###### Small title\n"
    )
    assert blocks == [
        ("heading", "## Intro", {"level": 2, "title": "Intro"}),
        ("paragraph", "Some bold and code,\na second line"),
        ("paragraph", "loose text"),
        ("paragraph", "div text"),
        ("paragraph", "para in div"),
        ("paragraph", "tail text"),
        ("heading", "###### Small title", {"level": 6, "title": "Small title"}),
    ]


def test_whitespace_collapse_covers_unicode_spaces():
    _, blocks = render("<p>a&nbsp;&nbsp;b\u2028c\u3000d\x0ce</p><p>&nbsp;</p><p>\u200b</p>")
    assert blocks == [("paragraph", "a b c d e"), ("paragraph", "\u200b")]


def test_title_is_a_heading_only_without_h1():
    page = "<html><head><title> Page \n Title </title></head><body>{}</body></html>"
    assert render(page.format("<h2>Sub</h2><p>x</p>"))[1] == [
        ("heading", "# Page Title", {"level": 1, "title": "Page Title"}),
        ("heading", "## Sub", {"level": 2, "title": "Sub"}),
        ("paragraph", "x"),
    ]
    assert render(page.format("<h1>Real</h1>"))[1] == [("heading", "# Real", {"level": 1, "title": "Real"})]
    # An h1 left out with what holds it does not count (one in an svg included, nested past 200
    # levels too, where the reading strips the svg before the check).
    for hidden in (
        "<noscript><h1>Enable JavaScript</h1></noscript>",
        "<svg><h1>s</h1></svg>",
        "<template><h1>t</h1></template>",
        "<nav><h1>n</h1></nav>",
        "<div>" * 210 + "<svg><h1>s</h1></svg>" + "</div>" * 210,
    ):
        assert render(page.format(hidden + "<p>x</p>"))[1] == [
            ("heading", "# Page Title", {"level": 1, "title": "Page Title"}),
            ("paragraph", "x"),
        ]
    # Any other h1 counts, even one not rendered as a heading.
    assert render(page.format("<ul><li><h1>In</h1></li></ul>"))[1] == [
        ("list", "- # In", {"level": 1}, [("list_item", "- # In")])
    ]
    assert render(page.format("<h1></h1><p>x</p>"))[1] == [("paragraph", "x")]


# -- code ---------------------------------------------------------------------------------------


def test_pre_becomes_a_fenced_code_block():
    html = (
        '<pre class="language-python"><code>\n\ndef f():\n    return "```"\n\n</code></pre>'
        '<div class="highlight-c notranslate"><div class="highlight"><pre><span>int</span> x;</pre></div></div>'
        '<pre><code class="lang-sh">ls  -l<br>pwd</code></pre>'
        "<pre>   \n  </pre>"
        "<pre>no language\n\tkept  as is</pre>"
    )
    _, blocks = render(html)
    assert blocks == [
        ("code", '````python\ndef f():\n    return "```"\n````', {"language": "python", "fence": "````python"}),
        ("code", "```c\nint x;\n```", {"language": "c", "fence": "```c"}),
        ("code", "```sh\nls  -l\npwd\n```", {"language": "sh", "fence": "```sh"}),
        ("code", "```\nno language\n\tkept  as is\n```", {"fence": "```"}),
    ]


# -- tables -------------------------------------------------------------------------------------


def test_table_with_thead_caption_colspan_escapes_and_nested_table():
    html = (
        "<table><caption>Results</caption>"
        "<thead><tr><th>Name</th><th>A|B</th><th>C</th></tr></thead>"
        "<tbody><tr><td>one</td><td>two<br>lines</td><td><p>p1</p><p>p2</p></td></tr>"
        "<tr><td colspan='2'>wide</td><td><table><tr><td>inner</td><td>cells</td></tr></table></td></tr>"
        "<tr><td></td><td> </td></tr>"
        "<tr><td>short</td></tr></tbody></table>"
    )
    text, blocks = render(html)
    assert text == (
        "Results\n\n"
        "| Name | A\\|B | C |\n| --- | --- | --- |\n"
        "| one | two lines | p1 p2 |\n"
        "| wide |  | inner cells |\n"
        "| short |  |  |\n"
    )
    assert blocks == [
        ("paragraph", "Results"),
        (
            "table",
            text[len("Results\n\n") : -1],
            {"header_rows": 1},
            [
                ("table_row", "| Name | A\\|B | C |\n| --- | --- | --- |"),
                ("table_row", "| one | two lines | p1 p2 |"),
                ("table_row", "| wide |  | inner cells |"),
                ("table_row", "| short |  |  |"),
            ],
        ),
    ]


def test_table_header_from_th_rows_and_without_header():
    doc = normalize_html(
        "<table><tr><th>h1</th><th>h2</th></tr><tr><th>h3</th><th>h4</th></tr><tr><td>a</td><td>b</td></tr></table>"
        "<table><tr><td>x</td><td>y</td></tr><tr><td>z</td><td>w</td></tr></table>"
        "<table><tr><td>only</td></tr></table>"
        "<table><tr><td> </td></tr></table>"
    )
    assert_well_formed(doc)
    assert outline(doc) == [
        (
            "table",
            "| h1 | h2 |\n| h3 | h4 |\n| --- | --- |\n| a | b |",
            {"header_rows": 1},
            [
                ("table_row", "| h1 | h2 |\n| h3 | h4 |\n| --- | --- |"),
                ("table_row", "| a | b |"),
            ],
        ),
        (
            "table",
            "| x | y |\n| --- | --- |\n| z | w |",
            {"header_rows": 1},
            [
                ("table_row", "| x | y |\n| --- | --- |"),
                ("table_row", "| z | w |"),
            ],
        ),
        ("table", "| only |\n| --- |", {"header_rows": 1}, [("table_row", "| only |\n| --- |")]),
    ]
    assert doc.diagnostics == ("2 table(s) without a header row: first row rendered as the header",)


# -- lists --------------------------------------------------------------------------------------


def test_a_table_of_thousands_of_rows_keeps_all_its_text():
    # The writer joins a long table's lines into packed strings as it goes; the page's text must
    # hold those too (a page under STREAM_DOCUMENT_CHARS with a table of more than about 4,100
    # rows must keep every row before the last pack, and its blocks must stay inside the text).
    rows = 5000
    page = "<table>" + "".join(f"<tr><td>{i}</td></tr>" for i in range(rows)) + "</table><p>end</p>"
    doc = normalize_html(page)
    lines = ["| 0 |", "| --- |"] + [f"| {i} |" for i in range(1, rows)]
    assert doc.text == "\n".join(lines) + "\n\nend\n"
    table, end = doc.blocks
    assert (table.kind, table.start, table.end, len(table.children)) == ("table", 0, len("\n".join(lines)), rows)
    assert doc.text[end.start : end.end] == "end"
    assert_well_formed(doc)
    assert_no_text_lost(doc)


def test_nested_lists_items_and_children():
    html = (
        "<ul><li>one</li>"
        "<li><p>two</p><p>more</p><ol start='9'><li>nine</li><li>ten<ul><li>deep</li></ul></li></ol></li>"
        "<li><pre>code first</pre></li>"
        "<li></li>"
        "<li>a<br>b</li></ul>"
    )
    text, blocks = render(html)
    assert text == (
        "- one\n- two\n\n  more\n  9. nine\n  10. ten\n      - deep\n-\n  ```\n  code first\n  ```\n- a\n  b\n"
    )
    assert blocks == [
        (
            "list",
            text[:-1],
            {"level": 1},
            [
                ("list_item", "- one"),
                (
                    "list_item",
                    "- two\n\n  more\n  9. nine\n  10. ten\n      - deep",
                    [
                        ("paragraph", "  more"),
                        (
                            "list",
                            "  9. nine\n  10. ten\n      - deep",
                            {"level": 2},
                            [
                                ("list_item", "  9. nine"),
                                (
                                    "list_item",
                                    "  10. ten\n      - deep",
                                    [
                                        ("list", "      - deep", {"level": 3}, [("list_item", "      - deep")]),
                                    ],
                                ),
                            ],
                        ),
                    ],
                ),
                (
                    "list_item",
                    "-\n  ```\n  code first\n  ```",
                    [
                        ("code", "  ```\n  code first\n  ```", {"fence": "```"}),
                    ],
                ),
                ("list_item", "- a\n  b"),
            ],
        )
    ]


def test_content_directly_inside_a_list_joins_the_previous_item():
    text, blocks = render("<ul>lead<li>a</li><ul><li>nested</li></ul>tail</ul>")
    assert text == "- lead\n- a\n  - nested\n\n  tail\n"
    assert blocks == [
        (
            "list",
            "- lead\n- a\n  - nested\n\n  tail",
            {"level": 1},
            [
                ("list_item", "- lead"),
                (
                    "list_item",
                    "- a\n  - nested\n\n  tail",
                    [
                        ("list", "  - nested", {"level": 2}, [("list_item", "  - nested")]),
                        ("paragraph", "  tail"),
                    ],
                ),
            ],
        ),
    ]


def test_deeply_nested_lists():
    html = "".join(f"<ul><li>level {depth}" for depth in range(50))
    doc = normalize_html(html)
    assert_well_formed(doc)
    levels = [node.level for node in doc.blocks[0].walk() if node.kind == "list"]
    assert levels == list(range(1, 51))
    assert doc.text.splitlines()[-1] == "  " * 49 + "- level 49"


# -- quotes, rules, skipped content -------------------------------------------------------------


def test_blockquote_and_rule():
    text, blocks = render(
        "<blockquote><p>quoted</p><ul><li>item</li></ul><h3>inner heading</h3>"
        "<blockquote>deeper</blockquote><pre>x</pre></blockquote><hr><p>after</p>"
    )
    assert text == (
        "> quoted\n>\n> - item\n>\n> ### inner heading\n>\n> > deeper\n>\n> ```\n> x\n> ```\n\n---\n\nafter\n"
    )
    assert blocks == [
        (
            "quote",
            text[: text.index("\n\n---")],
            [
                ("paragraph", "> quoted"),
                ("list", "> - item", {"level": 1}, [("list_item", "> - item")]),
                ("paragraph", "> ### inner heading"),
                ("quote", "> > deeper", [("paragraph", "> > deeper")]),
                ("code", "> ```\n> x\n> ```", {"fence": "```"}),
            ],
        ),
        ("rule", "---"),
        ("paragraph", "after"),
    ]


def test_skipped_elements_comments_pis_and_cdata():
    html = (
        "<html><head><style>p {}</style><script>var a;</script></head><body>"
        "<script>document.write('<p>no</p>')</script><noscript>no js</noscript>"
        "<template><p>template</p></template><svg><text>svg text</text><title>svg title</title></svg>"
        "<!-- a comment --><?php echo 'pi'; ?><![CDATA[cdata]]>"
        "<p>kept</p></body></html>"
    )
    assert render(html)[1] == [("paragraph", "kept")]


def test_a_skipped_element_around_rows_of_a_table_is_skipped_with_them():
    # (not read as a wrapper around rows, like a form or a div, with its other content moved out)
    html = (
        "<table><tr><td>a</td></tr><template><tr><td>t</td></tr><h2>T</h2></template>"
        "<svg><tr><td>s</td></tr></svg><noscript><tr><td>n</td></tr></noscript>"
        "<form><tr><td>f</td></tr></form></table>"
    )
    assert render(html)[0] == "| a |\n| --- |\n| f |\n"


# -- nasty input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "html", ["", "   \n\t", "<!-- only a comment -->", "<![CDATA[x]]>", "<?xml version='1.0'?>", "<br>", "<p> </p>"]
)
def test_input_without_blocks(html):
    doc = normalize_html(html)
    assert doc.blocks == () and doc.text == ""


def test_malformed_markup_still_renders():
    # An li outside any list and a td outside any table are plain containers.
    _, blocks = render("<p>unclosed <b>bold <i>italic<p>next</div></span><li>stray item<td>stray cell")
    assert blocks == [
        ("paragraph", "unclosed bold italic"),
        ("paragraph", "next"),
        ("paragraph", "stray item"),
        ("paragraph", "stray cell"),
    ]


def test_line_breaks_nul_and_surrogates_in_the_source():
    text, blocks = render("<p>a\r\nb\rc</p><pre>x\r\ny\rz</pre><p>nul\x00here \ud800 lone</p>")
    assert blocks == [
        ("paragraph", "a b c"),
        ("code", "```\nx\ny\nz\n```", {"fence": "```"}),
        ("paragraph", "nul\ufffdhere ? lone"),
    ]
    assert "\r" not in text


def test_declared_encodings_are_ignored_for_text_input():
    html = (
        "<?xml version='1.0' encoding='latin-1'?><meta charset='windows-1252'><p>caf\u00e9 \u4e2d\u6587 \U0001f600</p>"
    )
    assert render(html)[1] == [("paragraph", "caf\u00e9 \u4e2d\u6587 \U0001f600")]


def test_content_after_the_closing_html_tag_is_kept():
    assert render("<html><body><p>x</p></body></html><p>after</p>")[1] == [("paragraph", "x"), ("paragraph", "after")]


def test_nesting_beyond_the_parser_limit_refuses_the_page_instead_of_losing_its_end():
    # libxml2 stops at 2048 levels: "after" must not be lost silently.
    from transforms.structure.tree import NormalizationError

    with pytest.raises(NormalizationError) as err:
        normalize_html("<p>before</p>" + "<div>" * 3000 + "deep" + "</div>" * 3000 + "<p>after</p>")
    assert err.value.reason == "unreadable_html" and "Excessive depth" in err.value.detail
    doc = normalize_html("<div>" * 1000 + "<p>deep text</p>" + "</div>" * 1000)
    assert outline(doc) == [("paragraph", "deep text")]
    assert any("flattened" in note for note in doc.diagnostics)


@pytest.mark.slow
def test_huge_single_line():
    html = "<p>" + "word " * 1_000_000 + "</p>"
    started = time.perf_counter()
    doc = normalize_html(html)
    assert time.perf_counter() - started < 3
    assert [(b.kind, b.start, b.end) for b in doc.blocks] == [("paragraph", 0, len("word " * 1_000_000) - 1)]


_TAGS = [
    "p",
    "div",
    "ul",
    "ol",
    "li",
    "table",
    "tr",
    "td",
    "th",
    "thead",
    "caption",
    "pre",
    "code",
    "blockquote",
    "h1",
    "h3",
    "br",
    "hr",
    "span",
    "a",
    "script",
    "template",
    "head",
    "title",
    "dl",
    "dt",
    "dd",
]
_PIECE = st.one_of(
    st.sampled_from(_TAGS).map(lambda t: f"<{t}>"),
    st.sampled_from(_TAGS).map(lambda t: f"</{t}>"),
    st.sampled_from(['<td colspan="3">', '<ol start="x">', '<pre class="language-py">', '<a class="headerlink">']),
    st.sampled_from(["x", " ", "\n", "a b", "|", "```", "&nbsp;", "\r", "&#13;", "<!-- c -->", "\x00", "\u2028"]),
    st.text(max_size=5),
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECE, max_size=40))
def test_any_tag_soup_keeps_the_invariants(pieces):
    doc = normalize_html("".join(pieces))
    assert_well_formed(doc)
    assert_no_text_lost(doc)
    assert doc.text == "" or (doc.blocks and doc.text.endswith("\n"))


# -- the real corpus ----------------------------------------------------------------------------


_VISIBLE = re.compile(r"<body[^>]*>.*?\w", re.DOTALL | re.IGNORECASE)


@pytest.mark.slow
def test_corpus_html_documents(shared_data):
    import pyarrow.parquet as pq

    table = pq.read_table(shared_data("corpus/docs.parquet"), columns=["content", "content_format"])
    documents = [row["content"] for row in table.to_pylist() if row["content_format"] == "html"]
    assert documents
    kinds: set[str] = set()
    for content in documents:
        doc = normalize_html(content)
        assert_well_formed(doc)
        assert_no_text_lost(doc)
        if _VISIBLE.search(content):
            assert doc.text.strip()
        kinds.update(node.kind for block in doc.blocks for node in block.walk())
    assert kinds >= {"heading", "paragraph", "code", "list", "list_item", "table", "table_row", "quote", "rule"}


def test_site_navigation_is_left_out_but_text_after_it_stays():
    from transforms.structure.normalizers.html import normalize_html

    normalized = normalize_html(
        '<html><body><div class="related">Prev Up</div><nav>menu</nav>tail<h1>T</h1><p>x</p>'
        '<div role="navigation">skip</div><div class="sphinxsidebar"><h3>This Page</h3></div>'
        '<table class="navfooter"><tr><td>Next</td></tr></table></body></html>'
    )
    assert normalized.text == "tail\n\n# T\n\nx\n"
    assert normalized.diagnostics == ("5 navigation elements left out",)


def test_what_a_browser_moves_out_of_a_table_is_rendered_after_it():
    # After a missing </table> the rest of the page is kept.
    text = normalize_html(
        "<h1>Doc</h1><p>intro</p><table><tr><td>cell</td></tr>\n<p>Paragraph after.</p>"
        "<h2>Next section</h2><p>more text</p>"
    ).text
    assert text == "# Doc\n\nintro\n\n| cell |\n| --- |\n\nParagraph after.\n\n## Next section\n\nmore text\n"
    wrapped = normalize_html("<table><div>Wrapped</div><tr><td>a</td></tr>between<tr><td>b</td></tr></table><p>end</p>")
    assert wrapped.text == "| a |\n| --- |\n| b |\n\nbetween\n\nWrapped\n\nend\n"
    assert normalize_html("<table><form><tr><td>x</td></tr></form></table>").text == "| x |\n| --- |\n"


def test_blocks_inside_pre_keep_their_lines_apart():
    assert normalize_html("<pre>five\nsix<h2>seven</h2>eight <p>e</p>f</pre>").text == (
        "```\nfive\nsix\nseven\neight \ne\nf\n```\n"
    )


_LOWER_CLASS = "translate(@class, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
_NAVIGATION_XPATH = (
    "//nav | //*[@role='navigation' or @role='banner' or @role='contentinfo' or @role='search']"
    " | //*["
    + " or ".join(
        f"contains(concat(' ', normalize-space({_LOWER_CLASS}), ' '), ' {name} ')"
        for name in ("sphinxsidebar", "related", "navheader", "navfooter", "nav", "navbar", "breadcrumb", "breadcrumbs")
    )
    + "] | //table[starts-with(@summary, 'Navigation')]"
    " | //*[(self::header or self::footer or self::aside or @id='footer'"
    f" or contains(concat(' ', normalize-space({_LOWER_CLASS}), ' '), ' footer '))"
    " and not(ancestor::article or ancestor::aside"
    " or ancestor::main or ancestor::nav or ancestor::section or ancestor::*[@role='main' or @role='article'])]"
)
_CLASS_VALUES = [
    "related",
    " related ",
    "x related",
    "related\tx",
    "x\nnavheader",
    "\u00a0related",
    "related\u00a0",
    "relatedx",
    "xrelated",
    "sphinxsidebar wide",
    "navfooter",
    "RELATED",
    "NAVHEADER",
    "x Footer",
    "\u212aNAV",
    "related\f",
    "",
    "nav",
    "navbar x",
    "breadcrumbs",
    "navigation",
    "footer",
    "x footer",
]


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "div",
                    "nav",
                    "p",
                    "section",
                    "ul",
                    "li",
                    "span",
                    "header",
                    "footer",
                    "aside",
                    "article",
                    "main",
                    "table",
                ]
            ),
            st.sampled_from([None, "navigation", "Navigation", "main", "banner", "contentinfo", "search", "article"]),
            st.one_of(st.none(), st.sampled_from(_CLASS_VALUES)),
            st.integers(min_value=0, max_value=2),
            st.sampled_from([None, "Navigation header", "navigation", "Data"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_navigation_elements_are_those_of_the_xpath_expression(elements):
    """The walk that finds navigation elements finds the XPath expression's elements, in its order
    (nested ones, classes with XML and other whitespace, a role of another case, page headers,
    footers and sidebars inside and outside sectioning elements, DocBook's navigation tables)."""
    from lxml import etree

    from transforms.structure.normalizers.html_elements import _navigation, _parser

    html, open_tags = "<html><body>", []
    for tag, role, names, closes, summary in elements:
        attributes = (f' role="{role}"' if role else "") + (f' class="{names}"' if names is not None else "")
        attributes += f' summary="{summary}"' if summary else ""
        html += f"<{tag}{attributes}>text<!-- c -->"
        open_tags.append(tag)
        for _ in range(min(closes, len(open_tags))):
            html += f"</{open_tags.pop()}>tail"
    root = etree.fromstring((html + "</body></html>").encode("utf-8"), _parser())
    path = root.getroottree().getpath
    assert [path(e) for e in _navigation(root)] == [path(e) for e in etree.XPath(_NAVIGATION_XPATH)(root)]


_SKIPPED = (
    "ancestor::svg or ancestor::template or ancestor::noscript or ancestor::script or ancestor::style or ancestor::head"
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["h1", "svg", "template", "noscript", "div", "span", "head"]),
            st.integers(min_value=0, max_value=2),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_an_h1_counts_unless_inside_a_skipped_element(elements):
    """``_holds_h1`` gives the XPath expression's answer, on the root and on each element (nested
    skipped elements, h1 inside h1, skipped elements inside an h1)."""
    from lxml import etree

    from transforms.structure.normalizers.html_elements import _holds_h1, _parser

    html, open_tags = "<html><body>", []
    for tag, closes in elements:
        html += f"<{tag}>text"
        open_tags.append(tag)
        for _ in range(min(closes, len(open_tags))):
            html += f"</{open_tags.pop()}>tail"
    root = etree.fromstring((html + "</body></html>").encode("utf-8"), _parser())
    for element in root.iter(etree.Element):
        # (not asked of an element inside a skipped one: neither path does)
        if not element.xpath(f"boolean({_SKIPPED})"):
            assert _holds_h1(element) == element.xpath(f"boolean(descendant-or-self::h1[not({_SKIPPED})])")


@pytest.mark.parametrize(
    "page, text",
    [
        ("<p>a</p><nav>x</nav>\x0c tail", "a\n\ntail\n"),
        ("<div>before\x0c<nav>x</nav>after</div>", "before after\n"),
        ("<p>a</p><nav>x</nav>\x01 tail\uffff", "a\n\n\ufffd tail\ufffd\n"),
    ],
)
def test_a_control_character_next_to_left_out_navigation_is_replaced_not_an_error(page, text):
    """lxml takes a form feed or another C0 control from the page it parses but refuses it in the
    text the tail of a left-out navigation element is joined to (a ValueError, which would make
    the page a chunker_error): whitespace becomes a space, any other such character U+FFFD."""
    assert normalize_html(page).text == text
