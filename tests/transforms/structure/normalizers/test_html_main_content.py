"""Page chrome left out of HTML: navigation, sidebars, headers and footers, skip links, permalink
marks, buttons, layout tables read as layout, alternative code samples kept apart, and the user's
own selectors (``html_exclude_selectors``). Each page is small and hand-written after a real one
(Node.js API docs, Valgrind's DocBook, libxslt's layout tables, Sphinx); each is also read in
windows, which must give the same result."""

from __future__ import annotations

import pickle

import pytest

from transforms.structure.normalizers import html
from transforms.structure.normalizers.html import html_normalizer, normalize_html
from transforms.structure.normalizers.html_exclude import ExcludeSelectors

NODE = (
    '<html><head><title>String decoder | Node.js</title></head><body><a href="#apicontent" class="sk'
    'ip-to-content">Skip to content</a><div id="content"><div id="column2" class="interior"><ul><li>'
    '<a href="assert.html">Assertion testing</a></li></ul><ol id="alt-docs"><li><a href="v25">25.x</'
    'a></li></ol></div><div id="column1"><header class="header"><h1>Node.js v20 documentation</h1><b'
    'utton class="theme-toggle-btn">Toggle</button><ul><li>Other versions<ol><li>25.x</li></ol></li>'
    '</ul><hr></header><div role="main" id="apicontent"><h2>String decoder<span><a class="mark" href'
    '="#string-decoder" id="string-decoder">#</a></span></h2><p>It can be accessed using:</p><pre cl'
    'ass="with-57-chars"><input class="js-flavor-toggle" type="checkbox" checked><code class="langua'
    "ge-js mjs\">import { StringDecoder } from 'node:string_decoder';</code><code class=\"language-js "
    "cjs\">const { StringDecoder } = require('node:string_decoder');</code><button class=\"copy-button"
    '">copy</button></pre></div></div></div></body></html>'
)
SPHINX = (
    '<html><head><title>Usage &#8212; proj 1.0 documentation</title></head><body><div class="related'
    '" role="navigation" aria-label="related navigation"><h3>Navigation</h3><ul><li class="right"><a'
    ' href="genindex.html">index</a></li></ul></div><div class="document"><div class="documentwrappe'
    'r"><div class="bodywrapper"><div class="body" role="main"><section id="usage"><h1>Usage<a class'
    '="headerlink" href="#usage" title="Link to this heading">¶</a></h1><p>Install it:</p><div class'
    '="highlight-console notranslate"><div class="highlight"><pre><span></span>$ pip install proj\n</'
    'pre></div></div><aside class="topic"><p class="topic-title">Note</p><p>An aside in the body.</p'
    '></aside><table class="docutils align-default"><thead><tr class="row-odd"><th class="head"><p>N'
    'ame</p></th><th class="head"><p>Value</p></th></tr></thead><tbody><tr class="row-even"><td><p>a'
    "</p></td><td><ul><li>1</li></ul></td></tr></tbody></table></section></div></div></div><div clas"
    's="sphinxsidebar" role="navigation" aria-label="main navigation"><div class="sphinxsidebarwrapp'
    'er"><h3>Navigation</h3></div></div></div><div class="footer">&#169;2024, Me. | Powered by <a hr'
    'ef="https://www.sphinx-doc.org/">Sphinx</a></div></body></html>'
)
DOCBOOK = (
    '<html><head><title>2. Using the core</title></head><body><div><table class="nav" width="100%" s'
    'ummary="Navigation header"><tr><td width="22px"><a accesskey="p" href="manual-intro.html"><img '
    'src="images/prev.png" alt="Prev"></a></td><td width="25%"><a accesskey="u" href="manual.html"><'
    'img src="images/up.png" alt="Up"></a></td><th align="center" valign="middle">Valgrind User Manu'
    'al</th><td width="22px"><a accesskey="n" href="manual-core-adv.html"><img src="images/next.png"'
    ' alt="Next"></a></td></tr></table></div><div class="chapter"><div class="titlepage"><div><div><'
    'h1 class="title"><a name="manual-core"></a>2. Using the core</h1></div></div></div><p>This chap'
    'ter describes the core.</p></div><div><br><table class="nav" width="100%" summary="Navigation f'
    'ooter"><tr><td rowspan="2" width="40%" align="left"><a accesskey="p" href="manual-intro.html">&'
    'lt;&lt; 1. Introduction</a>&#160;</td><td width="20%" align="center"><a accesskey="u" href="man'
    'ual.html">Up</a></td><td rowspan="2" width="40%" align="right">&#160;<a accesskey="n" href="man'
    'ual-core-adv.html">3. Advanced &gt;&gt;</a></td></tr><tr><td width="20%" align="center"><a acce'
    'sskey="h" href="index.html">Home</a></td></tr></table></div></body></html>'
)
LAYOUT = (
    '<html><head><title>libxslt</title></head><body><table border="0" width="100%"><tr><td width="12'
    '0"><a href="http://www.gnome.org/"><img src="gnome2.png" alt="GNOME2 Logo"></a></td><td><table '
    'width="100%"><tr><td align="center"><h1>The XSLT C library for GNOME</h1><h2>libxslt</h2></td><'
    '/tr></table></td></tr></table><table border="0" width="100%"><tr><td valign="top" width="200"><'
    'table width="100%"><tr><td align="center"><center><b>Main Menu</b></center></td></tr><tr><td><f'
    'orm action="search.php"><input name="query" type="text"><input name="submit" type="submit" valu'
    'e="Search ..."></form><ul><li><a href="index.html">Home</a></li><li><a href="intro.html">Introd'
    'uction</a></li><li><a href="docs.html">Documentation</a></li></ul></td></tr></table></td><td va'
    'lign="top"><table width="100%"><tr><td><p>Libxslt is the <a href="http://www.w3.org/TR/xslt">XS'
    "LT</a> C library developed for the GNOME project.</p><p>External documents:</p><ul><li>a tutori"
    "al</li></ul><table><tr><th>Name</th><th>Use</th></tr><tr><td>xsltproc</td><td>the command line "
    'tool</td></tr></table><p><a href="bugs.html">Daniel Veillard</a></p></td></tr></table></td></tr'
    "></table></body></html>"
)
NODE_TEXT = (
    "# String decoder | Node.js\n\n"
    "## String decoder\n\n"
    "It can be accessed using:\n\n"
    "```js\nimport { StringDecoder } from 'node:string_decoder';\n```\n\n"
    "```js\nconst { StringDecoder } = require('node:string_decoder');\n```\n"
)


