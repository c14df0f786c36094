"""The parse job's Beam-free rules: which files are read as text and which converted, text files
read as they are, PDF text layers into DoclingDocuments with page numbers, and the chunks of such
a PDF carrying those page numbers."""

from __future__ import annotations

import json

import pytest

from tests.support.pdf_files import image_pdf, text_pdf
from transforms.parsing import PARSE_REASONS, PDF_OCR_HINT, FileFormats, ParseFailure, read_text, text_row

PAGES = [
    ["Tide tables", "Spring tides follow the full\nand new moon (twice a month).", "Neap tides: quarter moons."],
    ["Harbour entry is safe two hours\neither side of high water."],
]


def test_formats_by_extension_in_any_case():
    formats = FileFormats()
    assert {
        name: formats.of(f"raw/{name}")
        for name in (
            "a.md",
            "a.MARKDOWN",
            "a.txt",
            "a.Text",
            "a.rst",
            "a.rest",
            "a.html",
            "a.HTM",
            "a.xhtml",
            "a.docx",
            "a.xlsm",
            "a.pdf",
            "a.rtf",
            "README",
            "dir.md/README",
        )
    } == {
        "a.md": ("markdown", "text"),
        "a.MARKDOWN": ("markdown", "text"),
        "a.txt": ("text", "text"),
        "a.Text": ("text", "text"),
        "a.rst": ("rst", "text"),
        "a.rest": ("rst", "text"),
        "a.html": ("html", "text"),
        "a.HTM": ("html", "text"),
        "a.xhtml": ("html", "text"),
        "a.docx": ("docx", "docling"),
        "a.xlsm": ("xlsx", "docling"),
        "a.pdf": ("pdf", "pdf"),
        "a.rtf": None,
        "README": None,
        "dir.md/README": None,
    }


def test_overrides_add_an_extension_retype_one_or_send_it_to_docling():
    formats = FileFormats({"MDX": "markdown", ".log": "text", "md": "text", "htm": "docling"})
    assert formats.of("a.mdx") == ("markdown", "text")
    assert formats.of("b.LOG") == ("text", "text")
    assert formats.of("c.md") == ("text", "text")
    assert formats.of("d.htm") == ("html", "docling")
    assert formats.of("e.html") == ("html", "text")  # only the extension named
    assert formats.of("f.markdown") == ("markdown", "text")
    assert "mdx" in formats.extensions() and "log" in formats.extensions()


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"tar.gz": "text"}, "tar.gz=text: the extension is what follows a file name's last dot, e.g. md or txt"),
        ({"": "text"}, "=text: the extension is what follows a file name's last dot"),
        ({"m d": "text"}, "m d=text: the extension is what follows"),
        ({"md": "latex"}, "md=latex: the format must be one of markdown, text, rst, html, docling"),
        ({"md": "Markdown"}, "md=Markdown: the format must be one of"),
        ({"docx": "text"}, "docx=text: .docx files are always converted, never read as text or renamed"),
        ({"pdf": "docling"}, "pdf=docling: .pdf files are always converted"),
        (
            {"txt": "docling"},
            "txt=docling: Docling converts only these extensions' text formats: htm, html, markdown, md, xhtml",
        ),
        ({"md": "text", ".MD": "rst"}, ".MD=rst: .md is given twice"),
        ({"*": "text"}, "*=text: the extension is what follows"),
        ({"x" * 17: "text"}, "x" * 17 + "=text: the extension is what follows"),
        ({f"e{i}": "text" for i in range(101)}, "101 extensions given, at most 100"),
    ],
)
def test_bad_overrides_are_one_line_errors(overrides, message):
    with pytest.raises(ValueError) as err:
        FileFormats(overrides)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_text_file_is_its_own_content_verbatim():
    data = "# Tide tables\r\n\r\nSpring tides — twice a month.\n".encode()
    assert text_row(path="gs://b/raw/tides.md", doc_id="tides.md", data=data, fmt="markdown") == {
        "id": "tides.md",
        "content": "# Tide tables\r\n\r\nSpring tides — twice a month.\n",
        "content_format": "markdown",
        "metadata": json.dumps(
            {"file_format": "markdown", "size_bytes": len(data), "source_path": "gs://b/raw/tides.md"}
        ),
    }
    assert read_text(b"\xef\xbb\xbfTitle\n=====\n", "rst") == "Title\n=====\n"  # the BOM left out
    assert read_text(b"a\x00b", "text") == "a\x00b"  # the chunk job's admission rules apply


