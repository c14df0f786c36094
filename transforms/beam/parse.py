"""The thin Beam layer of ``rechunk parse``: match raw files, convert each, write both outputs.

``ParseFiles`` matches a file pattern with Beam's ``fileio.MatchFiles`` (any Beam filesystem),
opens each match with ``fileio.ReadMatches`` and converts it: a text file (Markdown, text, reST,
HTML) in the worker itself (:func:`~transforms.parsing.text_row`), any other with a
:class:`ConverterProcess` (a ``FileConverter`` in a child process, each file bounded in time),
started once per worker at its first such file. Converted files are contract input rows
(``PARSED_SCHEMA``) on the main output; the rest are dead-letter rows
(``PARSE_DEAD_LETTER_SCHEMA``) on the ``dead_letter`` tagged output. Metrics (namespace
``rechunk_parse``) count files by format, documents by content format, dead-letter rows by
reason, and the microseconds spent converting each format.
"""

from __future__ import annotations

import time
from typing import Any

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.metrics import Metrics
from apache_beam.pvalue import TaggedOutput

from transforms.beam.outputs import DEAD_LETTER
from transforms.beam.write import WriteRows
from transforms.parsing import (
    DEFAULT_MAX_FILE_SECONDS,
    PARSE_DEAD_LETTER_SCHEMA,
    PARSED_SCHEMA,
    ConverterProcess,
    FileFormats,
    ParseFailure,
    document_id,
    pattern_base,
    text_row,
)

__all__ = ["PARSE_METRICS_NAMESPACE", "ParseFiles", "WriteParseDeadLetter", "WriteParsed"]

#: Namespace of the parse job's Beam metrics (read back into its report.json).
PARSE_METRICS_NAMESPACE = "rechunk_parse"


def _counter(name: str):
    return Metrics.counter(PARSE_METRICS_NAMESPACE, name)


_READ_BLOCK_BYTES = 8 * 1024 * 1024


def _read_at_most(readable: fileio.ReadableFile, max_file_bytes: int) -> bytes:
    """The file's bytes, reading no more than ``max_file_bytes + 1`` of them (a file may have grown
    since it was matched).

    Raises:
        ParseFailure: ``unreadable_file`` (it vanished, or any IO error), ``file_too_large``.
    """
    blocks, total = [], 0
    try:
        with readable.open(compression_type=CompressionTypes.UNCOMPRESSED) as f:
            # In blocks: read(n) allocates n bytes up front, and --max-file-bytes may be huge.
            while total <= max_file_bytes:
                block = f.read(min(_READ_BLOCK_BYTES, max_file_bytes + 1 - total))
                if not block:
                    break
                blocks.append(block)
                total += len(block)
    except Exception as err:  # an IO error of the filesystem, by scheme
        raise ParseFailure("unreadable_file", " ".join(f"{type(err).__name__}: {err}".split())[:300]) from None
    if total > max_file_bytes:
        raise ParseFailure(
            "file_too_large", f"more than {max_file_bytes:,} bytes when read (it grew after matching; --max-file-bytes)"
        )
    return b"".join(blocks)