def both_paths(content: str, monkeypatch, **options) -> str:
    """The rendering of the whole tree, checked equal to the windowed path's (windows of 7 code
    points, every top-level list and table streamed)."""
    with monkeypatch.context() as patch:
        patch.setattr(html, "STREAM_DOCUMENT_CHARS", 1 << 62)
        whole = normalize_html(content, **options)
    with monkeypatch.context() as patch:
        patch.setattr(html, "STREAM_DOCUMENT_CHARS", 0)
        patch.setattr(html, "STREAM_WINDOW_CHARS", 7)
        patch.setattr(html, "STREAM_BLOCK_CHARS", 0)
        windowed = normalize_html(content, **options)
    assert windowed.text == whole.text
    assert [(n.kind, n.start, n.end, n.title) for b in windowed.blocks for n in b.walk()] == [
        (n.kind, n.start, n.end, n.title) for b in whole.blocks for n in b.walk()
    ]
    return whole.text


def test_node_api_page_keeps_only_its_content(monkeypatch):
    # The sidebar (role=navigation), the page's banner header (its h1 is the site's: the <title>
    # heads the page instead), the skip link, the "#" permalink, the theme and copy buttons; the
    # ES module and CommonJS variants of the sample (tabs) are two code blocks.
    page = NODE.replace('<div id="column2"', '<div role="navigation" id="column2"')
    assert both_paths(page, monkeypatch) == NODE_TEXT
    assert normalize_html(page).diagnostics == ("2 navigation elements left out",)


