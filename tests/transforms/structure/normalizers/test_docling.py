"""normalize_docling: a DoclingDocument rendered as Markdown, with blocks indexing the rendering."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest
from docling_core.types.doc import (
    BoundingBox,
    CodeLanguageLabel,
    ContentLayer,
    DocItemLabel,
    DoclingDocument,
    ProvenanceItem,
    Size,
    TableCell,
    TableData,
)

from tests.conftest import REPO
from transforms.structure.normalizers.docling import normalize_docling
from transforms.structure.tree import Node, NormalizationError, NormalizedDocument, check_blocks

# -- helpers ------------------------------------------------------------------------------------


def _prov(page: int) -> ProvenanceItem:
    return ProvenanceItem(page_no=page, bbox=BoundingBox(l=10, t=20, r=50, b=10), charspan=(0, 1))


def _paged(name: str = "doc", pages: int = 2) -> DoclingDocument:
    doc = DoclingDocument(name=name)
    for page in range(1, pages + 1):
        doc.add_page(page_no=page, size=Size(width=100, height=100))
    return doc


def _normalize(doc: DoclingDocument) -> NormalizedDocument:
    normalized = normalize_docling(doc.model_dump_json())
    check_blocks(normalized)
    _check_layout(normalized)
    return normalized


def _check_layout(normalized: NormalizedDocument) -> None:
    """Blocks start at line starts, end before a line break, hold text; top level split by a blank line."""
    text = normalized.text
    assert normalized.content_format == "docling"
    assert normalized.verbatim is False
    assert text == "" or text.endswith("\n")
    assert bool(text) == bool(normalized.blocks)
    for block in normalized.blocks:
        for node in block.walk():
            assert node.start == 0 or text[node.start - 1] == "\n", node
            assert text[node.end] == "\n", node
            assert text[node.start : node.end].strip(), node
    blocks = tuple(normalized.blocks)
    for before, after in pairwise(blocks):
        assert text[before.end : after.start] == "\n\n", (before, after)
    if blocks:
        assert blocks[0].start == 0
        assert blocks[-1].end == len(text) - 1


_FIELDS = ("level", "title", "language", "fence", "header_rows", "page_no")


def shape(normalized: NormalizedDocument, node: Node | None = None):
    """A node (or all blocks) as nested tuples: (kind, its text, {non-default fields}, [children])."""
    if node is None:
        return [shape(normalized, block) for block in normalized.blocks]
    fields = {f: getattr(node, f) for f in _FIELDS if getattr(node, f) not in (0, "", None)}
    out = (node.kind, normalized.text[node.start : node.end], fields)
    return out + ([shape(normalized, c) for c in node.children],) if node.children else out


def _cell(text: str, row: int, col: int, *, rows: int = 1, cols: int = 1, header: bool = False) -> TableCell:
    return TableCell(
        text=text,
        start_row_offset_idx=row,
        end_row_offset_idx=row + rows,
        start_col_offset_idx=col,
        end_col_offset_idx=col + cols,
        row_span=rows,
        col_span=cols,
        column_header=header,
    )


# -- headings, paragraphs, pages ----------------------------------------------------------------


def test_headings_paragraphs_and_pages():
    doc = _paged()
    doc.add_text(
        label=DocItemLabel.PAGE_HEADER, text="Running head", prov=_prov(1), content_layer=ContentLayer.FURNITURE
    )
    doc.add_title("A   Study\nof Ducks", prov=_prov(1))
    doc.add_heading("Intro", level=1, prov=_prov(1))
    doc.add_text(label=DocItemLabel.TEXT, text="  First paragraph.  ", prov=_prov(1))
    doc.add_heading("Deep", level=9, prov=_prov(2))  # level 10 clamped to 6
    doc.add_text(label=DocItemLabel.FOOTNOTE, text="1 A footnote.", prov=_prov(2))
    doc.add_text(label=DocItemLabel.PAGE_FOOTER, text="page 2", prov=_prov(2))  # body layer, still dropped
    doc.add_text(label=DocItemLabel.TEXT, text="No provenance,\n\n\nthree lines\r\nhere.")
    doc.add_text(label=DocItemLabel.TEXT, text="   ")  # whitespace only: nothing
    doc.add_heading("", level=2)  # empty heading: nothing
    normalized = _normalize(doc)

    assert normalized.text == (
        "# A Study of Ducks\n\n"
        "## Intro\n\n"
        "First paragraph.\n\n"
        "###### Deep\n\n"
        "1 A footnote.\n\n"
        "No provenance,\n\nthree lines\nhere.\n"
    )
    assert shape(normalized) == [
        ("heading", "# A Study of Ducks", {"level": 1, "title": "A Study of Ducks", "page_no": 1}),
        ("heading", "## Intro", {"level": 2, "title": "Intro", "page_no": 1}),
        ("paragraph", "First paragraph.", {"page_no": 1}),
        ("heading", "###### Deep", {"level": 6, "title": "Deep", "page_no": 2}),
        ("paragraph", "1 A footnote.", {"page_no": 2}),
        ("paragraph", "No provenance,\n\nthree lines\nhere.", {}),
    ]
    assert normalized.diagnostics == ()
    # The section tree nests the level-6 heading under the level-2 one.
    assert [(s.kind, s.title) for s in normalized.root.children] == [("section", "A Study of Ducks")]


def test_section_content_nested_under_its_heading_is_rendered_after_it():
    """DOCX puts a section's content under its SectionHeaderItem; it follows the heading."""
    doc = DoclingDocument(name="docx")
    heading = doc.add_heading("Chapter", level=1)
    doc.add_text(label=DocItemLabel.TEXT, text="Inside.", parent=heading)
    doc.add_heading("Sub", level=2, parent=heading)
    doc.add_text(label=DocItemLabel.PARAGRAPH, text="After.")
    normalized = _normalize(doc)
    assert normalized.text == "## Chapter\n\nInside.\n\n### Sub\n\nAfter.\n"
    assert [b.kind for b in normalized.blocks] == ["heading", "paragraph", "heading", "paragraph"]


