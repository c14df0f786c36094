"""Raw files into parsed documents with Docling: the Beam-free core of ``rechunk parse``.

A raw file (HTML, Markdown, DOCX, PPTX, XLSX; PDF where Docling's models are on disk) becomes one
row of the chunk job's input (``id``, ``content``, ``content_format``, ``metadata``, see
``docs/contract.md``), or a :class:`ParseFailure` with a reason code from
:data:`PARSE_REASONS`.

The offline formats go through Docling's ``SimplePipeline`` with the format's declarative backend,
the same pair Docling's ``DocumentConverter`` picks for them. ``DocumentConverter`` itself is not
imported for them: in docling-slim 2.143 its module imports torch (the audio pipeline's), so the
light install (the ``parse`` extra, no torch) could not load it. PDFs need the layout
models, which Docling would fetch from the Hugging Face Hub; here they are only ever read from a
local folder (``pdf_artifacts_path``), with ``HF_HUB_OFFLINE=1``, and a PDF without that folder is
a :class:`ParseFailure` that says what to install: never a download attempt.

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
    "PARSED_SCHEMA",
    "PARSE_DEAD_LETTER_SCHEMA",
    "PARSE_INSTALL_HINT",
    "PARSE_REASONS",
    "PDF_MODELS_HINT",
    "ConverterProcess",
    "FileConverter",
    "ParseFailure",
    "document_id",
    "file_format",
    "pattern_base",
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
    "docx": "docx",
    "pptx": "pptx",
    "xlsx": "xlsx",
    "xlsm": "xlsx",
    "pdf": "pdf",
}

#: ``content_format`` values ``rechunk parse`` writes.
OUTPUT_FORMATS = ("docling", "markdown")

#: Stable reason codes of the parse dead letter.
PARSE_REASONS = {
    "unsupported_file_format": "the file name's extension is not one of the formats rechunk parse converts",
    "file_too_large": "the file has more bytes than --max-file-bytes (it is not read)",
    "empty_file": "the file has no bytes",
    "encrypted_file": "the file is encrypted (password-protected Office file or PDF)",
    "pdf_models_missing": "a PDF, and no local Docling layout models (--pdf-artifacts-path) to convert it with",
    "conversion_failed": "Docling could not convert the file (corrupt, truncated, or not what its extension says)",
    "unreadable_file": "the file could not be read from its filesystem",
    "conversion_timeout": "Docling did not finish converting the file within --max-file-seconds (its converter process was stopped)",
}

PARSE_INSTALL_HINT = "rechunk parse needs Docling's converters: install the parse extra (in a clone: .venv/bin/pip install -e '.[parse]')"
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


class FileConverter:
    """Convert the bytes of one raw file into a contract input row with Docling.

    Build one per worker (``DoFn.setup``): it imports Docling and holds its pipelines.

    Args:
        content_format: ``docling`` (the DoclingDocument as JSON) or ``markdown`` (Docling's
            Markdown export) in the rows' ``content``.
        max_file_bytes: A larger file is a ``file_too_large`` failure.
        pdf_artifacts_path: A local folder holding Docling's PDF models (``docling-tools models
            download``); without it every PDF is a ``pdf_models_missing`` failure.

    Raises:
        ValueError: ``content_format`` or ``max_file_bytes`` out of range.
        ImportError: Docling is not installed (:data:`PARSE_INSTALL_HINT`), or
            ``pdf_artifacts_path`` is given and Docling's PDF pipeline cannot be imported.
    """

    def __init__(
        self,
        *,
        content_format: str = "docling",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        pdf_artifacts_path: str | None = None,
    ) -> None:
        self._check_args(
            content_format=content_format, max_file_bytes=max_file_bytes, pdf_artifacts_path=pdf_artifacts_path
        )
        os.environ["HF_HUB_OFFLINE"] = "1"  # before Docling imports huggingface_hub: never a download
        try:
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
    ) -> None:
        if content_format not in OUTPUT_FORMATS:
            raise ValueError(f"content_format must be one of {OUTPUT_FORMATS}, got {content_format!r}")
        if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int) or max_file_bytes <= 0:
            raise ValueError(f"max_file_bytes must be a positive integer, got {max_file_bytes!r}")
        self.content_format = content_format
        self.max_file_bytes = max_file_bytes
        self.pdf_artifacts_path = pdf_artifacts_path

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

    def check(self, path: str, size_bytes: int) -> str:
        """What can be known before reading: return the file format, or raise :class:`ParseFailure`."""
        fmt = file_format(path)
        if fmt is None:
            name = path.rsplit("/", 1)[-1]
            ext = name.rsplit(".", 1)[1] if "." in name else "(none)"
            raise ParseFailure(
                "unsupported_file_format",
                f"extension {ext!r} is not one of {', '.join(sorted(FILE_FORMATS))}",
            )
        if size_bytes > self.max_file_bytes:
            raise ParseFailure(
                "file_too_large", f"{size_bytes:,} bytes > max {self.max_file_bytes:,} (--max-file-bytes)"
            )
        if size_bytes == 0:
            raise ParseFailure("empty_file", "0 bytes")
        if fmt == "pdf" and not self.pdf_artifacts_path:
            raise ParseFailure("pdf_models_missing", PDF_MODELS_HINT)
        return fmt

    def convert(self, *, path: str, doc_id: str, data: bytes) -> dict[str, Any]:
        """Convert one file's bytes into a contract input row (``PARSED_SCHEMA``).

        ``metadata`` holds ``source_path`` (``path``), ``size_bytes`` and ``file_format``.

        Raises:
            ParseFailure: any reason of :data:`PARSE_REASONS` but ``unreadable_file``.
        """
        fmt = self.check(path, len(data))
        if fmt in ("docx", "pptx", "xlsx") and data.startswith(_CFB_MAGIC):
            raise ParseFailure(
                "encrypted_file",
                "an OLE compound file, not Office Open XML: a password-protected (encrypted) file, or a legacy .doc/.ppt/.xls renamed",
            )
        if fmt == "pdf" and b"/Encrypt" in data[-4096:]:
            raise ParseFailure("encrypted_file", "the PDF's trailer has an /Encrypt dictionary")
        name = path.rsplit("/", 1)[-1]
        document = self._convert_pdf(name, data) if fmt == "pdf" else self._convert_simple(fmt, name, data)
        if self.content_format == "docling":
            content = json.dumps(document.export_to_dict(), ensure_ascii=False, separators=(",", ":"))
        else:
            content = document.export_to_markdown()
        metadata = {"source_path": path, "size_bytes": len(data), "file_format": fmt}
        return {
            "id": doc_id,
            "content": content,
            "content_format": self.content_format,
            "metadata": json.dumps(metadata, sort_keys=True, ensure_ascii=False),
        }

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

    def check(self, path: str, size_bytes: int) -> str:
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