class _ParseFile(beam.DoFn):
    """One ``fileio.ReadableFile`` into a parsed row, or a dead-letter row (tagged)."""

    def __init__(self, base: str, converter_args: dict[str, Any]) -> None:
        self._base = base
        self._converter_args = converter_args

    def setup(self) -> None:
        self._converter = ConverterProcess(**self._converter_args)
        self._formats = FileFormats(self._converter_args.get("format_for"))

    def teardown(self) -> None:
        self._converter.close()

    def process(self, readable: fileio.ReadableFile):
        path = readable.metadata.path
        size = readable.metadata.size_in_bytes
        doc_id = document_id(path, self._base)
        found = self._formats.of(path)
        fmt = found[0] if found else "other"
        _counter(f"files_by_format.{fmt}").inc()
        started = time.perf_counter()
        try:
            _, conversion = self._converter.check(path, size)
            data = _read_at_most(readable, self._converter_args["max_file_bytes"])
            if conversion == "text":
                row = text_row(path=path, doc_id=doc_id, data=data, fmt=fmt)
            else:
                starting = time.perf_counter()
                self._converter.start()  # Docling's import is not timed as this file's conversion
                started += time.perf_counter() - starting
                row = self._converter.convert(path=path, doc_id=doc_id, data=data)
        except ParseFailure as failure:
            _counter("files_dead_lettered").inc()
            _counter(f"dead_letter.{failure.reason}").inc()
            yield TaggedOutput(
                DEAD_LETTER,
                {
                    "document_id": doc_id,
                    "path": path,
                    "size_bytes": size,
                    "file_format": fmt,
                    "reason": failure.reason,
                    "detail": failure.detail,
                },
            )
            return
        finally:
            _counter(f"convert_us.{fmt}").inc(int((time.perf_counter() - started) * 1_000_000))
        _counter("files_parsed").inc()
        _counter(f"parsed_by_format.{fmt}").inc()
        _counter(f"parsed_by_content_format.{row['content_format']}").inc()
        _counter("bytes_parsed").inc(size)
        yield row


class ParseFiles(beam.PTransform):
    """Raw files matching ``file_pattern`` into contract input rows, with a dead letter.

    Output: a ``DoOutputsTuple`` whose main output holds ``PARSED_SCHEMA`` row dicts (``id`` is
    the path relative to :func:`~transforms.parsing.pattern_base` of the pattern) and whose
    ``dead_letter`` output holds ``PARSE_DEAD_LETTER_SCHEMA`` row dicts. Directories are skipped;
    a file over ``max_file_bytes`` is never read.

    Args:
        file_pattern: A file pattern on any Beam filesystem (absolute for local paths, so that
            ids do not depend on a worker's working directory).
        content_format: ``docling`` or ``markdown``: the content of the files Docling converts,
            and of PDFs (text files keep their own format).
        max_file_bytes: Larger files are dead-lettered as ``file_too_large``.
        max_file_seconds: A conversion still running after this many seconds is stopped (its
            converter process killed) and the file dead-lettered as ``conversion_timeout``.
        pdf_artifacts_path: Local folder of Docling's PDF models, or None (PDFs read from their
            text layer).
        format_for: Extension -> format overrides (:class:`~transforms.parsing.FileFormats`).
    """

    def __init__(
        self,
        file_pattern: str,
        *,
        content_format: str,
        max_file_bytes: int,
        max_file_seconds: float = DEFAULT_MAX_FILE_SECONDS,
        pdf_artifacts_path: str | None = None,
        format_for: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self._pattern = file_pattern
        self._converter_args = {
            "content_format": content_format,
            "max_file_bytes": max_file_bytes,
            "max_file_seconds": max_file_seconds,
            "pdf_artifacts_path": pdf_artifacts_path,
            "format_for": dict(format_for or {}),
        }

    def expand(self, pbegin):
        return (
            pbegin
            | "Match files" >> fileio.MatchFiles(self._pattern)
            | "Open files" >> fileio.ReadMatches()
            | "Convert files"
            >> beam.ParDo(_ParseFile(pattern_base(self._pattern), self._converter_args)).with_outputs(
                DEAD_LETTER, main="documents"
            )
        )


class WriteParsed(WriteRows):
    """Write parsed rows (``PARSED_SCHEMA``: the chunk job's input) as zstd Parquet files."""

    def __init__(self, file_path_prefix: str) -> None:
        super().__init__(file_path_prefix, PARSED_SCHEMA)


class WriteParseDeadLetter(WriteRows):
    """Write the parse dead letter (``PARSE_DEAD_LETTER_SCHEMA``) as zstd Parquet files."""

    def __init__(self, file_path_prefix: str) -> None:
        super().__init__(file_path_prefix, PARSE_DEAD_LETTER_SCHEMA)