def test_paragraph_like_labels_checkboxes_and_formulas():
    doc = DoclingDocument(name="labels")
    for label in (DocItemLabel.CAPTION, DocItemLabel.REFERENCE, DocItemLabel.PARAGRAPH, DocItemLabel.HANDWRITTEN_TEXT):
        doc.add_text(label=label, text=str(label))
    doc.add_text(label=DocItemLabel.CHECKBOX_SELECTED, text="done")
    doc.add_text(label=DocItemLabel.CHECKBOX_UNSELECTED, text="todo")
    doc.add_formula("E = mc^2")
    formula = doc.add_formula("", orig="a + b = c")  # not decoded: the raw text is used
    doc.add_formula("", orig="")  # nothing at all
    normalized = _normalize(doc)
    assert normalized.text == (
        "caption\n\nreference\n\nparagraph\n\nhandwritten_text\n\n[x] done\n\n[ ] todo\n\nE = mc^2\n\na + b = c\n"
    )
    assert {b.kind for b in normalized.blocks} == {"paragraph"}
    assert normalized.diagnostics == (
        f"formula {formula.self_ref} has no decoded text: its raw text (orig) is rendered",
    )


def test_inline_groups_are_one_paragraph():
    doc = DoclingDocument(name="inline")
    group = doc.add_inline_group()
    doc.add_text(label=DocItemLabel.TEXT, text="The gene", parent=group, prov=_prov(3))
    doc.add_text(label=DocItemLabel.TEXT, text="Zfp809", parent=group)
    doc.add_text(label=DocItemLabel.TEXT, text="is\nknocked out.", parent=group)
    normalized = _normalize(doc)
    assert normalized.text == "The gene Zfp809 is knocked out.\n"
    assert shape(normalized) == [("paragraph", "The gene Zfp809 is knocked out.", {"page_no": 3})]


# -- lists --------------------------------------------------------------------------------------