def test_a_sidebar_without_markup_is_left_out_by_a_user_selector(monkeypatch):
    # Without a role the Node.js sidebar is a div like any other: a selector names it.
    text = both_paths(NODE, monkeypatch)
    assert text.startswith("# String decoder | Node.js\n\n- Assertion testing\n\n1. 25.x\n\n## String decoder\n")
    exclude = ExcludeSelectors(["#content > #column2"])
    assert both_paths(NODE, monkeypatch, exclude=exclude) == NODE_TEXT
    assert both_paths(NODE, monkeypatch, exclude=ExcludeSelectors(["div.interior ol", "ul li"])) == (
        "# String decoder | Node.js\n\n## String decoder\n"
        "\nIt can be accessed using:\n\n```js\nimport { StringDecoder } from 'node:string_decoder';\n```\n\n"
        "```js\nconst { StringDecoder } = require('node:string_decoder');\n```\n"
    )


@pytest.mark.parametrize(
    "page, text",
    [
        # A skip link, whatever its words; an in-page link with other words stays.
        ('<a href="#main">Skip to main content</a><p>a <a href="#x">see below</a></p>', "a see below\n"),
        ('<p><a class="x" href="#nav">Jump to navigation</a>b</p>', "b\n"),
        # Permalink marks: in a heading, a term, or a paragraph; a link to elsewhere stays.
        ('<h2>Title <a href="#t">¶</a></h2><dl><dt>term<a href="#term">#</a></dt></dl>', "## Title\n\nterm\n"),
        ('<h3>T<a href="#t" aria-label="Permalink">🔗</a></h3><p><a href="/x">#</a></p>', "### T\n\n#\n"),
        # A button's label (a copy button after code) and a select's options are not content.
        ("<pre><code>x = 1</code><button>Copy</button></pre>", "```\nx = 1\n```\n"),
        ("<p>Version <select><option>1</option><option>2</option></select> docs</p>", "Version docs\n"),
        # One code child, or code children with text between them, stay one block.
        ("<pre>$ <code>ls</code> <code>-l</code></pre>", "```\n$ ls -l\n```\n"),
        (
            '<pre><code class="language-py">a</code><code class="lang-sh">b</code></pre>',
            "```py\na\n```\n\n```sh\nb\n```\n",
        ),
    ],
)
def test_controls_inside_the_content_are_left_out(monkeypatch, page, text):
    assert both_paths(page, monkeypatch) == text


def test_page_header_footer_and_sidebar_are_left_out_not_those_of_a_part(monkeypatch):
    page = (
        "<html><head><title>Post</title></head><body><header><a href='/'>Site</a><h1>Site name</h1></header>"
        "<aside><h2>Popular</h2><ul><li>x</li></ul></aside>"
        "<article><header><h1>A post</h1><p>by me</p></header><p>Body.</p>"
        "<aside>An aside of the post.</aside><footer>Tags: a</footer></article>"
        "<section><footer>section footer</footer></section>"
        "<div role='main'><header>main header</header></div>"
        "<div role='contentinfo'>© site</div><div id='footer'>Imprint</div><div role='search'>Search</div>"
        "<footer>© 2026</footer>"
    )
    assert both_paths(page, monkeypatch) == (
        "# A post\n\nby me\n\nBody.\n\nAn aside of the post.\n\nTags: a\n\nsection footer\n\nmain header\n"
    )


def test_docbook_navigation_tables_are_left_out(monkeypatch):
    # Valgrind's pages: the navigation header and footer are tables, named by their summary.
    assert both_paths(DOCBOOK, monkeypatch) == "# 2. Using the core\n\nThis chapter describes the core.\n"
    # The jade DocBook writer's (shared-mime-info's spec): classes in upper case, as a browser
    # in quirks mode matches them.
    jade = (
        '<html><body><div CLASS="NAVHEADER"><table><tr><th>Spec</th></tr><tr><td><a href="b.html">Prev</a></td>'
        '</tr></table></div><h1>Spec</h1><p>Text.</p><div CLASS="NAVFOOTER"><table><tr><td>Home</td></tr></table></div>'
    )
    assert both_paths(jade, monkeypatch) == "# Spec\n\nText.\n"


