"""Normalizer for ``docling``: a serialized DoclingDocument rendered as Markdown, with its blocks.

Beam-free. :func:`normalize_docling` parses the content with docling-core's own model
(``DoclingDocument.model_validate_json``; docling-core is imported on first use, not with this
module) and walks the document *body* tree in reading order (``body`` and its descendants, depth
first, as ``DoclingDocument.iterate_items`` does), writing a Markdown rendering into a new string.
That string is :attr:`NormalizedDocument.text` (``verbatim=False``): every interval is a
``[start, end)`` range of *code points* of the rendering, not of the JSON. Each node's ``page_no``
is its item's first provenance page (``item.prov[0].page_no``), ``None`` without provenance (DOCX,
HTML, JATS); a node built from several items (a list, a table row, a paragraph of an inline group)
takes the first page found among them.

What is rendered, and how
    ==============================  =============================================================
    ``TitleItem``                   ``heading`` level 1: ``"# " + title``
    ``SectionHeaderItem``           ``heading`` level ``min(level + 1, 6)``: ``"#" * level + " " +
                                    title``. ``title`` is the text with whitespace collapsed.
    text-like ``TextItem`` labels   ``paragraph``: ``text``, ``paragraph``, ``caption``,
                                    ``footnote``, ``reference``, ``handwritten_text``, the form
                                    labels (``field_key``, ``field_hint``, ``field_heading``,
                                    ``field_value``, ``marker``, ``empty_value``) and any other;
                                    ``checkbox_selected`` / ``checkbox_unselected`` as
                                    ``"[x] text"`` / ``"[ ] text"``
    ``FormulaItem``                 ``paragraph`` of its plain text (LaTeX as written, no ``$$``);
                                    when ``text`` is empty (docling leaves it empty unless formula
                                    enrichment ran) its raw ``orig`` text, with a diagnostic
    ``InlineGroup``                 one ``paragraph``: the texts of its items joined by one space,
                                    as docling-core's Markdown serializer joins them. An item whose
                                    ``text`` is empty and whose first child is an inline group
                                    (docling's "inline representation") takes that text instead.
    ``ListGroup`` / ``ListItem``    ``list`` of ``list_item`` nodes, see *Lists*
    ``CodeItem``                    ``code``: a fenced block, see *Code*
    ``TableItem``                   ``table`` of ``table_row`` nodes, see *Tables*; labels
                                    ``table`` and ``document_index`` alike
    ``PictureItem``                 nothing but its captions (and footnotes)
    ``KeyValueItem`` / ``FormItem`` one ``paragraph``: a ``"key: value"`` line per key-to-value
                                    link of its graph, then the text of every other cell
    other groups, ``FieldRegion``   transparent: their children are rendered in their place
    / ``FieldItem``
    ==============================  =============================================================

Every block starts at a line start, blocks are separated by one blank line (``"\\n\\n"``; the items
of a list and a nested list right after its item's line by one ``"\\n"``), an interval ends before
its trailing line break, and ``text`` ends with ``"\\n"`` (it is ``""`` when nothing is rendered:
no blocks; the chunker reports that as ``empty_document``). Text is not Markdown-escaped (only
table cells are, see below: a paragraph that starts with ``1)`` or ``#`` stays a ``paragraph``
node though a Markdown parser would read more into it). Line breaks (``\\r\\n``, ``\\r``,
``\\v``, ``\\f``, U+2028...) become ``\\n``. Outside code, each line is stripped, runs of blank
lines become one and blank leading or trailing lines go: an item left with no text renders
nothing (no empty or whitespace-only blocks).
Children of a text item (docling nests a DOCX section's content under its heading, an HTML
list's sub-list under its item) are rendered after it, in order.

Captions and footnotes
    The ``captions`` of a table, picture, code or key-value item are rendered as paragraphs right
    before it and its ``footnotes`` as paragraphs right after it, wherever docling placed those
    text items in the tree (a PDF nests them under the table, JATS puts them at the end of the
    body, HTML right before a picture). Each is rendered once.

Lists
    A ``ListGroup`` is a ``list`` whose ``level`` is its nesting depth (1 outermost). It is
    ordered when its first item is ``enumerated``. An ordered item is rendered ``"N. "``: ``N`` is
    the number of its marker when the marker is a lone number (``3.``, ``3)``, ``(3)``, ``[3]``),
    else one more than the previous item's (1 for the first). An unordered item is rendered
    ``"- "``. Any other marker that carries letters or digits (``a)``, ``1.1.``, ``2a.``, or a
    number in an unordered list) is kept at the start of the item's text
    (``"1. 1.1. Morning walk"``); bullet glyphs (``•``, ``·``) are not. This follows docling-core's
    own Markdown export, except that an ordered list is numbered even where docling-core falls
    back to ``"- "`` before an informative marker. A nested list is indented to its parent item's
    content column (2 spaces under ``- ``, 3 under ``1. ``, 4 under ``10. ``), continuation lines
    of an item likewise. A nested list's node (and every node) starts at its line start, so its
    interval begins with that indentation. Two lists in a row stay two ``list`` blocks (a blank
    line apart), though a Markdown parser reading the rendering would join them into one.

    docling puts a nested list either *inside* the item that holds it (HTML: a ``ListGroup``
    child of the ``ListItem``) or *beside* the items (DOCX: a ``ListGroup`` child of the outer
    ``ListGroup``, after the item it belongs to). Both become a ``list`` child of that
    ``list_item`` (the item's interval grows over it): this is what the indented Markdown means
    and what the tree contract says (a list's children are its items, an item's children its
    blocks after its first line). Only a nested list that comes before any item of its group is
    left a direct child of the outer ``list`` (with a diagnostic). Other blocks inside a list
    (paragraphs, tables, code...) become children of the preceding item, indented to its content
    column (or of the list, before any item). An item with no text of its own but with content
    (a nested list) is rendered as a bare marker line followed by that content. A heading inside
    a list is rendered as a ``paragraph`` of its title (a heading there would break
    :func:`~transforms.structure.tree.build_sections`).

Code
    A ``CodeItem`` is a fenced block: the opening fence is three backticks, or one more than the
    longest run of backticks in the code when that run is three or more, followed by the language
    (``code_language`` lowercased, ``""`` for ``unknown``); ``fence`` is that opening line
    without indentation. The code is kept verbatim but for line-break normalization and leading or
    trailing blank lines.

Tables
    A table is rendered from its ``data`` grid as a GitHub pipe table: a header line, the
    ``| --- |`` delimiter line and one line per body row. The header rows are the leading run of
    grid rows on which a ``column_header`` cell starts; they are flattened into the single header
    line Markdown allows, per column the distinct texts top to bottom joined by ``" - "`` (as
    docling-core's own Markdown export does). A table without such rows uses its first row as the
    header, and ``diagnostics`` says so. Cell text is the cell's ``text`` (or, for a rich cell
    without one, the plain text of the items it refers to), whitespace collapsed to single spaces
    (so no line breaks), ``|`` escaped as ``\\|``. Spanning cells: in the header a cell is
    repeated in every row and column it spans (so each column's header is complete); in the
    body a row-spanning cell is repeated in every row it spans (each row stays self-contained) and
    a column-spanning cell is written in its first column only, the others left empty. Body rows
    with no text at all are dropped; a table with no text at all renders nothing but its captions
    and footnotes. The ``table`` node has ``header_rows=1``: its first ``table_row`` child spans
    the header line and the delimiter line, every other child one body row.

What is dropped
    Everything outside the body content layer (furniture: page headers and footers, Wikipedia's
    navigation...; background, invisible and notes layers), with its whole subtree; text items
    labelled ``page_header`` / ``page_footer`` even in the body layer; the ``furniture`` root;
    the children of pictures (text found inside a figure) and of tables (rich-cell content,
    which the cells already render) other than captions and footnotes; images, picture
    classifications and descriptions, annotations, hyperlinks and formatting (bold, italic,
    sub/superscript: the plain text stays); items with no text; pages' metadata.

Raises ``NormalizationError("invalid_docling_json", ...)`` when the content is not a valid
DoclingDocument (not JSON, not an object, a field docling-core rejects, a dangling reference, an
inconsistent tree) or its tree is nested too deeply to walk (hundreds of levels), with a one-line
detail naming the first problem.

The modules of this normalizer: ``docling`` (this one) parses the content (:func:`parse_docling`,
also what the docling chunker reads documents with) and holds :func:`normalize_docling`, the entry
point the structure chunkers call through the registry; ``docling_render`` walks the parsed body
and writes the rendering and its nodes (``_Renderer``).
"""