def test_nested_lists_inside_items_html_style():
    doc = _paged(pages=3)
    outer = doc.add_list_group()
    first = doc.add_list_item("Fruit", parent=outer, prov=_prov(2))
    inner = doc.add_list_group(parent=first)
    doc.add_list_item("Apple", parent=inner, enumerated=True, marker="1.", prov=_prov(2))
    apple_sub = doc.add_list_group(parent=inner.children[0].resolve(doc))
    doc.add_list_item("Red", parent=apple_sub, marker="•", prov=_prov(3))
    doc.add_list_item("Pear", parent=inner, enumerated=True, marker="2.", prov=_prov(3))
    doc.add_list_item("Veg", parent=outer, marker="-", prov=_prov(3))
    normalized = _normalize(doc)

    assert normalized.text == ("- Fruit\n  1. Apple\n     - Red\n  2. Pear\n- Veg\n")
    text = normalized.text
    assert shape(normalized) == [
        (
            "list",
            text[:-1],
            {"level": 1, "page_no": 2},
            [
                (
                    "list_item",
                    "- Fruit\n  1. Apple\n     - Red\n  2. Pear",
                    {"page_no": 2},
                    [
                        (
                            "list",
                            "  1. Apple\n     - Red\n  2. Pear",
                            {"level": 2, "page_no": 2},
                            [
                                (
                                    "list_item",
                                    "  1. Apple\n     - Red",
                                    {"page_no": 2},
                                    [
                                        (
                                            "list",
                                            "     - Red",
                                            {"level": 3, "page_no": 3},
                                            [
                                                ("list_item", "     - Red", {"page_no": 3}),
                                            ],
                                        ),
                                    ],
                                ),
                                ("list_item", "  2. Pear", {"page_no": 3}),
                            ],
                        ),
                    ],
                ),
                ("list_item", "- Veg", {"page_no": 3}),
            ],
        ),
    ]


def test_nested_lists_beside_items_docx_style_belong_to_the_item_before():
    doc = DoclingDocument(name="docx")
    outer = doc.add_list_group()
    doc.add_list_item("List item 1", parent=outer, marker="")
    beside = doc.add_list_group(parent=outer)  # a sibling of the items, as DOCX conversion does
    doc.add_list_item("List item 1.1", parent=beside, marker="")
    doc.add_list_item("List item 2", parent=outer, marker="")
    normalized = _normalize(doc)
    assert normalized.text == "- List item 1\n  - List item 1.1\n- List item 2\n"
    assert shape(normalized) == [
        (
            "list",
            normalized.text[:-1],
            {"level": 1},
            [
                (
                    "list_item",
                    "- List item 1\n  - List item 1.1",
                    {},
                    [
                        ("list", "  - List item 1.1", {"level": 2}, [("list_item", "  - List item 1.1", {})]),
                    ],
                ),
                ("list_item", "- List item 2", {}),
            ],
        ),
    ]
    assert normalized.diagnostics == ()


def test_nested_list_before_any_item_is_a_child_of_the_list():
    doc = DoclingDocument(name="odd")
    outer = doc.add_list_group()
    beside = doc.add_list_group(parent=outer)
    doc.add_list_item("early", parent=beside)
    doc.add_list_item("late", parent=outer)
    normalized = _normalize(doc)
    assert normalized.text == "  - early\n- late\n"
    assert shape(normalized) == [
        (
            "list",
            "  - early\n- late",
            {"level": 1},
            [
                ("list", "  - early", {"level": 2}, [("list_item", "  - early", {})]),
                ("list_item", "- late", {}),
            ],
        ),
    ]
    assert len(normalized.diagnostics) == 1 and "before the first item" in normalized.diagnostics[0]


def test_list_markers():
    doc = DoclingDocument(name="markers")
    refs = doc.add_list_group()
    doc.add_list_item("Smith 2020.", parent=refs, enumerated=True, marker="[7]")
    doc.add_list_item("Jones 2021.", parent=refs, enumerated=True, marker="[8]")
    doc.add_list_item("Unnumbered.", parent=refs, enumerated=True, marker="")
    doc.add_text(label=DocItemLabel.TEXT, text="Between.")
    lettered = doc.add_list_group()
    doc.add_list_item("Alpha", parent=lettered, enumerated=True, marker="a)")
    doc.add_list_item("Beta", parent=lettered, enumerated=True, marker="1.1.")
    doc.add_list_item("Gamma", parent=lettered, enumerated=True, marker="(4)")
    doc.add_list_item("Delta", parent=lettered, enumerated=False, marker="·")
    doc.add_text(label=DocItemLabel.TEXT, text="Then bullets.")
    bullets = doc.add_list_group()
    doc.add_list_item("dot", parent=bullets, marker="•")
    doc.add_list_item("lettered bullet", parent=bullets, marker="(i)")
    doc.add_list_item("", parent=bullets, marker="-")  # empty item: nothing
    doc.add_list_item("last", parent=bullets, marker="-")
    normalized = _normalize(doc)
    assert normalized.text == (
        "7. Smith 2020.\n8. Jones 2021.\n9. Unnumbered.\n\n"
        "Between.\n\n"
        "1. a) Alpha\n2. 1.1. Beta\n4. Gamma\n5. Delta\n\n"
        "Then bullets.\n\n"
        "- dot\n- (i) lettered bullet\n- last\n"
    )
    assert [b.kind for b in normalized.blocks] == ["list", "paragraph", "list", "paragraph", "list"]
    assert [len(b.children) for b in normalized.blocks if b.kind == "list"] == [3, 4, 3]