def test_layout_tables_are_read_as_their_cells_blocks_and_a_menu_cell_is_left_out(monkeypatch):
    # libxslt's pages: nested tables lay out a banner, a menu and the content; the menu cell is
    # mostly links beside a cell of more plain text; a data table inside (a header row) stays one.
    assert both_paths(LAYOUT, monkeypatch) == (
        "# The XSLT C library for GNOME\n\n## libxslt\n\n"
        "Libxslt is the XSLT C library developed for the GNOME project.\n\n"
        "External documents:\n\n- a tutorial\n\n"
        "| Name | Use |\n| --- | --- |\n| xsltproc | the command line tool |\n\n"
        "Daniel Veillard\n"
    )
    assert normalize_html(LAYOUT).diagnostics == (
        "4 layout table(s) read as their cells' blocks",
        "1 layout-table cell(s) of links left out",
    )


@pytest.mark.parametrize(
    "page, text",
    [
        # A one-cell-per-row table holding blocks; a one-column table of plain cells stays data.
        ("<table><tr><td><p>one</p></td></tr><tr><td><ul><li>two</li></ul></td></tr></table>", "one\n\n- two\n"),
        ("<table><tr><td>a</td></tr><tr><td>b</td></tr></table>", "| a |\n| --- |\n| b |\n"),
        # role=presentation; a heading in a cell, unless the table has a header row.
        ('<table role="presentation"><tr><td>a</td><td>b</td></tr></table>', "a\n\nb\n"),
        ("<table><tr><td><h2>A</h2></td><td>text</td></tr></table>", "## A\n\ntext\n"),
        (
            "<table><tr><th>k</th><th>v</th></tr><tr><td><h2>A</h2></td><td>t</td></tr></table>",
            "| k | v |\n| --- | --- |\n| A | t |\n",
        ),
        # A data table whose cells hold paragraphs and lists (Sphinx's) stays a table.
        ("<table><tr><td><p>a</p></td><td><ul><li>b</li></ul></td></tr></table>", "| a | b |\n| --- | --- |\n"),
    ],
)
def test_which_tables_are_layout(monkeypatch, page, text):
    assert both_paths(page, monkeypatch) == text


def test_a_sphinx_page_keeps_its_content(monkeypatch):
    # Its navigation was left out already; its page footer is now too. The aside inside the
    # body (role=main) stays, and the table of paragraphs and lists stays a table.
    assert both_paths(SPHINX, monkeypatch) == (
        "# Usage\n\nInstall it:\n\n```console\n$ pip install proj\n```\n\nNote\n\nAn aside in the body.\n\n"
        "| Name | Value |\n| --- | --- |\n| a | 1 |\n"
    )


def test_exclude_selectors_match_from_the_element_and_its_ancestors(monkeypatch):
    page = (
        '<div class="ad">ad</div><main><p class="ad wide">ad2</p><p data-kind="promo-x">promo</p>'
        '<div id="body"><span>kept</span> <b class="note">gone</b></div></main><p>end</p>'
    )
    exclude = ExcludeSelectors(['main > .ad, [data-kind^="promo"]', "#body b", "DIV.ad"])
    assert both_paths(page, monkeypatch, exclude=exclude) == "kept\n\nend\n"
    assert normalize_html(page, exclude=exclude).diagnostics == ("4 navigation elements left out",)
    assert both_paths(page, monkeypatch, exclude=ExcludeSelectors(["body > p"])) == "ad\n\nad2\n\npromo\n\nkept gone\n"