from __future__ import annotations

from functools import lru_cache
from types import SimpleNamespace

from transforms.structure.normalizers.docling_render import _Renderer
from transforms.structure.tree import NormalizationError, NormalizedDocument

__all__ = ["normalize_docling"]

_CONTENT_FORMAT = "docling"
_DETAIL_CHARS = 200


@lru_cache(maxsize=1)
def _dl() -> SimpleNamespace:
    """docling-core's classes, imported on first use (the import takes a fraction of a second)."""
    from docling_core.types.doc import DoclingDocument
    from docling_core.types.doc.document import (
        CodeItem,
        ContentLayer,
        FloatingItem,
        FormItem,
        FormulaItem,
        GroupItem,
        InlineGroup,
        KeyValueItem,
        ListGroup,
        ListItem,
        NodeItem,
        PictureItem,
        SectionHeaderItem,
        TableItem,
        TextItem,
        TitleItem,
    )
    from docling_core.types.doc.items.table.table_data import RichTableCell

    return SimpleNamespace(
        DoclingDocument=DoclingDocument,
        BODY=ContentLayer.BODY,
        CodeItem=CodeItem,
        FloatingItem=FloatingItem,
        FormItem=FormItem,
        FormulaItem=FormulaItem,
        GroupItem=GroupItem,
        InlineGroup=InlineGroup,
        KeyValueItem=KeyValueItem,
        ListGroup=ListGroup,
        ListItem=ListItem,
        NodeItem=NodeItem,
        PictureItem=PictureItem,
        RichTableCell=RichTableCell,
        SectionHeaderItem=SectionHeaderItem,
        TableItem=TableItem,
        TextItem=TextItem,
        TitleItem=TitleItem,
    )