def test_item_content_is_indented_under_the_item():
    doc = DoclingDocument(name="content")
    group = doc.add_list_group()
    item = doc.add_list_item("10 things\nto do", parent=group, enumerated=True, marker="10.")
    doc.add_text(label=DocItemLabel.TEXT, text="A paragraph in the item.", parent=item)
    doc.add_code("x = 1", code_language=CodeLanguageLabel.PYTHON, parent=item)
    doc.add_heading("Not a heading here", level=1, parent=item)
    sub = doc.add_list_group(parent=item)
    doc.add_list_item("sub", parent=sub)
    normalized = _normalize(doc)
    assert normalized.text == (
        "10. 10 things\n"
        "    to do\n\n"
        "    A paragraph in the item.\n\n"
        "    ```python\n"
        "    x = 1\n"
        "    ```\n\n"
        "    Not a heading here\n\n"
        "    - sub\n"
    )
    (lst,) = normalized.blocks
    (entry,) = lst.children
    assert [c.kind for c in entry.children] == ["paragraph", "code", "paragraph", "list"]
    assert entry.children[1].fence == "```python"
    assert entry.children[3].level == 2
    assert normalized.diagnostics == ("heading #/texts/3 inside a list is rendered as a paragraph",)


def test_empty_text_item_takes_its_inline_group_or_is_a_bare_marker():
    doc = DoclingDocument(name="toc")
    group = doc.add_list_group()
    item = doc.add_list_item("", parent=group)
    inline = doc.add_inline_group(parent=item)
    doc.add_text(label=DocItemLabel.TEXT, text="5 Behaviour", parent=inline)
    doc.add_text(label=DocItemLabel.TEXT, text="Toggle", parent=inline)
    sub = doc.add_list_group(parent=item)
    doc.add_list_item("5.1 Feeding", parent=sub)
    bare = doc.add_list_item("", parent=group)
    sub2 = doc.add_list_group(parent=bare)
    doc.add_list_item("orphaned", parent=sub2)
    doc.add_list_group(parent=group)  # empty list: nothing
    normalized = _normalize(doc)
    assert normalized.text == "- 5 Behaviour Toggle\n  - 5.1 Feeding\n-\n  - orphaned\n"
    (lst,) = normalized.blocks
    assert [shape(normalized, c)[1] for c in lst.children] == [
        "- 5 Behaviour Toggle\n  - 5.1 Feeding",
        "-\n  - orphaned",
    ]


def test_lists_next_to_each_other_stay_two_lists():
    doc = DoclingDocument(name="two")
    for text in ("a", "b"):
        doc.add_list_item(text, parent=doc.add_list_group())
    normalized = _normalize(doc)
    assert normalized.text == "- a\n\n- b\n"
    assert [b.kind for b in normalized.blocks] == ["list", "list"]


# -- code ---------------------------------------------------------------------------------------


def test_code_blocks():
    doc = _paged()
    caption = doc.add_text(label=DocItemLabel.CAPTION, text="Example 3-9 Creating a mask", prov=_prov(1))
    doc.add_code("\n\nSELECT *\n  FROM t;\n\n", code_language=CodeLanguageLabel.SQL, caption=caption, prov=_prov(2))
    doc.add_code("echo ```x``` and ````y", code_language=CodeLanguageLabel.UNKNOWN)
    doc.add_code("   \n")  # nothing
    normalized = _normalize(doc)
    assert normalized.text == (
        "Example 3-9 Creating a mask\n\n```sql\nSELECT *\n  FROM t;\n```\n\n`````\necho ```x``` and ````y\n`````\n"
    )
    assert shape(normalized) == [
        ("paragraph", "Example 3-9 Creating a mask", {"page_no": 1}),
        ("code", "```sql\nSELECT *\n  FROM t;\n```", {"language": "sql", "fence": "```sql", "page_no": 2}),
        ("code", "`````\necho ```x``` and ````y\n`````", {"fence": "`````"}),
    ]


