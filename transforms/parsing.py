"""Raw files into parsed documents: the Beam-free core of ``rechunk parse``.

A raw file becomes one row of the chunk job's input (``id``, ``content``, ``content_format``,
``metadata``, see ``docs/contract.md``), or a :class:`ParseFailure` with a reason code from
:data:`PARSE_REASONS`. Which way a file goes is decided by its name's extension
(:class:`FileFormats`, overridable per extension):

- Markdown, text, reST and HTML are read as they are (:func:`read_text`): the content is the
  file's text decoded as UTF-8, of the content format of the same name, so the chunk job's own
  normalizers see the file itself and keep offsets into it.
- DOCX, PPTX and XLSX are converted by Docling (a DoclingDocument, or its Markdown export).
- PDF is converted by Docling where its layout models are on local disk (``pdf_artifacts_path``);
  elsewhere its text layer is read with PDFium (:func:`pdf_text_document`): a DoclingDocument of
  one text item per paragraph, each with its page number, so chunks carry page numbers.

The offline formats go through Docling's ``SimplePipeline`` with the format's declarative backend,
the same pair Docling's ``DocumentConverter`` picks for them. ``DocumentConverter`` itself is not
imported for them: in docling-slim 2.143 its module imports torch (the audio pipeline's), so the
light install (the ``parse`` extra, no torch) could not load it. Docling's PDF conversion needs
its layout models, which Docling would fetch from the Hugging Face Hub; here they are only ever
read from a local folder (``pdf_artifacts_path``), with ``HF_HUB_OFFLINE=1``: never a download
attempt. Without that folder a PDF's text layer is read, and a PDF without one (a scan) is a
:class:`ParseFailure` that says how to add one.

Document ids are the file's path relative to the file pattern's base (:func:`pattern_base`), with
``/`` separators: ``gs://bucket/raw/*/*.docx`` and ``/data/raw/*/*.docx`` give the same ids for the
same tree, on any machine.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
from typing import Any

import pyarrow as pa

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_FILE_SECONDS",
    "FILE_FORMATS",
    "FORMAT_TARGETS",
    "PARSED_SCHEMA",
    "PARSE_DEAD_LETTER_SCHEMA",
    "PARSE_INSTALL_HINT",
    "PARSE_REASONS",
    "PDF_MODELS_HINT",
    "PDF_OCR_HINT",
    "TEXT_FORMATS",
    "ConverterProcess",
    "FileConverter",
    "FileFormats",
    "ParseFailure",
    "document_id",
    "file_format",
    "pattern_base",
    "pdf_text_document",
    "read_text",
    "text_row",
]

#: Default of ``--max-file-bytes``: a larger file is dead-lettered as ``file_too_large`` unread.
DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024

#: Default of ``--max-file-seconds``: a conversion still running after this many seconds is stopped
#: and the file dead-lettered as ``conversion_timeout`` (a 45 MB HTML file converts in about 35 s).
DEFAULT_MAX_FILE_SECONDS = 300.0

#: File name extension (lower case, no dot) -> the file format named in reports and metadata.
FILE_FORMATS = {
    "html": "html",
    "htm": "html",
    "xhtml": "html",
    "md": "markdown",
    "markdown": "markdown",
    "txt": "text",
    "text": "text",
    "rst": "rst",
    "rest": "rst",
    "docx": "docx",
    "pptx": "pptx",
    "xlsx": "xlsx",
    "xlsm": "xlsx",
    "pdf": "pdf",
}

#: File formats read as UTF-8 text, each written as the ``content_format`` of the same name.
TEXT_FORMATS = ("markdown", "text", "rst", "html")

#: File formats Docling has a converter for here (``--format-for EXT=docling`` takes their extensions).
_DOCLING_TEXT_FORMATS = ("html", "markdown")

#: File formats always converted (never read as text), whatever ``--format-for`` says.
_BINARY_FORMATS = ("docx", "pptx", "xlsx", "pdf")

#: What ``--format-for EXT=TARGET`` may name: a text format, or ``docling`` (Docling's converter).
FORMAT_TARGETS = (*TEXT_FORMATS, "docling")

#: ``content_format`` values of Docling's conversions (``--content-format``).
OUTPUT_FORMATS = ("docling", "markdown")

#: Stable reason codes of the parse dead letter.
PARSE_REASONS = {
    "unsupported_file_format": "the file name's extension is not one of the formats rechunk parse converts",
    "file_too_large": "the file has more bytes than --max-file-bytes (it is not read)",
    "empty_file": "the file has no bytes",
    "encrypted_file": "the file is encrypted (password-protected Office file or PDF)",
    "pdf_models_missing": "not written by this version: a PDF without Docling's models (--pdf-artifacts-path) is read from its text layer",
    "conversion_failed": "Docling could not convert the file (corrupt, truncated, or not what its extension says)",
    "unreadable_file": "the file could not be read from its filesystem",
    "conversion_timeout": "Docling did not finish converting the file within --max-file-seconds (its converter process was stopped)",
    "invalid_utf8": "a Markdown, text, reST or HTML file that is not UTF-8 text",
    "pdf_no_text_layer": "a PDF with no text on any page (a scan), and no Docling models (--pdf-artifacts-path)",
}

PARSE_INSTALL_HINT = "rechunk parse needs Docling's converters: install the parse extra (in a clone: .venv/bin/pip install -e '.[parse]')"
PDF_OCR_HINT = (
    "rechunk parse reads a PDF's text layer and runs no OCR: add a text layer first "
    "(e.g. ocrmypdf in.pdf out.pdf, after pip install ocrmypdf and apt-get install tesseract-ocr) and parse the result"
)
PDF_MODELS_HINT = (
    "PDF conversion needs Docling's layout models on local disk: pip install 'docling-slim[format-pdf,models-local]' "
    "(with a CPU torch, e.g. torch==2.13.0 from the CPU index), fetch the models once on a machine with network "
    "(docling-tools models download -o DIR), then run with --pdf-artifacts-path DIR"
)

#: The chunk job's input (the contract's document columns).
PARSED_SCHEMA = pa.schema(
    [("id", pa.string()), ("content", pa.string()), ("content_format", pa.string()), ("metadata", pa.string())]
)

#: One row per file that was not converted. The file itself stays at ``path`` (no bytes copied).
PARSE_DEAD_LETTER_SCHEMA = pa.schema(
    [
        ("document_id", pa.string()),
        ("path", pa.string()),
        ("size_bytes", pa.int64()),
        ("file_format", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
    ]
)

# OLE compound file: what an encrypted DOCX/PPTX/XLSX is (and legacy .doc/.ppt/.xls).
_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_GLOB = re.compile(r"[*?\[]")  # Beam's wildcards (FileSystem.translate_pattern); "{" is literal


def pattern_base(pattern: str) -> str:
    """The fixed directory a file pattern starts from, ending with ``/``.

    The part of ``pattern`` before its first wildcard (``* ? [``, Beam's; ``{`` is no wildcard
    there), cut after the last ``/``;
    for a pattern without wildcard, the file's directory. ``'gs://b/raw/**/*.md'`` ->
    ``'gs://b/raw/'``; ``'docs/a.md'`` -> ``'docs/'``.
    """
    match = _GLOB.search(pattern)
    head = pattern[: match.start()] if match else pattern
    return head[: head.rfind("/") + 1]


def document_id(path: str, base: str) -> str:
    """The document id of ``path`` matched under ``base``: the path relative to ``base``.

    Stable across runs, machines and filesystems (local, ``gs://``) for the same tree under the
    pattern's base; unique within one pattern's matches.
    """
    relative = path[len(base) :] if base and path.startswith(base) else path
    return relative.lstrip("/") or path


def file_format(path: str) -> str | None:
    """The file format of ``path`` by its extension (a value of :data:`FILE_FORMATS`), or None."""
    name = path.rsplit("/", 1)[-1]
    if "." not in name:
        return None
    return FILE_FORMATS.get(name.rsplit(".", 1)[1].lower())


def _extension(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[1].lower() if "." in name else None


#: The most extensions ``--format-for`` may name, and what an extension may be.
MAX_FORMAT_OVERRIDES = 100
_EXTENSION = re.compile(r"[a-z0-9_+-]{1,16}")


class FileFormats:
    """Which format each file is, and how it is converted, by its name's extension.

    By default :data:`FILE_FORMATS`: ``.md`` ``.markdown``, ``.txt`` ``.text``, ``.rst`` ``.rest``,
    ``.html`` ``.htm`` ``.xhtml`` are read as text (``"text"``); ``.docx`` ``.pptx`` ``.xlsx``
    ``.xlsm`` go to Docling (``"docling"``); ``.pdf`` to ``"pdf"`` (Docling with its models, else
    the text layer). ``overrides`` maps an extension (any letter case, without its dot) to a
    target of :data:`FORMAT_TARGETS`: a text format (``{"mdx": "markdown", "log": "text",
    "md": "text"}``: those files are read as that format) or ``docling`` (``{"html": "docling"}``:
    Docling's converter of the extension's own format, e.g. for HTML that is not UTF-8).

    Raises:
        ValueError: One line naming the override: an extension with a dot, ``/`` or space, or
            empty; an unknown target; an office or PDF extension (always converted); ``docling``
            for an extension Docling has no converter for here.
    """

    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        self.overrides: dict[str, str] = {}
        if len(overrides or {}) > MAX_FORMAT_OVERRIDES:
            raise ValueError(f"{len(overrides or {})} extensions given, at most {MAX_FORMAT_OVERRIDES}")
        for given, target in (overrides or {}).items():
            extension = given.lower().removeprefix(".")
            shown = f"{given}={target}"
            if _EXTENSION.fullmatch(extension) is None:
                raise ValueError(
                    f"{shown[:80]}: the extension is what follows a file name's last dot, e.g. md or txt "
                    "(letters, digits, _, + and -, at most 16)"
                )
            if target not in FORMAT_TARGETS:
                raise ValueError(f"{shown}: the format must be one of {', '.join(FORMAT_TARGETS)}")
            if FILE_FORMATS.get(extension) in _BINARY_FORMATS:
                raise ValueError(f"{shown}: .{extension} files are always converted, never read as text or renamed")
            if target == "docling" and FILE_FORMATS.get(extension) not in _DOCLING_TEXT_FORMATS:
                known = ", ".join(sorted(e for e, f in FILE_FORMATS.items() if f in _DOCLING_TEXT_FORMATS))
                raise ValueError(f"{shown}: Docling converts only these extensions' text formats: {known}")
            if extension in self.overrides:
                raise ValueError(f"{shown}: .{extension} is given twice")
            self.overrides[extension] = target

    def of(self, path: str) -> tuple[str, str] | None:
        """``(file format, conversion)`` of ``path``, or None for an extension of no format.

        The conversion is ``"text"`` (read as UTF-8, content format = file format), ``"docling"``
        or ``"pdf"``.
        """
        extension = _extension(path)
        if extension is None:
            return None
        target = self.overrides.get(extension)
        if target is not None and target != "docling":
            return target, "text"
        fmt = FILE_FORMATS.get(extension)
        if fmt is None:
            return None
        if fmt == "pdf":
            return fmt, "pdf"
        return fmt, "text" if fmt in TEXT_FORMATS and target != "docling" else "docling"

    def extensions(self) -> list[str]:
        """Every extension of a format, sorted."""
        return sorted({*FILE_FORMATS, *self.overrides})


_UTF8_BOM = "\ufeff"


def read_text(data: bytes, fmt: str) -> str:
    """The text of a Markdown, text, reST or HTML file: ``data`` decoded as UTF-8, a leading
    byte order mark left out (offsets of the chunks count code points of what is returned).

    Raises:
        ParseFailure: ``invalid_utf8``, naming the first byte offset that is not UTF-8.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        what = "UTF-16 (it starts with a UTF-16 byte order mark)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else None
        raise ParseFailure(
            "invalid_utf8",
            f"not UTF-8 at byte {err.start:,}"
            + (f": {what}" if what else "")
            + "; re-encode the file as UTF-8 (iconv -f ITS-ENCODING -t UTF-8)"
            + (", or convert it with Docling (--format-for html=docling)" if fmt == "html" else ""),
        ) from None
    return text.removeprefix(_UTF8_BOM)


#: A line gap (points) larger than this share of the page's median line height starts a paragraph.
_PARAGRAPH_GAP = 0.6


def _page_paragraphs(textpage: Any) -> list[tuple[str, tuple[float, float, float, float]]]:
    """A PDF page's text as paragraphs, each with its bounding box ``(left, bottom, right, top)`` in
    points from the page's bottom left.

    PDFium's text rectangles (runs of characters on one line, in the page's text order) are joined
    into lines where they overlap vertically, and lines into paragraphs while the gap between two
    lines is at most :data:`_PARAGRAPH_GAP` of the page's median line height and the next line is
    below the last (a move up is a new column). Whitespace runs become one space.
    """
    lines: list[list[float]] = []  # [left, bottom, right, top]
    for index in range(textpage.count_rects()):
        left, bottom, right, top = textpage.get_rect(index)
        if lines:
            last = lines[-1]
            overlap = min(top, last[3]) - max(bottom, last[1])
            if overlap > 0.5 * min(top - bottom, last[3] - last[1]) and left >= last[0]:
                last[:] = [min(left, last[0]), min(bottom, last[1]), max(right, last[2]), max(top, last[3])]
                continue
        lines.append([left, bottom, right, top])
    if not lines:
        return []
    heights = sorted(line[3] - line[1] for line in lines)
    limit = _PARAGRAPH_GAP * heights[len(heights) // 2]
    paragraphs: list[tuple[list[str], list[float]]] = []
    previous: list[float] | None = None
    for line in lines:
        text = " ".join(textpage.get_text_bounded(*line).split())
        if not text:
            continue
        if previous is not None and previous[1] >= line[3] - 0.5 and previous[1] - line[3] <= limit:
            words, box = paragraphs[-1]
            words.append(text)
            box[:] = [min(box[0], line[0]), min(box[1], line[1]), max(box[2], line[2]), max(box[3], line[3])]
        else:
            paragraphs.append(([text], list(line)))
        previous = line
    return [(" ".join(words), (box[0], box[1], box[2], box[3])) for words, box in paragraphs]


def _check_opens(data: bytes) -> None:
    """Raise ``encrypted_file`` when PDFium needs a password to open the PDF (a PDF with only an
    owner password opens without one), ``conversion_failed`` when it cannot open it at all."""
    import pypdfium2 as pdfium

    try:
        pdfium.PdfDocument(data).close()
    except pdfium.PdfiumError as err:
        if "password" in str(err).lower():
            raise ParseFailure("encrypted_file", "the PDF needs a password") from None
        raise ParseFailure("conversion_failed", f"PDFium: {_one_line(err)}") from None


def pdf_text_document(name: str, data: bytes):
    """A PDF's text layer as a DoclingDocument: one ``text`` item per paragraph in page order,
    each with its provenance (page number from 1, bounding box in points, bottom-left origin, kept
    on the page), and
    each page's size. Read with PDFium (pypdfium2); no layout model, no OCR.

    Paragraphs: see :func:`_page_paragraphs`. A page with no text adds no item.

    Raises:
        ParseFailure: ``conversion_failed`` (PDFium cannot open the file), ``encrypted_file``
            (it needs a password), ``pdf_no_text_layer`` (no page holds text: a scan; the detail
            says how to add a text layer).
        ImportError: pypdfium2 is not installed (:data:`PARSE_INSTALL_HINT`).
    """
    try:
        import pypdfium2 as pdfium
        from docling_core.types.doc import BoundingBox, CoordOrigin, DocItemLabel, DoclingDocument, ProvenanceItem, Size
    except ImportError as err:
        raise ImportError(PARSE_INSTALL_HINT) from err
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as err:
        if "password" in str(err).lower():
            raise ParseFailure("encrypted_file", "the PDF needs a password") from None
        raise ParseFailure("conversion_failed", f"PDFium: {_one_line(err)}") from None
    try:
        document = DoclingDocument(name=name.rsplit(".", 1)[0] if "." in name else name)
        for index in range(len(pdf)):
            page = pdf[index]
            try:
                width, height = page.get_size()
                document.add_page(page_no=index + 1, size=Size(width=width, height=height))
                textpage = page.get_textpage()
                try:
                    paragraphs = _page_paragraphs(textpage)
                finally:
                    textpage.close()
            finally:
                page.close()
            for text, (left, bottom, right, top) in paragraphs:
                # Text may run past the page's edge; its box is kept on the page.
                left, right = sorted((min(max(left, 0.0), width), min(max(right, 0.0), width)))
                bottom, top = sorted((min(max(bottom, 0.0), height), min(max(top, 0.0), height)))
                box = BoundingBox(l=left, t=top, r=right, b=bottom, coord_origin=CoordOrigin.BOTTOMLEFT)
                document.add_text(
                    label=DocItemLabel.TEXT,
                    text=text,
                    prov=ProvenanceItem(page_no=index + 1, bbox=box, charspan=(0, len(text))),
                )
        pages = len(pdf)
    except pdfium.PdfiumError as err:
        raise ParseFailure("conversion_failed", f"PDFium: {_one_line(err)}") from None
    finally:
        pdf.close()
    if not document.texts:
        raise ParseFailure(
            "pdf_no_text_layer",
            f"no text on {'its page' if pages == 1 else f'any of its {pages:,} pages'}; {PDF_OCR_HINT}",
        )
    return document


class ParseFailure(Exception):
    """A file that did not become a document: ``reason`` (a key of :data:`PARSE_REASONS`) and
    ``detail`` (one sentence).

    Raises:
        ValueError: ``reason`` is not a key of :data:`PARSE_REASONS`.
    """

    def __init__(self, reason: str, detail: str) -> None:
        if reason not in PARSE_REASONS:
            raise ValueError(f"reason must be one of {sorted(PARSE_REASONS)}, got {reason!r}")
        super().__init__(reason, detail)
        self.reason = reason
        self.detail = detail


def _one_line(err: BaseException, limit: int = 300) -> str:
    return " ".join(f"{type(err).__name__}: {err}".split())[:limit]


def text_row(*, path: str, doc_id: str, data: bytes, fmt: str) -> dict[str, Any]:
    """The contract input row of a text file of format ``fmt`` (a :data:`TEXT_FORMATS` value):
    its text (:func:`read_text`) as ``content``, ``fmt`` as ``content_format``.

    Raises:
        ParseFailure: ``invalid_utf8``.
    """
    return _row(path=path, doc_id=doc_id, data=data, fmt=fmt, content=read_text(data, fmt), content_format=fmt)


def _row(*, path: str, doc_id: str, data: bytes, fmt: str, content: str, content_format: str) -> dict[str, Any]:
    metadata = {"source_path": path, "size_bytes": len(data), "file_format": fmt}
    return {
        "id": doc_id,
        "content": content,
        "content_format": content_format,
        "metadata": json.dumps(metadata, sort_keys=True, ensure_ascii=False),
    }


class FileConverter:
    """Convert the bytes of one raw file into a contract input row.

    Text files are read as they are (:func:`text_row`), office files converted by Docling, PDFs
    by Docling with its models or else from their text layer (:func:`pdf_text_document`). Build
    one per worker (``DoFn.setup``): it imports Docling and holds its pipelines.

    Args:
        content_format: ``docling`` (the DoclingDocument as JSON) or ``markdown`` (Docling's
            Markdown export) in the ``content`` of files Docling converts and of PDFs.
        max_file_bytes: A larger file is a ``file_too_large`` failure.
        pdf_artifacts_path: A local folder holding Docling's PDF models (``docling-tools models
            download``): PDFs are converted by Docling; without it, from their text layer.
        format_for: :class:`FileFormats`' overrides, extension -> target.

    Raises:
        ValueError: ``content_format``, ``max_file_bytes`` or ``format_for`` out of range.
        ImportError: Docling is not installed (:data:`PARSE_INSTALL_HINT`), or
            ``pdf_artifacts_path`` is given and Docling's PDF pipeline cannot be imported.
    """

    def __init__(
        self,
        *,
        content_format: str = "docling",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        pdf_artifacts_path: str | None = None,
        format_for: dict[str, str] | None = None,
    ) -> None:
        self._check_args(
            content_format=content_format,
            max_file_bytes=max_file_bytes,
            pdf_artifacts_path=pdf_artifacts_path,
            format_for=format_for,
        )
        os.environ["HF_HUB_OFFLINE"] = "1"  # before Docling imports huggingface_hub: never a download
        try:
            import pypdfium2  # noqa: F401  (PDF text layers; imported here, not at the first PDF)
            from docling.backend.html_backend import HTMLDocumentBackend
            from docling.backend.md_backend import MarkdownDocumentBackend
            from docling.backend.msexcel_backend import MsExcelDocumentBackend
            from docling.backend.mspowerpoint_backend import MsPowerpointDocumentBackend
            from docling.backend.msword_backend import MsWordDocumentBackend
            from docling.datamodel.base_models import InputFormat
            from docling.datamodel.pipeline_options import ConvertPipelineOptions
            from docling.pipeline.simple_pipeline import SimplePipeline
        except ImportError as err:
            raise ImportError(PARSE_INSTALL_HINT) from err
        # Docling logs each rejected file with a traceback; the dead letter carries the reason.
        logging.getLogger("docling").setLevel(logging.CRITICAL)
        self._backends: dict[str, tuple[Any, Any]] = {
            "html": (InputFormat.HTML, HTMLDocumentBackend),
            "markdown": (InputFormat.MD, MarkdownDocumentBackend),
            "docx": (InputFormat.DOCX, MsWordDocumentBackend),
            "pptx": (InputFormat.PPTX, MsPowerpointDocumentBackend),
            "xlsx": (InputFormat.XLSX, MsExcelDocumentBackend),
        }
        self._pipeline = SimplePipeline(ConvertPipelineOptions())
        self._pdf_converter: Any = self._build_pdf_converter(pdf_artifacts_path) if pdf_artifacts_path else None

    def _check_args(
        self,
        *,
        content_format: str = "docling",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        pdf_artifacts_path: str | None = None,
        format_for: dict[str, str] | None = None,
    ) -> None:
        if content_format not in OUTPUT_FORMATS:
            raise ValueError(f"content_format must be one of {OUTPUT_FORMATS}, got {content_format!r}")
        if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int) or max_file_bytes <= 0:
            raise ValueError(f"max_file_bytes must be a positive integer, got {max_file_bytes!r}")
        self.content_format = content_format
        self.max_file_bytes = max_file_bytes
        self.pdf_artifacts_path = pdf_artifacts_path
        self.formats = FileFormats(format_for)

    @staticmethod
    def _build_pdf_converter(artifacts_path: str):
        import importlib.util

        # Docling imports these only when the first PDF is converted; missing, every PDF would fail.
        for module in ("docling_parse", "pypdfium2", "docling_ibm_models", "torch", "torchvision"):
            try:
                found = importlib.util.find_spec(module) is not None
            except ValueError:  # in sys.modules as None: known not to import
                found = False
            if not found:
                raise ImportError(PDF_MODELS_HINT)
        try:
            from docling.datamodel.base_models import InputFormat
            from docling.datamodel.pipeline_options import PdfPipelineOptions
            from docling.document_converter import DocumentConverter, PdfFormatOption
        except ImportError as err:
            raise ImportError(PDF_MODELS_HINT) from err
        # OCR models are another download: text-layer PDFs only.
        options = PdfPipelineOptions(artifacts_path=artifacts_path, do_ocr=False)
        return DocumentConverter(
            allowed_formats=[InputFormat.PDF],
            format_options={InputFormat.PDF: PdfFormatOption(pipeline_options=options)},
        )

    def check(self, path: str, size_bytes: int) -> tuple[str, str]:
        """What can be known before reading: ``(file format, conversion)`` as
        :meth:`FileFormats.of` says, or raise :class:`ParseFailure`."""
        found = self.formats.of(path)
        if found is None:
            name = path.rsplit("/", 1)[-1]
            ext = name.rsplit(".", 1)[1] if "." in name else "(none)"
            raise ParseFailure(
                "unsupported_file_format",
                f"extension {ext!r} is not one of {', '.join(self.formats.extensions())} (--format-for EXT=FORMAT adds one)",
            )
        if size_bytes > self.max_file_bytes:
            raise ParseFailure(
                "file_too_large", f"{size_bytes:,} bytes > max {self.max_file_bytes:,} (--max-file-bytes)"
            )
        if size_bytes == 0:
            raise ParseFailure("empty_file", "0 bytes")
        return found

    def convert(self, *, path: str, doc_id: str, data: bytes) -> dict[str, Any]:
        """Convert one file's bytes into a contract input row (``PARSED_SCHEMA``).

        ``metadata`` holds ``source_path`` (``path``), ``size_bytes`` and ``file_format``.

        Raises:
            ParseFailure: any reason of :data:`PARSE_REASONS` but ``unreadable_file``,
                ``conversion_timeout`` and ``pdf_models_missing``.
        """
        fmt, conversion = self.check(path, len(data))
        if conversion == "text":
            return text_row(path=path, doc_id=doc_id, data=data, fmt=fmt)
        if fmt in ("docx", "pptx", "xlsx") and data.startswith(_CFB_MAGIC):
            raise ParseFailure(
                "encrypted_file",
                "an OLE compound file, not Office Open XML: a password-protected (encrypted) file, or a legacy .doc/.ppt/.xls renamed",
            )
        name = path.rsplit("/", 1)[-1]
        if fmt != "pdf":
            document = self._convert_simple(fmt, name, data)
        elif self._pdf_converter is not None:
            _check_opens(data)  # PDFium decides what needs a password (an owner password alone does not)
            document = self._convert_pdf(name, data)
        else:
            document = pdf_text_document(name, data)
        if self.content_format == "docling":
            content = json.dumps(document.export_to_dict(), ensure_ascii=False, separators=(",", ":"))
        else:
            content = document.export_to_markdown()
        return _row(path=path, doc_id=doc_id, data=data, fmt=fmt, content=content, content_format=self.content_format)

    def _convert_simple(self, fmt: str, name: str, data: bytes):
        from docling.datamodel.base_models import ConversionStatus
        from docling.datamodel.document import InputDocument

        input_format, backend = self._backends[fmt]
        try:
            document = InputDocument(io.BytesIO(data), format=input_format, backend=backend, filename=name)
        except Exception as err:  # a backend's own error on bytes it cannot open
            raise ParseFailure("conversion_failed", _one_line(err)) from None
        if not document.valid:
            rejection = getattr(document, "_rejection", None)
            message = rejection.message if rejection is not None else "the backend rejected the file"
            if not message.startswith(backend.__name__):
                message = f"{backend.__name__}: {message}"
            raise ParseFailure("conversion_failed", message)
        try:
            result = self._pipeline.execute(document, raises_on_error=False)
        except Exception as err:
            raise ParseFailure("conversion_failed", _one_line(err)) from None
        if result.status != ConversionStatus.SUCCESS or result.document is None:
            errors = "; ".join(e.error_message for e in result.errors) or result.status.value
            raise ParseFailure("conversion_failed", f"{backend.__name__}: {' '.join(errors.split())[:300]}")
        return result.document

    def _convert_pdf(self, name: str, data: bytes):
        from docling.datamodel.base_models import ConversionStatus, DocumentStream

        try:
            result = self._pdf_converter.convert(
                DocumentStream(name=name, stream=io.BytesIO(data)), raises_on_error=False
            )
        except Exception as err:
            raise ParseFailure("conversion_failed", _one_line(err)) from None
        if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
            errors = "; ".join(e.error_message for e in result.errors) or result.status.value
            raise ParseFailure("conversion_failed", f"PDF: {' '.join(errors.split())[:300]}")
        return result.document


def _serve(read_fd: int, write_fd: int) -> None:
    """The converter process's loop, on two pipe ends: read the :class:`FileConverter` arguments
    and build it, then convert each request (``convert``'s keyword arguments) and answer
    ``("ok", row)`` or ``("failed", reason, detail)``. ``None`` or a closed pipe ends it, and so
    does the parent's exit, even mid-conversion."""
    import threading
    import time
    from multiprocessing.connection import Connection

    parent = os.getppid()

    def exit_with_parent() -> None:  # an orphan must not go on converting (for hours, on some files)
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=exit_with_parent, daemon=True).start()
    requests, answers = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    try:
        converter = FileConverter(**requests.recv())
    except Exception as err:  # ImportError with the install hint, or a bad argument
        answers.send(("error", str(err)))
        return
    answers.send(("ready",))
    while True:
        try:
            request = requests.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if request is None:
            return
        answer: tuple[Any, ...]
        try:
            answer = ("ok", converter.convert(**request))
        except ParseFailure as failure:
            answer = ("failed", failure.reason, failure.detail)
        except Exception as err:  # any other error of a backend on this file
            answer = ("failed", "conversion_failed", _one_line(err))
        try:
            answers.send(answer)
        except (OSError, ValueError):  # the parent is gone
            return


class ConverterProcess:
    """A :class:`FileConverter` in a child process, so that no single file can stop the job.

    Docling can run for a very long time on some inputs (an HTML file of 100,000 nested ``<div>``
    takes hours before failing) and a backend's native code could crash or exhaust memory. Each
    conversion here runs in a child process (a new interpreter, talking over two pipes) and is
    given ``max_file_seconds``: past that, the child is killed and the file is
    a ``conversion_timeout`` failure; a child that dies while converting makes the file a
    ``conversion_failed`` failure. Either way the next file gets a new child. Build one per worker
    (``DoFn.setup``) and :meth:`close` it in ``teardown``.

    Args:
        max_file_seconds: Seconds one conversion may take (> 0).
        **converter_args: :class:`FileConverter`'s keyword arguments.

    Raises:
        ValueError: ``max_file_seconds`` is not a positive number, or a converter argument is bad.
        ImportError: Docling (or its PDF pipeline) cannot be imported in the child.
    """

    #: Seconds the child may take to import Docling and build its converter.
    START_SECONDS = 300.0

    def __init__(self, *, max_file_seconds: float = DEFAULT_MAX_FILE_SECONDS, **converter_args: Any) -> None:
        if (
            isinstance(max_file_seconds, bool)
            or not isinstance(max_file_seconds, (int, float))
            or not max_file_seconds > 0
        ):
            raise ValueError(f"max_file_seconds must be a positive number, got {max_file_seconds!r}")
        self.max_file_seconds = float(max_file_seconds)
        self._converter_args = converter_args
        self._checker = FileConverter.__new__(FileConverter)  # check() needs only these attributes
        FileConverter._check_args(self._checker, **converter_args)
        # The child (a ``subprocess.Popen``) and the two ends of its pipes (``Connection``s), once started.
        self._process: Any = None
        self._requests: Any = None
        self._connection: Any = None

    def check(self, path: str, size_bytes: int) -> tuple[str, str]:
        """:meth:`FileConverter.check`, in this process (no child needed to refuse a file)."""
        return self._checker.check(path, size_bytes)

    def start(self) -> None:
        """Start the child process now (else the first :meth:`convert` starts it).

        Raises:
            ImportError: Docling cannot be imported in the child (the install hint).
            RuntimeError: The child did not start.
        """
        if self._process is None or self._process.poll() is not None:
            self.close()
            self._start()

    def _start(self) -> None:
        import subprocess
        import sys
        from multiprocessing.connection import Connection

        # A fresh interpreter (not fork: the parent may hold gRPC and Arrow threads; not
        # multiprocessing's spawn: it would run the caller's __main__ module again).
        from_parent, to_child = os.pipe()  # (read end, write end)
        from_child, to_parent = os.pipe()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", f"from transforms.parsing import _serve; _serve({from_parent}, {to_parent})"],
                pass_fds=(from_parent, to_parent),
                env=env,
                stdin=subprocess.DEVNULL,
                close_fds=True,
            )
        finally:
            os.close(from_parent)
            os.close(to_parent)
        self._process = process
        self._requests = Connection(to_child, readable=False)
        self._connection = Connection(from_child, writable=False)
        try:
            self._requests.send(self._converter_args)
            if not self._connection.poll(self.START_SECONDS):
                raise RuntimeError(f"the Docling converter process did not start within {self.START_SECONDS:.0f} s")
            answer = self._connection.recv()
        except (EOFError, OSError):
            code = self._exit_code()
            self.close()
            raise RuntimeError(f"the Docling converter process exited while starting (exit code {code})") from None
        except RuntimeError:
            self.close()
            raise
        if answer[0] == "error":
            self.close()
            raise ImportError(answer[1])

    def _exit_code(self) -> int | None:
        try:
            return self._process.wait(5)
        except Exception:  # still running
            return None

    def convert(self, *, path: str, doc_id: str, data: bytes) -> dict[str, Any]:
        """:meth:`FileConverter.convert` in the child, within ``max_file_seconds``.

        Raises:
            ParseFailure: as :meth:`FileConverter.convert`, or ``conversion_timeout``, or
                ``conversion_failed`` when the child dies while converting.
        """
        self.check(path, len(data))
        self.start()
        try:
            self._requests.send({"path": path, "doc_id": doc_id, "data": data})
            if not self._connection.poll(self.max_file_seconds):
                self.close()
                raise ParseFailure(
                    "conversion_timeout",
                    f"Docling did not finish within {self.max_file_seconds:g} s (--max-file-seconds); stopped",
                )
            answer = self._connection.recv()
        except (EOFError, OSError):
            code = self._exit_code()
            self.close()
            raise ParseFailure(
                "conversion_failed", f"the Docling converter process died while converting (exit code {code})"
            ) from None
        if answer[0] == "ok":
            return answer[1]
        raise ParseFailure(answer[1], answer[2])

    def close(self) -> None:
        """Stop the child process (if any); the next :meth:`convert` starts a new one."""
        import subprocess

        process, requests, connection = self._process, self._requests, self._connection
        self._process = self._requests = self._connection = None
        if requests is not None:
            try:
                requests.send(None)
            except (OSError, ValueError):
                pass
            requests.close()
        if connection is not None:
            connection.close()
        if process is not None:
            try:
                process.wait(0.5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