def parse_docling(content: str):
    """``content`` as a docling-core ``DoclingDocument`` (``model_validate_json``).

    Raises:
        NormalizationError: ``invalid_docling_json``, naming the first problem found.
    """
    try:
        return _dl().DoclingDocument.model_validate_json(content)
    except Exception as err:  # pydantic's ValidationError, a validator's own error, a bad ref
        raise NormalizationError(
            "invalid_docling_json",
            _one_line(f"content is not a valid DoclingDocument: {_first_error(err)}"),
        ) from err


def normalize_docling(content: str) -> NormalizedDocument:
    """Render a serialized DoclingDocument as Markdown and return it with its blocks.

    Args:
        content: A DoclingDocument as JSON (``DoclingDocument.model_dump_json()``).

    Returns:
        ``content_format="docling"``, ``verbatim=False``; intervals index the rendering. No blocks
        (and ``text == ""``) when the body has nothing to render.

    Raises:
        NormalizationError: ``invalid_docling_json`` when docling-core does not accept the
            content as a DoclingDocument, or its tree is nested too deeply to walk.
    """
    dl = _dl()
    doc = parse_docling(content)
    renderer = _Renderer(doc, dl)
    try:
        blocks = renderer.render_document()
    except RecursionError as err:
        raise NormalizationError(
            "invalid_docling_json",
            f"DoclingDocument {_one_line(doc.name)!r}: its tree is nested too deeply to render",
        ) from err
    text = "".join(renderer.parts)
    if text:
        text += "\n"
    return NormalizedDocument(
        text=text,
        blocks=tuple(blocks),
        content_format=_CONTENT_FORMAT,
        verbatim=False,
        diagnostics=tuple(renderer.diagnostics),
    )


def _one_line(text: str) -> str:
    """Collapse whitespace and cut ``text`` to about :data:`_DETAIL_CHARS` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."


def _first_error(err: Exception) -> str:
    """One line naming the first problem of a failed ``model_validate_json``."""
    errors = getattr(err, "errors", None)
    if callable(errors):
        try:
            found = errors(include_url=False)
        except TypeError:
            found = None
        if found:
            first = found[0]
            loc = ".".join(str(part) for part in first.get("loc", ())) or "<root>"
            more = f" (and {len(found) - 1} more errors)" if len(found) > 1 else ""
            return f"{loc}: {first.get('msg', '')}{more}"
    return f"{type(err).__name__}: {err}"