# -- tables -------------------------------------------------------------------------------------


def test_table_with_two_header_rows_spans_caption_and_footnote():
    doc = _paged()
    cells = [
        _cell("class label", 0, 0, rows=2, header=True),
        _cell("% of Total", 0, 1, cols=2, header=True),
        _cell("Train", 1, 1, header=True),
        _cell("Test", 1, 2, header=True),
        _cell("Caption", 2, 0),
        _cell("2.04", 2, 1),
        _cell("1.77", 2, 2),
        _cell("Both\nrows", 3, 0, rows=2),
        _cell("a|b", 3, 1, cols=2),
        _cell("x", 4, 1),
        _cell("", 4, 2),
        # row 5 has no text at all: dropped
    ]
    caption = doc.add_text(label=DocItemLabel.CAPTION, text="Table 1: Overview.", prov=_prov(1))
    table = doc.add_table(data=TableData(num_rows=6, num_cols=3, table_cells=cells), caption=caption, prov=_prov(2))
    note = doc.add_text(label=DocItemLabel.FOOTNOTE, text="* estimated", parent=table, prov=_prov(2))
    table.footnotes.append(note.get_ref())
    doc.add_text(label=DocItemLabel.TEXT, text="After.")
    normalized = _normalize(doc)

    header = "| class label | % of Total - Train | % of Total - Test |\n| --- | --- | --- |"
    rows = ["| Caption | 2.04 | 1.77 |", "| Both rows | a\\|b |  |", "| Both rows | x |  |"]
    assert normalized.text == (
        "Table 1: Overview.\n\n" + header + "\n" + "\n".join(rows) + "\n\n* estimated\n\nAfter.\n"
    )
    assert shape(normalized) == [
        ("paragraph", "Table 1: Overview.", {"page_no": 1}),
        (
            "table",
            header + "\n" + "\n".join(rows),
            {"header_rows": 1, "page_no": 2},
            [
                ("table_row", header, {"page_no": 2}),
                *[("table_row", row, {"page_no": 2}) for row in rows],
            ],
        ),
        ("paragraph", "* estimated", {"page_no": 2}),
        ("paragraph", "After.", {}),
    ]
    assert normalized.diagnostics == ()


def test_table_without_column_headers_uses_its_first_row():
    doc = DoclingDocument(name="plain")
    cells = [_cell(t, r, c) for r, row in enumerate([["a", "b"], ["1", "2"]]) for c, t in enumerate(row)]
    table = doc.add_table(data=TableData(num_rows=2, num_cols=2, table_cells=cells))
    doc.add_table(data=TableData(num_rows=0, num_cols=0, table_cells=[]))  # nothing
    normalized = _normalize(doc)
    assert normalized.text == "| a | b |\n| --- | --- |\n| 1 | 2 |\n"
    assert shape(normalized) == [
        (
            "table",
            normalized.text[:-1],
            {"header_rows": 1},
            [
                ("table_row", "| a | b |\n| --- | --- |", {}),
                ("table_row", "| 1 | 2 |", {}),
            ],
        ),
    ]
    assert normalized.diagnostics == (
        f"table {table.self_ref} (2x2) has no column-header cells: its first row is the header",
        "table #/tables/1 (0x0) is empty: only its captions are rendered",
    )


# -- pictures, furniture, groups ----------------------------------------------------------------


def test_pictures_render_their_captions_only():
    doc = _paged()
    caption = doc.add_text(label=DocItemLabel.CAPTION, text="Figure 1: A duck.", prov=_prov(1))
    picture = doc.add_picture(caption=caption, prov=_prov(1))
    doc.add_text(label=DocItemLabel.TEXT, text="text inside the figure", parent=picture, prov=_prov(1))
    doc.add_picture(prov=_prov(2))  # no caption: nothing
    doc.add_text(label=DocItemLabel.TEXT, text="Body.", prov=_prov(2))
    normalized = _normalize(doc)
    assert normalized.text == "Figure 1: A duck.\n\nBody.\n"
    assert shape(normalized) == [
        ("paragraph", "Figure 1: A duck.", {"page_no": 1}),
        ("paragraph", "Body.", {"page_no": 2}),
    ]


