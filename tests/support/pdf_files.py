"""Tiny PDFs written byte by byte, for the tests and benchmarks: no PDF library needed.

:func:`text_pdf` writes pages of paragraphs in Helvetica (a standard font every reader has, not
embedded; text is Latin-1), one text object per line, a wider gap between paragraphs than
between lines. :func:`image_pdf` writes pages holding only an image: what a scanned PDF looks
like to a text extractor. Both follow the PDF 1.4 file structure (objects, a cross-reference
table with each object's byte offset, a trailer).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["image_pdf", "text_pdf"]

PAGE_WIDTH, PAGE_HEIGHT = 612, 792  # US Letter, in points


def _pdf(objects: Sequence[bytes]) -> bytes:
    """A PDF file of ``objects`` (object 1 the catalog), numbered from 1 in order."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _stream(content: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s>>\nstream\n" % (len(content), extra) + content + b"\nendstream"


def _escape(text: str) -> bytes:
    return text.encode("latin-1").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _document(contents: Sequence[bytes], resource: bytes, resources: bytes) -> bytes:
    """Catalog (1), pages (2), one shared ``resource`` object (3) that the pages' ``resources``
    dictionary names, then a page object and its content stream per page."""
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(len(contents)))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(contents))]
    objects.append(resource)
    for i, content in enumerate(contents):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources %s /Contents %d 0 R >>"
            % (PAGE_WIDTH, PAGE_HEIGHT, resources, 5 + 2 * i)
        )
        objects.append(_stream(content))
    return _pdf(objects)


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
_IMAGE = _stream(
    b"\x20\xe0\xe0\x20",
    b"/Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8 ",
)


def text_pdf(
    pages: Sequence[Sequence[str]], *, font_size: int = 12, leading: int = 15, paragraph_gap: int = 12
) -> bytes:
    """A PDF with a text layer: each page a list of paragraphs, each paragraph's lines split at ``"\\n"``.

    Lines start at x = 72 pt, the first at 72 pt below the page's top; each line is ``leading``
    points below the last, and a paragraph ``paragraph_gap`` points more. Text must be Latin-1.
    """
    contents = []
    for paragraphs in pages:
        ops, y = [], PAGE_HEIGHT - 72
        for paragraph in paragraphs:
            for line in paragraph.split("\n"):
                ops.append(b"BT /F1 %d Tf 72 %d Td (%s) Tj ET" % (font_size, y, _escape(line)))
                y -= leading
            y -= paragraph_gap
        contents.append(b"\n".join(ops))
    return _document(contents, _FONT, b"<< /Font << /F1 3 0 R >> >>")


def image_pdf(pages: int = 1) -> bytes:
    """A PDF whose ``pages`` pages each show one image and no text: no text layer, as a scan."""
    return _document([b"q 400 0 0 400 100 200 cm /Im1 Do Q"] * pages, _IMAGE, b"<< /XObject << /Im1 3 0 R >> >>")