@pytest.mark.parametrize(
    "data, fmt, detail",
    [
        (
            "café".encode("latin-1"),
            "text",
            "not UTF-8 at byte 3; re-encode the file as UTF-8 (iconv -f ITS-ENCODING -t UTF-8)",
        ),
        (
            "<p>été</p>".encode("utf-16"),
            "html",
            "not UTF-8 at byte 0: UTF-16 (it starts with a UTF-16 byte order mark); re-encode the file as UTF-8 "
            "(iconv -f ITS-ENCODING -t UTF-8), or convert it with Docling (--format-for html=docling)",
        ),
    ],
)
def test_a_text_file_that_is_not_utf8_is_a_failure_with_a_reason(data, fmt, detail):
    with pytest.raises(ParseFailure) as failure:
        read_text(data, fmt)
    assert (failure.value.reason, failure.value.detail) == ("invalid_utf8", detail)
    assert failure.value.reason in PARSE_REASONS


pytest.importorskip("pypdfium2", reason="rechunk[parse] (pypdfium2) is not installed")
pytest.importorskip("docling_core")

from transforms.parsing import pdf_text_document  # noqa: E402


def test_a_pdf_text_layer_is_one_text_item_per_paragraph_with_its_page():
    document = pdf_text_document("tides.pdf", text_pdf(PAGES))
    assert document.name == "tides"
    assert [(t.prov[0].page_no, t.label.value, t.text) for t in document.texts] == [
        (1, "text", "Tide tables"),
        (1, "text", "Spring tides follow the full and new moon (twice a month)."),
        (1, "text", "Neap tides: quarter moons."),
        (2, "text", "Harbour entry is safe two hours either side of high water."),
    ]
    assert sorted(document.pages) == [1, 2]
    assert (document.pages[1].size.width, document.pages[1].size.height) == (612, 792)
    box = document.texts[1].prov[0].bbox  # two lines, from x = 72 pt, 72 pt below the top and down
    assert 71 < box.l < 74 and 700 < box.t < 720 and 670 < box.b < box.t and box.coord_origin.value == "BOTTOMLEFT"
    assert document.texts[1].prov[0].charspan == (0, len(document.texts[1].text))


def test_a_page_without_text_adds_nothing_and_a_pdf_without_any_is_a_scan():
    document = pdf_text_document("mixed.pdf", text_pdf([["Only page one has text."], []]))
    assert [t.text for t in document.texts] == ["Only page one has text."] and sorted(document.pages) == [1, 2]
    with pytest.raises(ParseFailure) as failure:
        pdf_text_document("scan.pdf", image_pdf(3))
    assert failure.value.reason == "pdf_no_text_layer"
    assert failure.value.detail == f"no text on any of its 3 pages; {PDF_OCR_HINT}"
    assert "pip install ocrmypdf" in failure.value.detail
    with pytest.raises(ParseFailure, match="no text on its page;"):
        pdf_text_document("scan.pdf", image_pdf(1))


@pytest.mark.parametrize("data", [b"%PDF-1.4\nnot really a PDF\n", text_pdf(PAGES)[:300]])
def test_a_broken_pdf_is_a_conversion_failure(data):
    with pytest.raises(ParseFailure) as failure:
        pdf_text_document("broken.pdf", data)
    assert failure.value.reason == "conversion_failed" and failure.value.detail.startswith("PDFium: ")


def test_a_pdf_that_names_encrypt_in_its_text_is_read():
    """PDFium decides whether a PDF needs a password, never a search of its bytes."""
    from transforms.parsing import FileConverter

    converter = FileConverter.__new__(FileConverter)  # the text-layer path needs no Docling
    FileConverter._check_args(converter)
    converter._pdf_converter = None
    row = converter.convert(path="/raw/notes.pdf", doc_id="notes.pdf", data=text_pdf([["See the /Encrypt entry."]]))
    assert "See the /Encrypt entry." in row["content"]


def test_chunks_of_a_pdf_text_layer_carry_their_page_numbers():
    """The default route (StructureAwareChunker) keeps each paragraph's page in its chunk."""
    from transforms.chunkers import StructureAwareChunker
    from transforms.documents import Document
    from transforms.tokenizers import load_tokenizer

    pages = [[f"Page {n} paragraph {i}: " + "words of the tide table " * 6 for i in range(3)] for n in (1, 2, 3)]
    content = json.dumps(pdf_text_document("t.pdf", text_pdf(pages)).export_to_dict())
    tokenizer = load_tokenizer("tiktoken:cl100k_base")
    chunker = StructureAwareChunker(max_tokens=64, target_tokens=48, min_preferred_tokens=8, tokenizer=tokenizer)
    chunks = chunker.chunk(Document(id="t.pdf", content=content, content_format="docling"), tokenizer_identity="t")
    assert len(chunks) >= 3
    for chunk in chunks:
        first = int(chunk.text.split("Page ", 1)[1].split(" ", 1)[0])
        assert chunk.page_no == first, (chunk.page_no, chunk.text)
    assert {c.page_no for c in chunks} == {1, 2, 3}