def test_captions_placed_elsewhere_are_rendered_once_with_their_owner():
    """JATS puts captions at the end of the body, HTML before the picture."""
    doc = DoclingDocument(name="jats")
    doc.add_text(label=DocItemLabel.TEXT, text="Intro.")
    picture = doc.add_picture()
    doc.add_text(label=DocItemLabel.TEXT, text="Outro.")
    caption = doc.add_text(label=DocItemLabel.CAPTION, text="Figure 1.")
    picture.captions.append(caption.get_ref())
    normalized = _normalize(doc)
    assert normalized.text == "Intro.\n\nFigure 1.\n\nOutro.\n"


def test_furniture_and_groups():
    doc = DoclingDocument(name="web")
    nav = doc.add_list_group(content_layer=ContentLayer.FURNITURE)
    doc.add_list_item("Main page", parent=nav, content_layer=ContentLayer.FURNITURE)
    doc.add_title("Menu", content_layer=ContentLayer.FURNITURE)
    section = doc.add_group(name="section")
    doc.add_heading("Duck", level=1, parent=section)
    inner = doc.add_group(parent=section)
    doc.add_text(label=DocItemLabel.TEXT, text="A bird.", parent=inner)
    doc.add_text(label=DocItemLabel.TEXT, text="hidden", content_layer=ContentLayer.INVISIBLE)
    normalized = _normalize(doc)
    assert normalized.text == "## Duck\n\nA bird.\n"


def test_key_value_items():
    from docling_core.types.doc.document import GraphCell, GraphData, GraphLink
    from docling_core.types.doc.labels import GraphCellLabel, GraphLinkLabel

    doc = DoclingDocument(name="kv")
    graph = GraphData(
        cells=[
            GraphCell(label=GraphCellLabel.KEY, cell_id=0, text="Name", orig="Name"),
            GraphCell(label=GraphCellLabel.VALUE, cell_id=1, text="Duck", orig="Duck"),
            GraphCell(label=GraphCellLabel.UNSPECIFIED, cell_id=2, text="loose", orig="loose"),
        ],
        links=[GraphLink(label=GraphLinkLabel.TO_VALUE, source_cell_id=0, target_cell_id=1)],
    )
    doc.add_key_values(graph=graph)
    normalized = _normalize(doc)
    assert normalized.text == "Name: Duck\nloose\n"
    assert [b.kind for b in normalized.blocks] == ["paragraph"]


# -- nothing to render, invalid content ---------------------------------------------------------


def test_empty_documents_have_no_blocks():
    assert shape(_normalize(DoclingDocument(name="empty"))) == []
    doc = DoclingDocument(name="blank")
    doc.add_text(label=DocItemLabel.TEXT, text=" \n ")
    doc.add_picture()
    doc.add_list_group()
    doc.add_text(label=DocItemLabel.PAGE_HEADER, text="only furniture", content_layer=ContentLayer.FURNITURE)
    normalized = _normalize(doc)
    assert normalized.text == "" and normalized.blocks == ()


@pytest.mark.parametrize(
    "content, detail",
    [
        ("not json", "<root>: Invalid JSON"),
        ("", "<root>: Invalid JSON"),
        ("[]", "<root>: Input should be an object"),
        ("{}", "name: Field required"),
        ('{"name": 3}', "name: Input should be a valid string"),
        ('{"schema_name": "Other", "name": "x"}', "schema_name: Input should be 'DoclingDocument'"),
    ],
)
def test_invalid_content(content, detail):
    with pytest.raises(NormalizationError) as info:
        normalize_docling(content)
    assert info.value.reason == "invalid_docling_json"
    assert info.value.detail.startswith(f"content is not a valid DoclingDocument: {detail}")
    assert "\n" not in info.value.detail and len(info.value.detail) <= 200


