"""Tests of the HTML normalizer's windowed path (big pages): exact blocks, same result as the whole tree.

The windowed path (``html_stream._normalize_streamed``) is taken by pages of ``STREAM_DOCUMENT_CHARS``
or more; here the thresholds are made tiny so small hand-checked pages take it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.transforms.structure.normalizers.test_text import assert_no_text_lost, assert_well_formed
from transforms.structure.normalizers import html, html_stream
from transforms.structure.normalizers.html import normalize_html
from transforms.structure.tree import NormalizationError, StreamedChildren


def deep(doc):
    """Every field of every block and descendant (streamed children iterated twice)."""

    def one(node):
        children = tuple(one(child) for child in node.children)
        if type(node.children) is StreamedChildren:
            assert children == tuple(one(child) for child in node.children)
        return (
            node.kind,
            node.start,
            node.end,
            node.level,
            node.title,
            node.language,
            node.fence,
            node.header_rows,
            children,
        )

    return doc.text, doc.diagnostics, tuple(one(block) for block in doc.blocks)


def whole(content: str):
    """The result of the whole-tree path."""
    saved = html.STREAM_DOCUMENT_CHARS
    html.STREAM_DOCUMENT_CHARS = 1 << 62
    try:
        return normalize_html(content)
    finally:
        html.STREAM_DOCUMENT_CHARS = saved


@pytest.fixture
def windows(monkeypatch):
    """Every page read in windows of ``size`` code points, every top-level list and table streamed."""

    def set_size(size: int) -> None:
        monkeypatch.setattr(html, "STREAM_DOCUMENT_CHARS", 0)
        monkeypatch.setattr(html, "STREAM_WINDOW_CHARS", size)
        monkeypatch.setattr(html, "STREAM_BLOCK_CHARS", 0)

    set_size(5)
    return set_size


def streamed(content: str):
    doc = html_stream._normalize_streamed(content)
    assert doc is not None, "the page fell back to the whole tree"
    assert_well_formed(doc)
    assert_no_text_lost(doc)
    return doc


def test_list_items_are_written_as_they_complete(windows):
    page = '<ol start="3">stray<li>one</li>\n<li><p>two</p><ul><li>in</li></ul></li>loose<li>three</ol><p>after</p>'
    doc = streamed(page)
    assert doc.text == "3. stray\n4. one\n5. two\n   - in\n\n   loose\n6. three\n\nafter\n"
    lst = next(iter(doc.blocks))
    assert (lst.kind, lst.start, lst.end, lst.level) == ("list", 0, 49, 1)
    assert type(lst.children) is StreamedChildren
    items = [(n.kind, n.start, n.end, [(c.kind, c.start, c.end, c.level) for c in n.children]) for n in lst.children]
    assert items == [
        ("list_item", 0, 8, []),  # "3. stray": text before the first li is an item
        ("list_item", 9, 15, []),
        ("list_item", 16, 40, [("list", 23, 30, 2), ("paragraph", 32, 40, 0)]),  # "loose" joins it
        ("list_item", 41, 49, []),
    ]
    assert [(b.kind, b.start, b.end) for b in tuple(doc.blocks)[1:]] == [("paragraph", 51, 56)]
    assert deep(doc) == deep(whole(page))


def test_table_rows_padded_to_the_widest_and_what_is_moved_out_after_it(windows):
    page = (
        "<table><caption>Cap</caption><tr><td>a|b</td></tr>\n<tr><td colspan=2>x</td><td>y</td></tr>"
        "<tr><td> </td></tr><p>moved</p></table><p>next</p>"
    )
    doc = streamed(page)
    assert doc.text == ("Cap\n\n| a\\|b |  |  |\n| --- | --- | --- |\n| x |  | y |\n\nmoved\n\nnext\n")
    caption, table, moved, after = doc.blocks
    assert (caption.kind, caption.start, caption.end) == ("paragraph", 0, 3)
    assert (table.kind, table.start, table.end, table.header_rows) == ("table", 5, 52, 1)
    assert type(table.children) is StreamedChildren
    assert [(r.kind, r.start, r.end) for r in table.children] == [("table_row", 5, 39), ("table_row", 40, 52)]
    assert [(b.kind, b.start, b.end) for b in (moved, after)] == [("paragraph", 54, 59), ("paragraph", 61, 65)]
    assert doc.diagnostics == ("1 table(s) without a header row: first row rendered as the header",)
    assert deep(doc) == deep(whole(page))


def test_title_heading_first_when_there_is_no_h1(windows):
    page = "<html><head><title> The  title </title></head><body><h2>Sub</h2><ul><li>x</li></ul></body></html>"
    doc = streamed(page)
    assert doc.text == "# The title\n\n## Sub\n\n- x\n"
    assert [(b.kind, b.start, b.end, b.level, b.title) for b in doc.blocks] == [
        ("heading", 0, 11, 1, "The title"),
        ("heading", 13, 19, 2, "Sub"),
        ("list", 21, 24, 1, ""),
    ]
    assert [(c.start, c.end) for c in tuple(doc.blocks)[2].children] == [(21, 24)]
    with_h1 = streamed(page.replace("<h2>Sub</h2>", "<h2>Sub</h2><div><h1>One</h1></div>"))
    assert with_h1.text == "## Sub\n\n# One\n\n- x\n"
    assert deep(doc) == deep(whole(page))


def test_navigation_is_left_out_and_its_tail_joins_the_text_before_it(windows):
    page = (
        '<body>a<nav><p>menu</p><div role="navigation">in</div></nav>b<ul><li>x</li>'
        '<li class="related">r</li>c</ul>'
        '<table><tr><td>1</td></tr><div class="sphinxsidebar">s</div>t</table></body>'
    )
    doc = streamed(page)
    # "b" joins "a" (the body's text); "c" joins x's tail, so it is text inside the list that
    # joins the item before it; "t" joins the row's tail, text moved out of the table.
    assert doc.text == "ab\n\n- x\n\n  c\n\n| 1 |\n| --- |\n\nt\n"
    assert doc.diagnostics == (
        "4 navigation elements left out",
        "1 table(s) without a header row: first row rendered as the header",
    )
    assert deep(doc) == deep(whole(page))


def test_small_streamed_blocks_get_plain_children(windows, monkeypatch):
    monkeypatch.setattr(html, "STREAM_BLOCK_CHARS", 100)
    doc = streamed("<ul><li>a</li><li>b</li></ul><table><tr><td>1</td></tr></table>")
    assert [type(b.children) for b in doc.blocks] == [tuple, tuple]
    long = streamed("<ul>" + "<li>item</li>" * 30 + "</ul>")
    (listed,) = long.blocks
    assert type(listed.children) is StreamedChildren
    assert len(list(listed.children)) == 30


@pytest.mark.parametrize("size", [1, 2, 7, 64, 4096])
def test_window_sizes_do_not_change_the_result(windows, size):
    windows(size)
    page = (
        "<html><head><title>T</title></head><body>\r\n<p>x\x00y</p></body><div><pre class='language-py'>"
        "a\r\n```\nb</pre><blockquote><ul><li>q</li></ul></blockquote><table><thead><tr><th>h</th></tr></thead>"
        "<tbody><tr><td>1</td></tr><tr><th>2</th></tr></tbody><tfoot><tr><td>f</td></tr></tfoot></table>"
        "<dl><dt>t</dt><dd>d &amp; \ud800</dd></dl><hr><h3>end<a class='headerlink'>\u00b6</a></h3></div></html >"
    )
    assert deep(streamed(page)) == deep(whole(page))


@pytest.mark.parametrize("size", [1, 7, 64])
def test_code_moved_out_of_a_table_section_keeps_the_language_of_its_table(windows, size):
    # A pre directly in a thead / tbody is moved out of the table and read when the table ends;
    # its language comes from its grandparent's class, so the section must still hold it then
    # (the windowed path must not clear the section before then).
    windows(size)
    page = '<table class="language-python"><thead><div>x</div><pre>p</pre></thead></table>'
    doc = streamed(page)
    assert doc.text == "x\n\n```python\np\n```\n"
    assert [(b.kind, b.language) for b in doc.blocks] == [("paragraph", ""), ("code", "python")]
    assert deep(doc) == deep(whole(page))
    nested = (
        '<table><tbody class="lang-c"><tr><td>x</td></tr><pre>p</pre></tbody><tr><td>y</td></tr></table>'
        '<table class="language-python"><thead><table><table role="navigation"></table></table><pre>p'
    )
    assert deep(streamed(nested)) == deep(whole(nested))


def test_deep_nesting_is_flattened_or_refused_as_on_the_whole_tree(windows):
    windows(64)
    page = "<p>before</p>" + "<div>" * 250 + "<ul><li>deep</li></ul>" + "</div>" * 250 + "<ol><li>after</li></ol>"
    assert deep(normalize_html(page)) == deep(whole(page))
    assert any("flattened" in note for note in normalize_html(page).diagnostics)
    refused = "<p>before</p>" + "<div>" * 3000 + "deep" + "</div>" * 3000 + "<p>after</p>"
    with pytest.raises(NormalizationError) as err:
        normalize_html(refused)
    assert err.value.reason == "unreadable_html"


def test_pages_the_windows_cannot_read_take_the_whole_tree(windows):
    # A control character in text a left-out element's tail joins, which lxml refuses in a string
    # it is given: the whole tree's path replaces it, and the windowed path hands the page over.
    page = "<div><p>x</p>\x0c<nav>n</nav>\x0ctail</div>"
    assert html_stream._normalize_streamed(page) is None
    assert deep(normalize_html(page)) == deep(whole(page))
    for empty in ("", "   \n", "</body></html>", "<!-- c -->", "text only"):
        assert deep(normalize_html(empty)) == deep(whole(empty))


@pytest.mark.slow
def test_corpus_pages_read_in_windows_are_the_same(windows, shared_data):
    import pyarrow.parquet as pq

    windows(4096)
    table = pq.read_table(shared_data("corpus/docs.parquet"), columns=["content", "content_format"])
    documents = [row["content"] for row in table.to_pylist() if row["content_format"] == "html"]
    assert documents
    for content in documents[::4]:
        assert deep(streamed(content)) == deep(whole(content))


def test_compact_nodes_round_trip_past_four_bytes():
    from transforms.structure.tree import Node

    nodes = html_stream._Nodes("paragraph")
    code = Node("code", 20, 40, language="py", fence="```py")
    tree = [
        Node("list", 3, 40, (Node("list_item", 3, 9), Node("list_item", 10, 40, (code,))), level=1),
        Node("heading", 2**31 + 1, 2**31 + 9, level=2, title="far"),
        Node("quote", 2**31 + 11, 2**31 + 20, (Node("paragraph", 2**31 + 11, 2**31 + 20),)),
    ]
    for node in tree:
        nodes.add(node)
    assert nodes.ints.typecode == "q"  # widened at the first value past 2**31, nothing lost
    moved = [Node(n.kind, n.start + 5, n.end + 5, n.children, level=n.level, title=n.title) for n in tree]
    got = list(nodes.nodes(5))
    fields = [(n.kind, n.start, n.end, n.level, n.title) for n in got]
    assert fields == [(n.kind, n.start, n.end, n.level, n.title) for n in moved]
    assert got[0].children[1].children[0] == Node("code", 25, 45, language="py", fence="```py")
    assert got[2].children == (Node("paragraph", 2**31 + 16, 2**31 + 25),)


@pytest.mark.slow
def test_no_reference_cycle_per_top_level_list(windows):
    """The chunker pauses the cycle collector while it chunks a document: a cycle per top-level
    list (its state's ``emit`` being the frame's own method) would keep every frame, its element and
    its nodes until the end (4 MiB of ``<h1>T</h1><ul><li>a</li></ul>``: 228 MiB instead of 87)."""
    import gc

    page = "<html><body>" + "<h1>T</h1><ul><li>a</li></ul>" * 300 + "</body></html>"
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        doc = streamed(page)
        assert sum(1 for b in doc.blocks if b.kind == "list") == 300
        del doc
        gc.collect()
        kept = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.garbage.clear()
        gc.set_debug(0)
        if enabled:
            gc.enable()
    assert not {"_ListFrame", "_ListState", "_Stream", "_Nodes"} & set(kept), sorted(set(kept))


# -- the <title> heading: which h1 counts ----------------------------------------------------

#: (page, rendering): pages whose only h1 is left out with a skipped element or navigation, so the
#: ``<title>`` is the top heading on both paths. The first is ``html_stream_fuzz.py`` seed 2205
#: reduced: the h1 of an element moved out of a table, in an ``svg`` nested past ``_MAX_DEPTH``.
#: The windowed path sees that h1 before the element is read and must not drop the title for it;
#: the whole tree looks after its reading, whose flattening strips the skipped elements
#: (``_deep_text``), and must not count the same h1 at depth 198 (the third page) either.
_TITLE_KEPT = [
    (
        "<title>T</title><table><tr><td>a</td></tr><div>" + "<b>" * 200 + "<svg><h1>x</h1></svg></div></table>"
        "<p>after</p>",
        "# T\n\n| a |\n| --- |\n\nafter\n",
    ),
    (
        "<title>T</title><table><tr><td>a</td></tr><div><svg><h1>x</h1></svg></div></table><p>after</p>",
        "# T\n\n| a |\n| --- |\n\nafter\n",
    ),
    ("<title>T</title>" + "<div>" * 198 + "<svg><h1>x</h1></svg>" + "</div>" * 198 + "<p>after</p>", "# T\n\nafter\n"),
    ("<title>T</title>" + "<div>" * 210 + "<svg><h1>x</h1></svg>" + "</div>" * 210 + "<p>after</p>", "# T\n\nafter\n"),
    (
        "<html><head><title>T</title></head><body><noscript><h1>Enable JavaScript</h1></noscript><p>text</p>"
        "</body></html>",
        "# T\n\ntext\n",
    ),
    (
        "<html><head><title>T</title><noscript><h1>Enable JavaScript</h1></noscript></head><body><p>text</p>"
        "</body></html>",
        "# T\n\ntext\n",
    ),
    ("<title>T</title><template><h1>t</h1></template><ul><li>x</li></ul>", "# T\n\n- x\n"),
    ("<title>T</title><ul><li>x<svg><h1>s</h1></svg></li><li>y</li></ul>", "# T\n\n- x\n- y\n"),
    ("<title>T</title><svg><svg><h1>s</h1></svg><h1>s</h1></svg><p>after</p>", "# T\n\nafter\n"),
    ("<title>T</title><nav><h1>n</h1></nav><div role='navigation'><h1>n</h1></div><p>after</p>", "# T\n\nafter\n"),
    # Seed 30004 of the fuzzer, reduced: a template, past the depth, in an element moved out of a table.
    ("<title>T</title><table>" + "<span>" * 200 + "<template><h1>t</h1></template>", "# T\n"),
    # A skipped element around rows in a table is skipped with them, as anywhere else, not read
    # as a wrapper (like a form) whose h1 is moved out of the table and rendered; the windowed
    # path must not ask the moved-out h1 either (an empty h1 shows it).
    (
        "<title>T</title><table><tr><td>a</td></tr><template><tr><td>t</td></tr><h1>x</h1></template></table>"
        "<p>after</p>",
        "# T\n\n| a |\n| --- |\n\nafter\n",
    ),
    ("<title>T</title><table><template><tr></tr><h1>", "# T\n"),
]

#: Pages with an h1 that counts (no title heading), wherever it is rendered, on both paths.
_TITLE_DROPPED = [
    ("<title>T</title><svg></svg><h1>x</h1><p>after</p>", "# x\n\nafter\n"),
    ("<title>T</title><ul><li><h1>x</h1></li></ul>", "- # x\n"),
    # (A header row keeps the table a data table: without it, a heading in a cell is page layout.)
    ("<title>T</title><table><tr><th>h</th></tr><tr><td><h1>x</h1></td></tr></table>", "| h |\n| --- |\n| x |\n"),
    ("<title>T</title><table><tr><td>a</td></tr><div><h1>x</h1></div></table>", "| a |\n| --- |\n\n# x\n"),
    ("<title>T</title><h1></h1><p>after</p>", "after\n"),
    ("<title>T</title>" + "<div>" * 210 + "<h1>x</h1>" + "</div>" * 210, "x\n"),
]


@pytest.mark.parametrize("size", [5, 64, 4096])
@pytest.mark.parametrize("page, text", _TITLE_KEPT + _TITLE_DROPPED)
def test_the_title_is_the_top_heading_on_both_paths_unless_an_h1_counts(windows, page, text, size):
    windows(size)
    doc = streamed(page)
    assert doc.text == text
    first = next(iter(doc.blocks))
    assert ((first.kind, first.start, first.level, first.title) == ("heading", 0, 1, "T")) == text.startswith("# T\n")
    assert deep(doc) == deep(whole(page))


def test_seed_2205_gives_the_same_chunks_and_heading_paths_on_both_paths(monkeypatch):
    from transforms.chunkers import StructureAwareChunker
    from transforms.documents import Document
    from transforms.tokenizers import Utf8ByteTokenizer

    page = _TITLE_KEPT[0][0]
    chunker = StructureAwareChunker(tokenizer=Utf8ByteTokenizer(), max_tokens=20, min_preferred_tokens=0)
    expected = [  # (text, embedding_text, headings): the title heads the page's path
        ("# T\n\n| a |\n| --- |\n\n", "# T\n\n| a |\n| --- |\n\n", ("T",)),
        ("after\n", "T\n\nafter\n", ("T",)),
    ]
    for document_chars in (1 << 62, 0):  # the whole tree, then the windows
        monkeypatch.setattr(html, "STREAM_DOCUMENT_CHARS", document_chars)
        monkeypatch.setattr(html, "STREAM_WINDOW_CHARS", 64)
        monkeypatch.setattr(html, "STREAM_BLOCK_CHARS", 0)
        chunks = chunker.chunk(Document(id="d", content=page, content_format="html"), tokenizer_identity="utf8")
        assert [(c.text, c.embedding_text, c.headings) for c in chunks] == expected


#: Pieces of pages that put h1s in and out of skipped elements, navigation, tables (and elements
#: moved out of them), lists, quotes, the head, and past ``_MAX_DEPTH``.
_H1_PIECES = st.sampled_from(
    [
        "<h1>h</h1>",
        "<h1></h1>",
        "<h1>",
        "<svg>",
        "</svg>",
        "<template>",
        "</template>",
        "<noscript>",
        "</noscript>",
        "<script>x</script>",
        "<head>",
        "</head>",
        "<nav>",
        "</nav>",
        "<div role='navigation'>",
        "<div class='related'>",
        "</div>",
        "<table>",
        "<tr><td>c</td></tr>",
        "<td>",
        "</table>",
        "<ul><li>",
        "</li></ul>",
        "<blockquote>",
        "</blockquote>",
        "<p>t</p>",
        "<title>T2</title>",
        "<div>" * 199,
        "<b>" * 200,
        "x",
    ]
)


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.lists(_H1_PIECES, max_size=12), st.sampled_from([3, 64, 4096]))
def test_both_paths_agree_on_which_h1_hides_the_title(windows, pieces, size):
    """The title heading is there, on both paths, exactly when the page as parsed (navigation
    removed) has no h1 outside a skipped element: the XPath expression below."""
    from transforms.structure.normalizers.html import _parse
    from transforms.structure.normalizers.html_elements import _title

    windows(size)
    page = "<html><head><title>T</title></head><body>" + "".join(pieces)
    try:
        expected = whole(page)
    except NormalizationError:
        return
    root = _parse(page, [])
    counted = root.xpath(
        "boolean(//h1[not(ancestor::svg or ancestor::template or ancestor::noscript"
        " or ancestor::script or ancestor::style or ancestor::head)])"
    )
    first = next(iter(expected.blocks), None)
    titled = first is not None and (first.kind, first.start, first.title) == ("heading", 0, _title(root))
    assert titled == (not counted and _title(root) == "T")
    got = html_stream._normalize_streamed(page)
    if got is not None:
        assert deep(got) == deep(expected)