def test_a_descendant_chain_on_a_deep_page_is_matched_in_steps_times_depth_tests(monkeypatch):
    """Each (step, ancestor) pair is decided once: a chain of 62 steps on a page 60 elements deep
    (which a backtracking matcher would not finish) takes at most 62 x 61 tests an element."""
    depth = 60
    page = "<span>" + "<div>" * depth + "<p>deep</p><i>kept</i>" + "</div>" * depth + "</span><p>end</p>"
    chain = "span " + "div " * depth + "p"
    calls = []
    exclude = ExcludeSelectors([chain])
    real = exclude._chains[0]
    counted = tuple((tag, _counting(test, calls), combinator) for tag, test, combinator in real)
    exclude._chains = (counted,)
    assert both_paths(page, monkeypatch, exclude=exclude) == "kept\n\nend\n"
    elements = depth + 5  # html, body, span, the divs, p, i, p
    assert 0 < len(calls) <= 2 * elements * len(real) * (depth + 3)
    # Not matched when one step is missing (one div too many in the chain).
    assert both_paths(page, monkeypatch, exclude=ExcludeSelectors(["span " + "div " * (depth + 1) + "p"])) == (
        "deep\n\nkept\n\nend\n"
    )


def _counting(test, calls):
    def counted(element):
        calls.append(1)
        return test(element)

    return counted


@pytest.mark.parametrize(
    "selectors, message",
    [
        ("div", "html_exclude_selectors must be a list of CSS selectors, got 'div'"),
        ([""], "html_exclude_selectors: each selector must be a non-empty string, got ''"),
        ([3], "html_exclude_selectors: each selector must be a non-empty string, got 3"),
        (["div["], "html_exclude_selectors: 'div[' is not a CSS selector: "),
        (["li:last-child"], "html_exclude_selectors: 'li:last-child' uses a pseudo-class ('li:last-child'); only type"),
        (["h2 + p"], "html_exclude_selectors: 'h2 + p' uses the combinator '+'; only type"),
        (["p::first-line"], "html_exclude_selectors: 'p::first-line' uses the pseudo-element ::first-line; only"),
        (["x|p"], "html_exclude_selectors: 'x|p' uses a namespace; only type"),
        (["p"] * 101, "html_exclude_selectors holds 101 selectors, at most 100"),
        ([", ".join(["p"] * 90)] * 3, "html_exclude_selectors holds 270 comma-separated alternatives, at most 200"),
    ],
)
def test_a_refused_selector_is_one_line_naming_it(selectors, message):
    with pytest.raises(ValueError) as caught:
        html_normalizer(selectors)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_the_selectors_reach_the_html_normalizer_from_the_chunkers_and_survive_pickling():
    from transforms.chunkers import HeadingChunker, StructureAwareChunker
    from transforms.documents import Document
    from transforms.tokenizers import Utf8ByteTokenizer

    page = "<h1>T</h1><div class='ad'>buy</div><p>text</p>"
    document = Document(id="d", content=page, content_format="html")
    for chunker in (
        StructureAwareChunker(tokenizer=Utf8ByteTokenizer(), html_exclude_selectors=[".ad"]),
        HeadingChunker(html_exclude_selectors=[".ad"]),
    ):
        copy = pickle.loads(pickle.dumps(chunker))
        assert [c.text for c in copy.chunk(document, tokenizer_identity="u")] == ["# T\n\ntext\n"]
        assert chunker.to_dict()["html_exclude_selectors"] == [".ad"]
    plain = StructureAwareChunker(tokenizer=Utf8ByteTokenizer())
    assert "html_exclude_selectors" not in plain.to_dict()  # (so the config hash of others stays)
    assert [c.text for c in plain.chunk(document, tokenizer_identity="u")] == ["# T\n\nbuy\n\ntext\n"]
    assert plain.normalizers["html"] is normalize_html
    with pytest.raises(ValueError, match=r"^html_exclude_selectors: 'a ~ b' uses the combinator '~'"):
        HeadingChunker(html_exclude_selectors=["a ~ b"])


def test_a_refused_selector_in_a_configuration_is_an_option_error(tmp_path, capsys):
    from pipelines.rechunk import main

    config = tmp_path / "c.yaml"
    config.write_text(
        "chunkers:\n  s:\n    type: StructureAwareChunker\n    params: {html_exclude_selectors: ['nav:hover']}\n"
        "default: s\n"
    )
    status = main(["--config", str(config), "--input", "in.parquet", "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and len(err.splitlines()) == 1, err
    assert "html_exclude_selectors: 'nav:hover' uses a pseudo-class" in err