def test_dangling_reference_is_invalid():
    doc = DoclingDocument(name="broken")
    doc.add_text(label=DocItemLabel.TEXT, text="hi")
    data = json.loads(doc.model_dump_json())
    data["body"]["children"].append({"$ref": "#/texts/7"})
    with pytest.raises(NormalizationError) as info:
        normalize_docling(json.dumps(data))
    assert info.value.reason == "invalid_docling_json"


def test_deterministic(shared_data):
    content = Path(shared_data("docling_corpus/word_sample.docx.json")).read_text(encoding="utf-8")
    first, second = normalize_docling(content), normalize_docling(content)
    assert first == second
    # The same document serialized again renders the same.
    again = DoclingDocument.model_validate_json(content).model_dump_json()
    assert normalize_docling(again) == first


def test_module_imports_without_docling_core():
    code = (
        "import sys, transforms.structure.normalizers.docling as m; "
        "print(any(name.startswith('docling_core') for name in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the real corpus ----------------------------------------------------------------------------


def _corpus_documents(shared_data) -> list[tuple[str, str]]:
    import pyarrow.parquet as pq

    docs = [
        (f"parquet:{row['id']}", row["content"])
        for row in pq.read_table(shared_data("corpus/docling.parquet")).to_pylist()
        if row["content_format"] == "docling"
    ]
    docs += [
        (f"file:{p.name}", p.read_text(encoding="utf-8")) for p in sorted(shared_data("docling_corpus").glob("*.json"))
    ]
    return docs


@pytest.fixture(scope="module")
def corpus(shared_data) -> list[tuple[str, str]]:
    return _corpus_documents(shared_data)


@pytest.mark.slow
def test_corpus_normalizes(corpus):
    assert len(corpus) >= 20
    for name, content in corpus:
        normalized = normalize_docling(content)
        check_blocks(normalized)
        _check_layout(normalized)
        assert normalized.blocks, name
        pages = bool(json.loads(content).get("pages"))
        with_page = [n for b in normalized.blocks for n in b.walk() if n.page_no is not None]
        if pages:
            assert with_page, f"{name}: paginated but no page_no"
            assert {n.page_no for n in with_page} <= {int(p) for p in json.loads(content)["pages"]}
        else:
            assert not with_page, name


@pytest.mark.slow
def test_corpus_kinds_and_furniture(corpus):
    by_name = {name: normalize_docling(content) for name, content in corpus if name.startswith("file:")}
    kinds = {n.kind for doc in by_name.values() for b in doc.blocks for n in b.walk()}
    assert kinds == {"heading", "paragraph", "list", "list_item", "table", "table_row", "code"}
    # Page headers and footers (furniture) are gone; the body around them is there.
    pdf = by_name["file:2206.01062.json"].text
    assert "DocLayNet: A Large Human-Annotated Dataset for Document-Layout Analysis\n" in pdf  # the title
    assert pdf.count("KDD '22, August 14-18, 2022, Washington, DC, USA\n") == 1  # body once, headers never
    wiki = by_name["file:wiki_duck.html.json"].text
    assert "Jump to content" not in wiki and "\n# Duck\n" in wiki
    # Nested DOCX lists are lists inside items.
    docx = by_name["file:docx_lists.docx.json"]
    nested = [n for b in docx.blocks for n in b.walk() if n.kind == "list" and n.level == 3]
    assert docx.text[nested[0].start : nested[0].end] == "    - List item 1.1.1"
    assert docx.text[nested[-1].start : nested[-1].end].startswith("      - Buy fresh bread")  # under "1. "


def test_text_too_deep_to_render_refuses_the_document_instead_of_dropping_it():
    # Under ~500 nested groups the deep text must not be skipped silently.
    from docling_core.types.doc import DocItemLabel, GroupLabel

    def deep(depth: int) -> str:
        doc, parent = DoclingDocument(name="x"), None
        for i in range(depth):
            parent = doc.add_group(label=GroupLabel.UNSPECIFIED, name=f"g{i}", parent=parent)
        doc.add_text(label=DocItemLabel.TEXT, text="deep text", parent=parent)
        doc.add_text(label=DocItemLabel.TEXT, text="shallow text")
        return doc.model_dump_json()

    assert normalize_docling(deep(300)).text == "deep text\n\nshallow text\n"
    for depth in (500, 800):
        with pytest.raises(NormalizationError) as err:
            normalize_docling(deep(depth))
        assert err.value.reason == "invalid_docling_json"
