"""HTML into blocks, rendered as Markdown.

The document is parsed with libxml2's HTML parser (through lxml: C, fast, forgiving) and rendered
*as Markdown* into a new string ``text``; the blocks are recorded while the rendering is written,
so each interval indexes ``text`` (``verbatim`` is ``False``: there are no source offsets).
Intervals are in code points; every block starts at a line start and ends before a line break.
Blocks are separated by one blank line and ``text`` ends with ``"\\n"`` (it is ``""`` when no
block was found).

Rendered:

- ``h1``-``h6``: ``"#" * n + " " + title`` (``heading``); inside a list item or a block quote
  the same line is a ``paragraph`` (sections only nest at the top). Permalink marks are dropped
  (Sphinx's ``a.headerlink``, an in-page link whose whole text is ``#``, ``¶``, ``§`` ...), and
  so are skip links (an in-page link "Skip to ...", "Jump to ...") anywhere. ``<title>`` becomes a level-1 heading when the page has no
  ``h1`` outside what is left out (an ``h1`` in navigation or in a skipped element below, e.g.
  ``<noscript><h1>Enable JavaScript</h1></noscript>``, does not count; an ``h1`` anywhere else
  does, even one rendered as a paragraph or a table cell, or empty): see :func:`_holds_h1`.
- ``p`` and any other text outside the elements below: ``paragraph``, inline elements
  flattened to their text, whitespace (any Unicode whitespace, no-break spaces included)
  collapsed to single spaces, ``<br>`` a line break inside the paragraph. Containers (``div``,
  ``section``, ``article``, ``dl``/``dt``/``dd``, ``body`` ...) end a paragraph and are otherwise
  transparent; inline elements (``span``, ``a``, ``code``, unknown tags ...) are not.
- ``pre`` (with or without ``code``): a fenced ``code`` block, the code verbatim (leading and
  trailing blank lines dropped); the fence is three backticks, or one more than the longest run
  of three or more backticks in the code; ``language`` from a ``language-``/``lang-``/
  ``highlight-`` class on the ``pre``, its ``code`` child, or the ``pre``'s parent or
  grandparent (Sphinx puts ``highlight-python3`` on a wrapper ``div``). A ``pre`` whose text is
  all in two or more ``code`` children (alternatives a page shows as tabs) is one code block per
  child, its language looked for on the child first; ``fence`` is the opening
  fence line without the ``> `` or indentation of an enclosing quote or item (as the Markdown
  normalizer records it).
- ``table``: a pipe table (what is inside a table but not in a row, e.g. the rest of the page
  after a missing ``</table>``, is rendered after it, as a browser would move it out); header lines from ``thead``, else from leading rows of ``th`` cells
  only, else the first row (a pipe table needs a header; ``diagnostics`` counts such tables);
  then the ``| --- |`` delimiter. The first ``table_row`` spans the header line(s) and the
  delimiter (``header_rows`` 1), then one ``table_row`` per body row. Cells are flattened
  (nested tables and lists included), ``|`` escaped as ``\\|``, ``colspan`` padded with empty
  cells, rows padded to the widest row, rows without text dropped; ``rowspan`` is ignored. A
  ``caption`` is a paragraph before the table. Text in a table outside any cell is not rendered;
  a table without any cell text is dropped. A *layout* table (``html_blocks._is_layout``: role
  ``presentation``/``none``; or no header row and a cell holding a table or heading, or one cell
  a row holding blocks) is read as its cells' blocks, in order, as containers; in its rows of two
  or more cells a cell that is half link text or more beside a cell with more other text (a menu)
  is left out.
- ``ul``/``ol`` (and ``menu``/``dir``): ``list`` of ``list_item``, ``- `` and ``1. ``
  markers (ordered lists count from ``start``), nested content indented by the marker's width
  (two spaces, three for ``1. ``), ``level`` the list nesting depth. An item's first paragraph
  follows its marker; its other blocks (nested lists, paragraphs, code ...) are its children. An
  item that does not start with a paragraph puts its marker on a line of its own.
- ``blockquote``: lines prefixed ``> ``, a ``quote`` whose children are its blocks.
- ``hr``: ``rule`` (``---``).

Skipped with their content: ``head`` (but see ``<title>``), ``script``, ``style``,
``noscript``, ``template``, ``svg``, ``button``, ``select``, comments, processing instructions
and CDATA sections (the parser drops the last three), and site navigation and page chrome
(``html_elements._is_navigation``): ``nav``; roles ``navigation``, ``banner``, ``contentinfo``,
``search``; Sphinx's ``sphinxsidebar`` / ``related``, DocBook's ``navheader`` / ``navfooter``
and Bootstrap's ``nav`` / ``navbar`` / ``breadcrumb`` classes; DocBook's navigation tables; a
``header``, ``footer``, ``aside`` or element of class or id ``footer`` outside any sectioning
element or ``main``; and what the caller's ``exclude`` selectors match. Not rendered: inline formatting (emphasis, links' targets, inline
code backticks), images (no alt text), form controls' values, ``rowspan``. Elements nested
deeper than 200 levels are flattened to plain text.

Empty or whitespace-only input gives no blocks; input the parser refuses gives
no blocks and a diagnostic; when libxml2 stops early (it gives up past 2047 levels of nesting),
``NormalizationError("unreadable_html")`` is raised, since the rest of the page would be lost. Before parsing, ``\\r\\n`` and lone
``\\r`` become ``\\n`` (as the HTML standard does), NUL becomes U+FFFD, lone surrogates become
``?``, and ``</body>``/``</html>`` end tags are removed (libxml2 would drop content after them).

Memory. A page of :data:`STREAM_DOCUMENT_CHARS` (1 Mi) code points or more is read in windows of
:data:`STREAM_WINDOW_CHARS` with libxml2's push parser (the same tree as a whole parse) and gives
the same result as a page read whole: under the top-level containers (``html``, ``body``, ``div``
...), lists and tables, each child is rendered as soon as it is complete (a later sibling exists)
and then freed, so the element tree alive at a time is the open elements plus about one window.
Page-wide facts come out the same: navigation is left out where it is met, its tail joined to the
text before it; the ``<title>`` heading is put first at the end, when no ``h1`` that counts was
met (each child is asked before it is read). A top-level list is written an item at a time, a
table when it ends (its widest row sets the width; rows are kept packed, a string per 1,024
rows); their nodes are kept as integers (12 bytes an item or row) and, when the block's
rendering is over :data:`STREAM_BLOCK_CHARS`, given as
:class:`~transforms.structure.tree.StreamedChildren`. The top-level blocks are kept so too (a
top-level heading's title read back from its line of the rendering) and given as a
``StreamedChildren`` that makes them again from those records on every pass. Still whole: a list or table inside a
block quote or list item, an element that is not a container (a huge ``p`` or ``pre``), the
rest of a page after a missing ``</table>`` (moved out of the table, so held until it ends).
A page the windows cannot read (the parser refuses it or stops early, or a control character
next to left-out navigation, which the whole path replaces) is read whole.

The modules of this normalizer:

- ``html`` (this one): :func:`normalize_html`, the entry point the structure chunkers call
  through the registry, and the whole tree's path (``_parse``, then a walk and a rendering);
  the window sizes (``STREAM_DOCUMENT_CHARS`` ...: module attributes, read when used, so a test
  or a benchmark may set them here).
- ``html_stream``: the windowed path, taken for a page of ``STREAM_DOCUMENT_CHARS`` or more.
- ``html_elements``: element kinds, the parser, navigation, the ``h1`` and ``<title>`` rules.
- ``html_blocks``: elements into intermediate blocks (the reader, lists, tables).
- ``html_markdown``: intermediate blocks rendered as Markdown, with their nodes (the writer).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from lxml import etree

from transforms.structure.normalizers import Normalizer
from transforms.structure.normalizers.html_blocks import _Collector, _Heading, _Reader, _reader_notes
from transforms.structure.normalizers.html_elements import _holds_h1, _parser, _prepared, _remove_navigation, _title
from transforms.structure.normalizers.html_exclude import ExcludeSelectors
from transforms.structure.normalizers.html_markdown import _Writer
from transforms.structure.tree import NormalizationError, NormalizedDocument

__all__ = ["html_normalizer", "normalize_html"]

#: Pages of this many code points or more are read in windows (``html_stream._normalize_streamed``).
STREAM_DOCUMENT_CHARS = 1 << 20
#: Code points of source fed to the parser at a time on that path.
STREAM_WINDOW_CHARS = 1 << 16
#: A top-level list or table of a page read in windows whose rendering is longer than this many
#: code points gets ``StreamedChildren`` (made again from compact records on each iteration).
STREAM_BLOCK_CHARS = 1 << 16


# -- entry point ------------------------------------------------------------------------------


def normalize_html(content: str, *, exclude: ExcludeSelectors | None = None) -> NormalizedDocument:
    """Normalize HTML (a whole page or a fragment) by rendering it as Markdown.

    Never raises for bad markup: what the parser cannot read yields fewer blocks (maybe none) and
    a note in ``diagnostics``. Pages of :data:`STREAM_DOCUMENT_CHARS` or more are read in windows
    (same result, memory that does not grow with a list's or table's size: see the module
    docstring).

    Args:
        content: The HTML source.
        exclude: CSS selectors of more elements to leave out, with the navigation
            (:class:`~transforms.structure.normalizers.html_exclude.ExcludeSelectors`).

    Returns:
        A non-verbatim :class:`NormalizedDocument` whose ``text`` is the Markdown rendering;
        intervals in code points of that rendering. For a page read in windows its ``blocks``
        are a :class:`~transforms.structure.tree.StreamedChildren` (made from compact records on
        every pass; a heading's mark is its record's index, see ``tree.streamed_document``).

    Raises:
        NormalizationError: ``unreadable_html`` when the parser stops before the end of the page.
    """
    if len(content) >= STREAM_DOCUMENT_CHARS:
        from transforms.structure.normalizers.html_stream import _normalize_streamed

        streamed = _normalize_streamed(content, exclude)
        if streamed is not None:
            return streamed
    diagnostics: list[str] = []
    root = _parse(content, diagnostics, exclude)
    blocks: list[object] = []
    reader = _Reader()
    if root is not None:
        has_h1 = _holds_h1(root)  # (before the walk, which strips skipped elements it flattens)
        top = _Collector(nested=False)
        reader.walk(root, top, 0)
        blocks = top.finish()
        if not has_h1:
            title = _title(root)
            if title:
                blocks.insert(0, _Heading(1, title))
    diagnostics.extend(_reader_notes(reader))
    writer = _Writer()
    nodes = writer.sequence(blocks, "", 0, in_item=False)
    text = "".join(writer.text()) + "\n" if nodes else ""
    return NormalizedDocument(
        text=text, blocks=tuple(nodes), content_format="html", verbatim=False, diagnostics=tuple(diagnostics)
    )


def html_normalizer(exclude_selectors: Sequence[str]) -> Normalizer:
    """:func:`normalize_html` that also leaves out the elements ``exclude_selectors`` match.

    Args:
        exclude_selectors: CSS selectors (type, class, id and attribute selectors joined by the
            descendant and child combinators: :mod:`~transforms.structure.normalizers.html_exclude`).

    Returns:
        A normalizer (picklable: a worker compiles the selectors again); :func:`normalize_html`
        itself when ``exclude_selectors`` is empty.

    Raises:
        ValueError: A selector is refused (one line naming it).
    """
    exclude = ExcludeSelectors(exclude_selectors)
    if not exclude:
        return normalize_html
    return functools.partial(normalize_html, exclude=exclude)


def _parse(content: str, diagnostics: list[str], exclude: ExcludeSelectors | None = None):
    """The document's root element, or ``None`` (with a diagnostic) when there is nothing to read."""
    source = _prepared(content)
    if not source.strip():
        return None
    parser = _parser()
    try:
        root = etree.fromstring(source.encode("utf-8", "replace"), parser)
    except (etree.LxmlError, ValueError) as err:
        diagnostics.append(f"HTML parser refused the input: {type(err).__name__}: {str(err)[:200]}")
        return None
    fatal = [entry for entry in parser.error_log if entry.level_name == "FATAL"]
    if fatal:
        # The rest of the page would be lost without a trace: refuse the document instead (the
        # dead letter keeps its whole content).
        raise NormalizationError(
            "unreadable_html",
            f"the HTML parser stopped at line {fatal[0].line}: {' '.join(fatal[0].message.split())[:200]}",
        )
    if root is None:
        diagnostics.append("HTML parser found no elements")
        return None
    dropped = _remove_navigation(root, exclude)
    if dropped:
        diagnostics.append(f"{dropped} navigation elements left out")
    return root
