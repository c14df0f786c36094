"""The thin Beam layer: PTransforms that read, admit, chunk, validate and write.

Nothing here knows how a chunker works. Each DoFn converts its element, calls the Beam-free core
(``transforms.chunkers``, ``transforms.validation``) and emits typed records: good records on the
main output, rejected ones as :class:`~transforms.documents.DeadLetter` on the ``dead_letter``
tagged output, each counted by a Beam metric (namespace ``rechunk``). Heavy objects (tokenizers,
chunkers) are built in ``DoFn.setup()`` from plain specs; the tokenizer identity arrives as a
singleton side input and every worker checks its own tokenizer against it.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import pickle
from collections.abc import Iterator, Mapping
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io import filebasedsink, fileio, iobase
from apache_beam.io.fileio import EmptyMatchTreatment
from apache_beam.io.filesystem import CompressionTypes, FileMetadata
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import ReadFromParquetBatched
from apache_beam.metrics import Metrics
from apache_beam.pvalue import AsDict, AsList, AsSingleton, TaggedOutput
from apache_beam.transforms.util import ReshufflePerKey
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from transforms.chunkers.base import ChunkingError
from transforms.chunkers.registry import build_router
from transforms.documents import (
    CHUNK_SCHEMA,
    CONTENT_FORMATS,
    DEAD_LETTER_SCHEMA,
    DOCUMENT_COLUMNS,
    Chunk,
    DeadLetter,
    Document,
    dumps_metadata,
    escape_bytes,
)
from transforms.incremental import (
    DELETED_SCHEMA,
    MANIFEST_SCHEMA,
    id_key,
    manifest_row,
    previous_files,
    stale_chunk_ids,
    unchanged_key,
)
from transforms.progress import shared_progress
from transforms.tokenizers import Tokenizer, load_tokenizer
from transforms.validation import DocumentValidator

__all__ = [
    "DEAD_LETTER",
    "KEPT_CHUNKS",
    "KEPT_MANIFEST",
    "MANIFEST",
    "METRICS_NAMESPACE",
    "PREVIOUS_IDS",
    "AdmitDocuments",
    "ChunkDocuments",
    "CompareWithPrevious",
    "ListDeleted",
    "ReadDocumentIds",
    "ReadDocuments",
    "ReadParquetRows",
    "WriteChunks",
    "WriteDeadLetter",
    "WriteDeleted",
    "WriteKeptChunks",
    "WriteManifest",
]

#: The tag of every transform's dead-letter output.
DEAD_LETTER = "dead_letter"
#: The tag of the manifest rows (``documents/``) of documents whose chunks were all accepted.
MANIFEST = "documents"
#: Namespace of the job's Beam metrics (read back into report.json).
METRICS_NAMESPACE = "rechunk"

#: A document's metadata (with extra columns) is copied into each of its chunks, so it is capped.
MAX_METADATA_BYTES = 64 * 1024
#: Deeper metadata is rejected (it would also break pickling between workers).
MAX_METADATA_DEPTH = 32
_INT32_MAX = 2**31 - 1


class ArrowTableCoder(beam.coders.Coder):
    """pyarrow Tables as Arrow IPC streams, with a size estimate that encodes nothing.

    Beam samples the size of elements on every edge between transforms (always the first ten,
    then about ten per doubling); with its default coder that pickles each sampled table whole
    (150 MB per pass over a run's chunk tables). This coder's estimate is the table's buffer
    size (``Table.nbytes``). Registered for ``pyarrow.Table``, it is used wherever a
    PCollection is typed so (``.with_output_types(pa.Table)``); its encoding is used only where
    a runner moves tables between workers or stages.
    """

    def encode(self, table: pa.Table) -> bytes:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue().to_pybytes()

    def decode(self, encoded: bytes) -> pa.Table:
        return pa.ipc.open_stream(encoded).read_all()

    def estimate_size(self, table: pa.Table) -> int:
        return table.nbytes

    def is_deterministic(self) -> bool:
        return False

    def to_type_hint(self):
        return pa.Table


beam.coders.registry.register_coder(pa.Table, ArrowTableCoder)


class DocumentCoder(beam.coders.Coder):
    """:class:`Document` records pickled, with a size estimate that encodes nothing.

    Without it, a Document edge has Beam's default coder, whose size estimate pickles each
    sampled element whole: for a 50 MB document, a pickle of the whole content (and the
    pickler's growing buffer, left resident by the allocator) between admission and chunking
    (+48 MiB RSS for a 50 M-character Markdown document held at 4 bytes a character).
    This coder's estimate is the content's length in code points plus the id's. Registered for
    ``Document``, it is used where a PCollection is typed so (:func:`_typed_main_output`).
    """

    def encode(self, document: Document) -> bytes:
        return pickle.dumps(document, protocol=pickle.HIGHEST_PROTOCOL)

    def decode(self, encoded: bytes) -> Document:
        return pickle.loads(encoded)

    def estimate_size(self, document: Document) -> int:
        return len(document.content) + len(document.id)

    def is_deterministic(self) -> bool:
        return False

    def to_type_hint(self):
        return Document


beam.coders.registry.register_coder(Document, DocumentCoder)


def _typed_main_output(outputs, main: str, element_type: type):
    """``outputs`` (a ParDo's ``with_outputs``) with its ``main`` output typed ``element_type``,
    so that edge has the coder registered for the type (``DocumentCoder``, ``ArrowTableCoder``).

    The type goes on the PCollection, not on the ParDo (``.with_output_types``): Beam 2.77's
    runtime type checks (``--runtime_type_check``, ``--performance_runtime_type_check``) check
    every tagged output against a ParDo's main output hint, so a hinted ParDo failed the job on
    its first dead-letter row.
    """
    getattr(outputs, main).element_type = element_type
    return outputs


def _counter(name: str):
    return Metrics.counter(METRICS_NAMESPACE, name)


@functools.lru_cache(maxsize=4)
def _shared_tokenizer(spec: str) -> Tokenizer:
    """One tokenizer per spec per worker process, shared by the DoFns that need it."""
    return load_tokenizer(spec)


class _DeadLetterCounter:
    """Counts dead-letter rows by reason (and rejected documents), then tags the row."""

    def __init__(self) -> None:
        self._documents = _counter("documents_dead_lettered")

    def document(self, row: DeadLetter) -> TaggedOutput:
        """A row that rejects its whole document."""
        self._documents.inc()
        return self.row(row)

    def count_document(self) -> None:
        """Count a document as dead-lettered whose rows were tagged with :meth:`row`."""
        self._documents.inc()

    def row(self, row: DeadLetter) -> TaggedOutput:
        """A row that rejects one chunk."""
        _counter(f"dead_letter.{row.reason}").inc()
        return TaggedOutput(DEAD_LETTER, row)


# ----------------------------------------------------------------------------------------------
# Read
# ----------------------------------------------------------------------------------------------


class ReadDocuments(beam.PTransform):
    """Read document rows from Parquet files, one row group at a time (:class:`ReadParquetRows`).

    Output: one ``dict`` per row, with columns renamed by ``column_map`` (``{"content": "text"}``
    reads the ``text`` column as ``content``). A string value that is not valid UTF-8 stays
    ``bytes`` (admission dead-letters its row).

    Args:
        file_pattern: A file pattern on any Beam filesystem.
        column_map: Contract column name -> the input's column name.

    Raises:
        IOError: When the pipeline is built, if ``file_pattern`` matches no file (as Beam's
            ``ReadFromParquet``).
    """

    def __init__(self, file_pattern: str, *, column_map: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self._file_pattern = file_pattern
        self._rename = {source: target for target, source in (column_map or {}).items()}

    def expand(self, pbegin):
        return pbegin | "Read Parquet" >> ReadParquetRows(self._file_pattern, rename=self._rename)


class ReadDocumentIds(beam.PTransform):
    """Read only the id column of document Parquet files: ``{"id": value}`` per row.

    A second, cheap read of the input for the duplicate-id count, so that the whole rows stream
    through admission instead of waiting, all of them, for the count.

    Args:
        file_pattern: A file pattern on any Beam filesystem.
        column_map: Contract column name -> the input's column name (only ``id`` is used).

    Raises:
        IOError: When the pipeline is built, if ``file_pattern`` matches no file.
    """

    def __init__(self, file_pattern: str, *, column_map: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self._file_pattern = file_pattern
        self._source = (column_map or {}).get("id", "id")

    def expand(self, pbegin):
        return pbegin | "Read Parquet" >> ReadParquetRows(
            self._file_pattern, columns=[self._source], rename={self._source: "id"}
        )


class ReadParquetRows(beam.PTransform):
    """Rows of Parquet files as dicts, read a row group at a time and not held while processed.

    Beam's ``fileio.MatchFiles`` lists the files (any Beam filesystem). A DoFn reads each file's
    footer and cuts the file into byte ranges as Beam's Parquet source does (its split size,
    ``iobase.Read.get_desired_chunk_size`` of the file's size, where Beam takes all files'
    together: 1 MiB, or 1,000 times the square root of the size in bytes when larger), each range
    holding the row groups that start in it:
    one ``(path, first row group, stop row group)`` per range that holds any, in file order. A
    ``ReshufflePerKey`` keyed by these spreads them over workers, and a DoFn reads each range's
    row groups one at a time with pyarrow (``ParquetFile.read_row_group``), converts one to
    Python values (:func:`_table_columns`), drops the Arrow table and hands Arrow's unused memory
    back before it yields the row group's first row. (Beam's ``ReadFromParquetBatched`` keeps
    the table in its reader's frame while the rows are processed downstream in the same fused
    stage: for a row group holding one 50 MB document, 50 MB of Arrow data and the pool's pages,
    +157 MiB RSS measured, held while the document is chunked.)

    A row's values are released as the row is yielded: the DoFn holds only the rows of its row
    group not yet processed. Rows come in file order within a range; ranges come in the runner's
    order. A file of 0 bytes holds no rows (as with Beam's file sources); a file with no row
    group, or empty ones, gives no rows.

    Args:
        file_pattern: A file pattern on any Beam filesystem.
        columns: Read only these columns (``None``: all).
        rename: Input column name -> output name; an output name that is also an input column's
            name drops that column (the mapped one wins).

    Raises:
        IOError: When the pipeline is built, if ``file_pattern`` matches no file (as Beam's
            file sources with ``validate=True``). A file removed before the running job lists the
            files gives no rows; one removed after that fails the job (as with Beam's reader).
    """

    def __init__(
        self, file_pattern: str, *, columns: list[str] | None = None, rename: Mapping[str, str] | None = None
    ) -> None:
        super().__init__()
        self._file_pattern = file_pattern
        self._columns = None if columns is None else list(columns)
        self._rename = dict(rename or {})

    def expand(self, pbegin):
        # As Beam's FileBasedSource(validate=True): fail when the pipeline is built, not mid-run.
        if not FileSystems.match([self._file_pattern], limits=[1])[0].metadata_list:
            raise OSError(f"No files found based on the file pattern {self._file_pattern}")
        return (
            pbegin
            | "Match files" >> fileio.MatchFiles(self._file_pattern, EmptyMatchTreatment.ALLOW)
            | "Row group ranges" >> beam.ParDo(_RowGroupRangesDoFn())
            # Keyed by the range itself, not by Beam's random keys: the same spread on every run
            # (the FnApiRunner deals keys to its workers in turn; ranges of about equal bytes, as
            # Beam's splits, so that dealing them in turn balances the workers).
            | "Key ranges" >> beam.Map(lambda row_groups: (row_groups, None))
            | "Spread ranges" >> ReshufflePerKey()
            | "Range" >> beam.Keys()
            | "Read row groups" >> beam.ParDo(_ReadRowGroupsDoFn(self._columns, self._rename))
        )


def _open_parquet(path: str):
    """The file as Beam's Parquet source opens it (``FileBasedSource.open_file``), through Beam's
    filesystems (with their own read buffers, e.g. GCS's)."""
    return FileSystems.open(path, "application/octet-stream", compression_type=CompressionTypes.AUTO)


class _RowGroupRangesDoFn(beam.DoFn):
    """``(path, start, stop)``: the row groups ``start <= i < stop`` of one matched file that start
    in one byte range of Beam's split size, for each such range, in file order."""

    def process(self, metadata: FileMetadata) -> Iterator[tuple[str, int, int]]:
        offsets: list[int] = []
        if metadata.size_in_bytes > 0:  # as Beam's file sources: a file of 0 bytes holds no rows
            with _open_parquet(metadata.path) as f, pq.ParquetFile(f) as parquet:
                offsets = [
                    _row_group_offset(parquet.metadata.row_group(i)) for i in range(parquet.metadata.num_row_groups)
                ]
        chunk = iobase.Read.get_desired_chunk_size(metadata.size_in_bytes)
        start = 0
        for index in range(1, len(offsets) + 1):
            if index == len(offsets) or offsets[index] // chunk != offsets[start] // chunk:
                yield metadata.path, start, index
                start = index


def _row_group_offset(row_group: pq.RowGroupMetaData) -> int:
    """Where a row group starts in its file (as Beam's ``_ParquetUtils.get_offset``); 0 for a row
    group of no column (a file of no column: it holds no data)."""
    if row_group.num_columns == 0:
        return 0
    first = row_group.column(0)
    return first.dictionary_page_offset if first.has_dictionary_page else first.data_page_offset


class _ReadRowGroupsDoFn(beam.DoFn):
    """Rows of a range of row groups (see :class:`ReadParquetRows`)."""

    def __init__(self, columns: list[str] | None, rename: Mapping[str, str]) -> None:
        self._columns = columns
        self._rename = rename

    def process(self, row_groups: tuple[str, int, int]) -> Iterator[dict[str, Any]]:
        path, start, stop = row_groups
        # The footer is parsed once per range: parsing it again for each row group made a file
        # of n row groups cost n footers of n row groups each (8,000 row groups of one row:
        # 145 s; about 1 s now).
        with _open_parquet(path) as f, pq.ParquetFile(f) as parquet:
            footer = parquet.metadata
        for index in range(start, stop):
            columns, num_rows = _read_row_group(path, footer, index, self._columns, self._rename)
            yield from _release_rows(columns, num_rows)
            del columns


def _read_row_group(
    path: str, footer: pq.FileMetaData, index: int, columns: list[str] | None, rename: Mapping[str, str]
) -> tuple[dict[str, list[Any]], int]:
    """One row group's columns as Python values (renamed), and its row count; nothing of Arrow's
    is referenced when this returns, and the pool's unused memory is handed back. The file is
    open only while the row group is read (``footer``, its parsed footer, is not read again)."""
    with _open_parquet(path) as f, pq.ParquetFile(f, metadata=footer) as parquet:
        # One thread: with Arrow's thread pool some of the read's buffers (3 times a 5 MB
        # column, measured) are freed by pool threads after the table is returned, so they were
        # still allocated when the rows were handed on. Decoding is about 0.1 s of CPU for all
        # of docs.parquet either way.
        table = parquet.read_row_group(index, columns=columns, use_threads=False)
    # Arrow's pool (mimalloc) keeps freed buffers resident: hand back the read's (the compressed
    # and decompressed pages, 2 times the table for one 50 MB document) before the Python
    # values are made, and the table's and the conversions' casts before the rows go on.
    pool = pa.default_memory_pool()
    pool.release_unused()
    num_rows = table.num_rows
    values = _table_columns(table, rename)
    del table
    pool.release_unused()
    return values, num_rows


def _release_rows(columns: dict[str, list[Any]], num_rows: int) -> Iterator[dict[str, Any]]:
    """Rows of ``columns`` as dicts; each row's values are dropped from ``columns`` as it is
    yielded, so a processed row (a document already chunked downstream) is not held."""
    names = list(columns)
    for i in range(num_rows):
        row = {}
        for name in names:
            values = columns[name]
            row[name] = values[i]
            values[i] = None
        yield row


def _table_columns(table: pa.Table, rename: Mapping[str, str]) -> dict[str, list[Any]]:
    """Columns of one table as Python lists, renamed; a value that is not valid UTF-8 stays bytes.

    A string column whose values are not all valid UTF-8 is decoded value by value, so one bad
    value becomes a dead-letter row (``invalid_content`` ...) instead of failing the whole
    batch, as ``Table.to_pylist`` would. A contract-named column replaced by a mapped one is
    dropped. See :func:`_column_values`.
    """
    shadowed = set(rename.values())
    columns: dict[str, list[Any]] = {}
    for name, column in zip(table.column_names, table.columns):
        if name in shadowed and name not in rename:
            continue
        columns[rename.get(name, name)] = _column_values(column)
    return columns


def _is_text_type(arrow_type: pa.DataType) -> bool:
    return (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(arrow_type))
    )


class Unreadable:
    """A Parquet value Python cannot hold (a timestamp past year 9999, invalid UTF-8 in a list).

    Admission turns it into the dead-letter reason of the column it is in.
    """

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem

    def __repr__(self) -> str:
        return f"Unreadable({self.problem!r})"


def _column_values(column: pa.ChunkedArray) -> list[Any]:
    """Python values of one column; a value that cannot be converted never fails the batch.

    Text columns (plain, large, view) convert whole; when a value is not valid UTF-8, they are
    read as binary and decoded per value (as dictionary-encoded ones always are): invalid UTF-8
    stays ``bytes``. Other columns convert whole, or value by value when the
    whole fails, with :class:`Unreadable` where a value cannot be converted.
    """
    if pa.types.is_dictionary(column.type) and _is_text_type(column.type.value_type):
        column = pa.chunked_array(
            [c.dictionary.cast(pa.large_binary()).take(c.indices) for c in column.chunks],
            type=pa.large_binary(),
        )
    elif _is_text_type(column.type):
        try:
            # Strings straight from the Arrow buffers: no bytes object of each value on the way
            # (for a 50 MB document that was 50 MB more at the read's peak).
            return column.to_pylist()
        except UnicodeDecodeError:  # a value is not UTF-8: decode value by value below
            column = column.cast(pa.large_binary())  # a cast to binary does not validate UTF-8
    else:
        try:
            return column.to_pylist()
        except Exception:  # OverflowError, UnicodeDecodeError, ... from one value
            return [_scalar_value(column, i) for i in range(len(column))]
    values: list[Any] = []
    for raw in column.to_pylist():
        try:
            values.append(raw if raw is None else raw.decode("utf-8"))
        except UnicodeDecodeError:
            values.append(raw)
    return values


def _scalar_value(column: pa.ChunkedArray, index: int) -> Any:
    try:
        return column[index].as_py()
    except Exception as err:
        return Unreadable(f"{type(err).__name__}: {' '.join(str(err).split())[:80]}")


# ----------------------------------------------------------------------------------------------
# Admit
# ----------------------------------------------------------------------------------------------


def _as_text(value: Any) -> tuple[str | None, str | None]:
    """``(text, problem)``: a string, UTF-8 bytes decoded, or ``None``; else a problem to report."""
    if value is None or isinstance(value, str):
        return value, None
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8"), None
        except UnicodeDecodeError as err:
            return None, f"bytes that are not UTF-8 (at byte {err.start})"
    if isinstance(value, Unreadable):
        return None, f"unreadable ({value.problem})"
    return None, f"a {type(value).__name__}, not a string"


def _document_id(raw: Any) -> tuple[str | None, str | None]:
    """A row's id as text (integers written in decimal), or the problem with it.

    An id holding NUL is refused: the chunk id joins its parts with NUL, so such ids could make
    two different chunks share one chunk id.
    """
    if isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw), None
    text, problem = _as_text(raw)
    if text is not None and "\x00" in text:
        return text, "a string holding NUL (U+0000)"
    return text, problem


def _json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data: non-finite floats become ``None``; bytes become their UTF-8
    text, or ``"base64:..."`` when they are not UTF-8; timestamps, decimals and the like their text.

    Raises:
        ValueError: Nested deeper than :data:`MAX_METADATA_DEPTH`, a string with a lone surrogate
            (not encodable as UTF-8), or an unreadable value.
    """
    if depth > MAX_METADATA_DEPTH:
        raise ValueError(f"nested deeper than {MAX_METADATA_DEPTH} levels")
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        value.encode("utf-8")  # UnicodeEncodeError (a ValueError) on a lone surrogate
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (bytes, bytearray)):
        text, _ = _as_text(value)
        return text if text is not None else "base64:" + base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Unreadable):
        raise ValueError(f"a value is unreadable ({value.problem})")
    if isinstance(value, Mapping):
        return {_json_safe(str(k), depth + 1): _json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v, depth + 1) for v in value]
    return str(value)  # timestamps, decimals, ...: their text


def _metadata_object(value: Any) -> Mapping[str, Any] | None:
    """The object a ``metadata`` value of a struct column (a dict) or a map column (a list of
    ``(key, value)`` tuples: keys become their text, the last of equal keys wins) holds; ``None``
    for any other value."""
    if isinstance(value, Mapping):
        return value
    if isinstance(value, list) and all(isinstance(item, tuple) and len(item) == 2 for item in value):
        return {str(key): item for key, item in value}
    return None


def _row_to_document(
    row: Mapping[str, Any], duplicates: Mapping[str, int], tokenizer: str, max_document_chars: int | None = None
):
    """Return a Document, or a DeadLetter (stage ``read``) saying why the row is not one.

    ``max_document_chars`` (code points) rejects longer content as ``document_too_large``.
    """
    raw_id = row.get("id")
    doc_id, id_problem = _document_id(raw_id)
    content, content_problem = _as_text(row.get("content"))
    raw_content = row.get("content")
    if content is not None:
        payload = content
    elif isinstance(raw_content, (bytes, bytearray)):
        payload = escape_bytes(bytes(raw_content))  # readable, and unescape_payload gives the bytes back
    else:
        payload = None if raw_content is None else str(raw_content)

    def reject(reason: str, detail: str, stage: str = "read") -> DeadLetter:
        return DeadLetter(doc_id, stage, reason, detail, payload, tokenizer)

    if id_problem:
        return reject("invalid_document_id", f"id is {id_problem}: {str(raw_id)[:80]}")
    if not doc_id or not doc_id.strip():
        return reject("missing_document_id", "the row's id is null, empty or whitespace only")
    if doc_id in duplicates:
        return reject("duplicate_document_id", f"{duplicates[doc_id]} rows have id {doc_id!r}")
    if content_problem:
        return reject("invalid_content", f"content is {content_problem}")
    if content is None:
        return reject("null_content", "content is null")
    if max_document_chars is not None and len(content) > max_document_chars:
        return reject(
            "document_too_large",
            f"content is {len(content)} characters > max {max_document_chars} (--max-document-chars)",
        )
    fmt, fmt_problem = _as_text(row.get("content_format"))
    fmt = (fmt or "text").strip().lower() or "text"
    if fmt_problem or fmt not in CONTENT_FORMATS:
        shown = row.get("content_format")
        return reject(
            "unsupported_content_format",
            f"content_format {str(shown)[:40]!r} is not one of {sorted(CONTENT_FORMATS)}",
            "route",
        )
    try:
        metadata = {}
        for key, value in sorted(row.items()):
            if key not in DOCUMENT_COLUMNS:
                try:
                    metadata[key] = _json_safe(value)
                except (ValueError, RecursionError) as err:
                    raise ValueError(f"column {key!r}: {err}") from None
        raw_meta, meta_problem = _as_text(row.get("metadata"))
        structured = _metadata_object(row.get("metadata"))
        if structured is not None:
            metadata.update(_json_safe(structured))
        elif meta_problem:
            raise ValueError(f"the metadata column is {meta_problem}")
        elif raw_meta not in (None, ""):
            try:
                parsed = json.loads(raw_meta)
            except (ValueError, RecursionError):
                raise ValueError(f"metadata is not JSON: {raw_meta[:80]!r}") from None
            if not isinstance(parsed, dict):
                raise ValueError(f"metadata is not a JSON object: {raw_meta[:80]!r}")
            metadata.update(_json_safe(parsed))
        metadata_bytes = len(dumps_metadata(metadata).encode("utf-8"))
    except (ValueError, RecursionError) as err:
        return reject("invalid_metadata", " ".join(str(err).split())[:200])
    if metadata_bytes > MAX_METADATA_BYTES:
        return reject(
            "invalid_metadata",
            f"metadata and extra columns are {metadata_bytes} bytes of JSON > max {MAX_METADATA_BYTES} "
            "(they are copied into every chunk)",
        )
    if not content or content.isspace():  # (not content.strip(), without a copy of the document)
        return reject("empty_document", f"content is empty or whitespace only ({len(content)} characters)")
    return Document(id=doc_id, content=content, content_format=fmt, metadata=metadata)


class _AdmitDoFn(beam.DoFn):
    def __init__(self, max_document_chars: int | None) -> None:
        self._max_document_chars = max_document_chars
        self._read = _counter("documents_read")
        self._dead = _DeadLetterCounter()

    def process(self, row, duplicates, tokenizer_identity):
        self._read.inc()
        result = _row_to_document(row, duplicates, tokenizer_identity, self._max_document_chars)
        if isinstance(result, DeadLetter):
            yield self._dead.document(result)
        else:
            yield result


class AdmitDocuments(beam.PTransform):
    """Turn rows into :class:`Document` records; reject what can be known before chunking.

    Rejected (stage ``read``): ``invalid_document_id``, ``missing_document_id``,
    ``duplicate_document_id`` (every row of an id that occurs more than once, found by a keyed
    count over ids only), ``invalid_content``, ``null_content``, ``invalid_metadata`` (not a JSON
    object, deeper than :data:`MAX_METADATA_DEPTH`, or over :data:`MAX_METADATA_BYTES` of JSON),
    ``empty_document``, ``document_too_large`` (content longer than ``max_document_chars``
    code points); (stage ``route``) ``unsupported_content_format``. Integer ids are written
    in decimal. Columns other than the contract's four go into metadata as plain JSON (timestamps
    and decimals as text, NaN and infinities as null), and the ``metadata`` object's keys override
    them.

    Output: ``documents`` (Document) and ``dead_letter`` (DeadLetter).

    Args:
        tokenizer_identity: Singleton PCollection of the job's tokenizer identity (for dead-letter rows).
        ids: The same rows' ids alone (``{"id": value}`` dicts, e.g. from :class:`ReadDocumentIds`),
            counted for duplicates. Counting them from ``rows`` instead would make a runner hold
            every whole row until the count is done (memory that grows with the corpus).
        max_document_chars: Longer content (in code points) is rejected; ``None`` for no limit.
    """

    def __init__(self, tokenizer_identity, *, ids=None, max_document_chars: int | None = None) -> None:
        super().__init__()
        self._identity = tokenizer_identity
        self._ids = ids
        self._max_document_chars = max_document_chars

    def expand(self, rows):
        duplicates = (
            (rows if self._ids is None else self._ids)
            | "Document ids" >> beam.FlatMap(lambda row: [i] if (i := _document_id(row.get("id"))[0]) else [])
            | "Count ids" >> beam.combiners.Count.PerElement()
            | "Duplicate ids" >> beam.Filter(lambda kv: kv[1] > 1)
        )
        admitted = rows | "Admit" >> beam.ParDo(
            _AdmitDoFn(self._max_document_chars), AsDict(duplicates), AsSingleton(self._identity)
        ).with_outputs(DEAD_LETTER, main="documents")
        return _typed_main_output(admitted, "documents", Document)


# ----------------------------------------------------------------------------------------------
# Route, chunk and validate
# ----------------------------------------------------------------------------------------------


class _ModelUsage:
    """Beam counters ``model.calls`` and ``model.cache_hits``: what the router's models did since last time."""

    def __init__(self, router) -> None:
        self._models = list(getattr(router, "models", {}).values())
        self._seen = (0, 0)

    def report(self) -> None:
        if not self._models:
            return
        now = (
            sum(getattr(m, "calls", 0) for m in self._models),
            sum(getattr(m, "cache_hits", 0) for m in self._models),
        )
        for name, before, after in zip(("model.calls", "model.cache_hits"), self._seen, now):
            if after > before:
                _counter(name).inc(after - before)
        self._seen = now


#: Counters kept from each document's structure validation (``ChunkValidation`` fields).
STRUCTURE_COUNTERS = (
    "merged_chunks",
    "split_chunks",
    "oversized_chunks",
    "small_chunks",
    "excluded_characters",
)

#: A document's output rows are held back until its last chunk is validated while they stay under
#: this many characters (of all their strings), so that an error at a later chunk still rejects
#: the whole document with nothing written. Past it (a document of about 1.5 M characters or
#: more) they stream to the writers as they are validated: a document's chunks are never all held.
MAX_HELD_CHARS = 4 * 1024 * 1024


def _row_chars(row: Mapping[str, Any]) -> int:
    return sum(len(v) for v in row.values() if isinstance(v, str))


class _ChunkDoFn(beam.DoFn):
    """Route, chunk and validate one document, a chunk at a time (see :class:`ChunkDocuments`)."""

    def __init__(self, spec: Mapping[str, Any], progress_seconds: float = 0) -> None:
        self._spec = dict(spec)
        self._progress_seconds = progress_seconds
        self._max_tokens = spec["max_tokens"]
        self._dead = _DeadLetterCounter()
        self._chunked = _counter("documents_chunked")
        self._partial = _counter("documents_partially_rejected")
        self._written = _counter("chunks_written")
        self._rejected = _counter("chunks_rejected")

    def setup(self) -> None:
        self._progress = shared_progress(self._progress_seconds)
        self._tokenizer = _shared_tokenizer(self._spec["tokenizer"])
        # Models (``models:``) are built here too: once per worker, shared by the chunkers.
        self._router = build_router(self._spec, tokenizer=self._tokenizer)
        self._model_usage = _ModelUsage(self._router)
        # Structure chunkers' own limits, by configuration hash (what each chunk names).
        self._limits = {
            chunker.config_hash: {
                "max_overlap_tokens": chunker.max_overlap_tokens,
                "min_preferred_tokens": chunker.min_preferred_tokens,
            }
            for chunker in self._router.chunkers.values()
            if hasattr(chunker, "min_preferred_tokens")
        }

    def process(self, document: Document, tokenizer_identity: str):
        try:
            yield from self._chunk(document, tokenizer_identity)
        finally:
            self._model_usage.report()

    def _chunk(self, document: Document, tokenizer_identity: str):
        def reject(stage: str, reason: str, detail: str, chunker: str | None):
            return self._dead.document(
                DeadLetter(document.id, stage, reason, detail, document.content, tokenizer_identity, chunker=chunker)
            )

        def chunker_failure(err: Exception) -> tuple[str, str, str]:
            if isinstance(err, ChunkingError):
                return ("route" if err.reason == "unsupported_content_format" else "chunk"), err.reason, err.detail
            # a bug or an input the chunker cannot take: never fail the job
            return "chunk", "chunker_error", f"{type(err).__name__}: {' '.join(str(err).split())[:300]}"

        try:
            _, chunker = self._router.select(document)
        except ChunkingError as err:
            yield reject("route", err.reason, err.detail, None)
            return
        try:
            chunks, source = chunker.stream_with_source(document, tokenizer_identity=self._tokenizer.identity)
        except Exception as err:
            yield reject(*chunker_failure(err), chunker.name)
            return
        validator = DocumentValidator(
            document,
            tokenizer=self._tokenizer,
            tokenizer_identity=tokenizer_identity,
            max_tokens=self._max_tokens,
            source=None if source is document.content else source,
            structure_limits=self._limits.get(chunker.config_hash),
        )
        # Outputs not yet emitted: chunk rows (dicts) and rejected chunks (DeadLetter).
        held: list[Any] = []
        held_chars = 0
        streaming = False  # some outputs have been emitted already
        accepted = rejected = emitted_accepted = emitted_rejected = 0
        first: Chunk | None = None
        fallback = False
        failure: tuple[str, str, str] | None = None  # (stage, reason, detail) rejecting the document
        iterator = iter(chunks)
        while True:
            try:
                chunk = next(iterator)
            except StopIteration:
                break
            except Exception as err:
                failure = chunker_failure(err)
                break
            if first is None:
                first = chunk
            fallback = fallback or "model_fallback" in chunk.metadata
            try:
                ok, row = validator.check(chunk)
                output = _writable(ok) if ok is not None else row
            except Exception as err:  # the tokenizer or the chunk's data failed: never fail the job
                detail = f"{type(err).__name__}: {' '.join(str(err).split())[:300]}"
                failure = ("validate", "chunker_error", f"validation failed: {detail}")
                # As when chunking came first: a chunker error at a later chunk decides the reason.
                try:
                    for chunk in iterator:
                        fallback = fallback or "model_fallback" in chunk.metadata
                except Exception as chunker_err:
                    failure = chunker_failure(chunker_err)
                break
            del chunk, ok, row
            if isinstance(output, DeadLetter):
                rejected += 1
                held_chars += len(output.payload or "")
            else:
                accepted += 1
                held_chars += _row_chars(output)
            held.append(output)
            if held_chars > MAX_HELD_CHARS:
                streaming = True
            if streaming:
                for output in held:
                    if isinstance(output, DeadLetter):
                        emitted_rejected += 1
                        yield self._dead.row(output)
                    else:
                        emitted_accepted += 1
                        yield output
                held.clear()
                held_chars = 0
            output = None
        if failure is None and first is None:
            failure = ("chunk", "empty_document", f"{chunker.name} found no text to chunk")
        if failure is None:
            if fallback:
                _counter("model.fallbacks").inc()
            try:
                document_rows, structure = validator.finish()
            except Exception as err:
                detail = f"{type(err).__name__}: {' '.join(str(err).split())[:300]}"
                failure = ("validate", "chunker_error", f"validation failed: {detail}")
        if failure is not None:
            if fallback and failure[0] == "validate":
                _counter("model.fallbacks").inc()
            # The rows already emitted (a huge document past MAX_HELD_CHARS) stay written.
            self._written.inc(emitted_accepted)
            self._rejected.inc(emitted_rejected)
            yield reject(failure[0], failure[1], failure[2], chunker.name)
            return
        for output in held:
            yield self._dead.row(output) if isinstance(output, DeadLetter) else output
        held.clear()
        rejected += len(document_rows)
        for row in document_rows:
            yield self._dead.row(row)
        if structure is not None:
            for name in STRUCTURE_COUNTERS:
                _counter(f"structure.{name}").inc(getattr(structure, name))
        self._written.inc(accepted)
        self._rejected.inc(rejected)
        self._progress.add(documents=1, chunks=accepted)
        if not accepted:
            self._dead.count_document()  # none of its chunks passed: the document counts once
            return
        self._chunked.inc()
        _counter(f"chunks_by_chunker.{first.chunker}").inc(accepted)
        if rejected:
            self._partial.inc()
        else:
            yield TaggedOutput(
                MANIFEST,
                manifest_row(
                    document,
                    chunker=first.chunker,
                    chunker_config_hash=first.chunker_config_hash,
                    tokenizer=tokenizer_identity,
                    max_tokens=self._max_tokens,
                    chunk_count=accepted,
                    document_hash=first.document_hash,
                    libraries=chunker.fingerprint_libraries,
                ),
            )


class ChunkDocuments(beam.PTransform):
    """Route each document to its chunker, chunk it and validate its chunks as they are made.

    A chunk is recounted and checked (``transforms.validation.DocumentValidator``) as soon as
    the chunker builds it, and its row goes on to the writer: a document's chunks are never all
    held at once (beyond :data:`MAX_HELD_CHARS` of rows, held so that an error at a later chunk
    rejects the whole document with nothing written).

    Input: :class:`Document`. Output: main ``chunks`` (a chunk row dict, ``CHUNK_SCHEMA``, with
    ``token_count`` recounted), ``documents`` (a manifest row, ``MANIFEST_SCHEMA``, for each
    document whose chunks were all accepted) and ``dead_letter``:
    - the whole document (payload its content): ``no_route``, ``unsupported_content_format``,
      ``invalid_docling_json``, ``empty_document``, ``chunker_error`` (the chunker failed, or
      validation itself did), and for structure chunks ``incomplete_coverage`` (its chunks are
      written all the same);
    - one chunk (payload its text): ``token_budget_exceeded``, ``empty_chunk``,
      ``offset_mismatch``, ``tokenizer_mismatch``, and for structure chunks
      ``embedding_text_mismatch``, ``overlap_exceeded``. See ``transforms.validation``.

    Args:
        spec: The resolved configuration (``pipelines.config.resolve_config``); plain data: its
            ``tokenizer`` spec (each worker loads it in ``setup()``), ``max_tokens`` (the hard
            budget for ``embedding_text``) and chunkers.
        tokenizer_identity: Singleton PCollection of the job's tokenizer identity.
        progress_seconds: Log documents and chunks per second at this interval
            (``transforms.progress``); 0 never.

    There is no Reshuffle of documents before chunking: work spreads over workers by row groups
    (the read reshuffles ranges of row groups, see :class:`ReadParquetRows`). On
    docs.parquet with two ``multi_processing`` workers both did the same CPU time without one
    (16.7 and 16.2 s), and a reshuffle made the runner hold every document (peak 1,025 MiB
    against 675; in ``in_memory`` mode memory grew with the corpus).
    """

    def __init__(self, spec: Mapping[str, Any], tokenizer_identity, *, progress_seconds: float = 0) -> None:
        super().__init__()
        self._spec = spec
        self._identity = tokenizer_identity
        self._progress_seconds = progress_seconds

    def expand(self, documents):
        return documents | "Chunk and validate" >> beam.ParDo(
            _ChunkDoFn(self._spec, self._progress_seconds), AsSingleton(self._identity)
        ).with_outputs(DEAD_LETTER, MANIFEST, main="chunks")


def _writable(chunk: Chunk) -> dict[str, Any]:
    """The chunk's Parquet row, checked against the Arrow types of ``CHUNK_SCHEMA``.

    Raises:
        ValueError: An int32 column is out of range (e.g. a page number from a corrupt document).
    """
    row = chunk.to_row()
    for column in ("chunk_index", "token_count", "page_no"):
        value = row[column]
        if value is not None and not 0 <= value <= _INT32_MAX:
            raise ValueError(f"{column} {value} does not fit int32")
    return row


# ----------------------------------------------------------------------------------------------
# Incremental re-chunking (--previous)
# ----------------------------------------------------------------------------------------------

#: Tags of :class:`CompareWithPrevious`'s outputs besides the documents to chunk.
KEPT_CHUNKS = "kept_chunks"
KEPT_MANIFEST = "kept_documents"
PREVIOUS_IDS = "previous_chunk_ids"
_KEPT_IDS = "kept_ids"


class _SelectChangedDoFn(beam.DoFn):
    """Pass on the documents to chunk; for an unchanged one, emit its id and manifest row instead."""

    def __init__(self, spec: Mapping[str, Any], progress_seconds: float = 0) -> None:
        self._progress_seconds = progress_seconds
        self._spec = dict(spec)
        self._max_tokens = spec["max_tokens"]
        self._skipped = _counter("documents_skipped_unchanged")
        self._chunked = _counter("documents_chunked")
        self._written = _counter("chunks_written")
        self._new = _counter("incremental.documents_new")
        self._changed = _counter("incremental.documents_changed")

    def setup(self) -> None:
        self._progress = shared_progress(self._progress_seconds)
        self._tokenizer = _shared_tokenizer(self._spec["tokenizer"])
        self._router = build_router(self._spec, tokenizer=self._tokenizer)

    def process(self, document: Document, tokenizer_identity: str, manifest: Mapping[int, int]):
        key_of_id = id_key(document.id)
        previous = manifest.get(key_of_id)
        if previous is None:
            self._new.inc()
            yield document
            return
        key, chunk_count = previous >> 32, previous & 0xFFFFFFFF
        try:
            _, chunker = self._router.select(document)
        except ChunkingError:  # chunking will dead-letter it, with the reason
            chunker = None
        row = (
            None
            if chunker is None
            else manifest_row(
                document,
                chunker=chunker.name,
                chunker_config_hash=chunker.config_hash,
                tokenizer=tokenizer_identity,
                max_tokens=self._max_tokens,
                chunk_count=chunk_count,
                libraries=chunker.fingerprint_libraries,
            )
        )
        if row is None or unchanged_key(row) != key:
            self._changed.inc()
            yield document
            return
        self._skipped.inc()
        self._chunked.inc()
        self._written.inc(chunk_count)
        self._progress.add(documents=1, chunks=chunk_count)
        _counter(f"chunks_by_chunker.{chunker.name}").inc(chunk_count)
        yield TaggedOutput(KEPT_MANIFEST, row)
        yield TaggedOutput(_KEPT_IDS, key_of_id)


class _KeptChunksDoFn(beam.DoFn):
    """Split a previous chunk table: rows of kept documents (a table), and ids of the others."""

    def setup(self) -> None:
        self._kept_ids = None  # the side input last seen, held so that its identity stays valid
        self._kept = frozenset()

    def process(self, table: pa.Table, kept_ids: list[int]):
        if kept_ids is not self._kept_ids:
            self._kept_ids, self._kept = kept_ids, frozenset(kept_ids)
        ids = table.column("document_id").to_pylist()
        # (A row without a document id, which no rechunk run writes, belongs to no document: left out.)
        keep = {i: i is not None and id_key(i) in self._kept for i in set(ids)}
        mask = pa.array([keep[i] for i in ids], pa.bool_())
        kept = table.filter(mask)
        if kept.num_rows:
            yield kept.select(CHUNK_SCHEMA.names).cast(CHUNK_SCHEMA)
        if kept.num_rows < table.num_rows:
            rest = pc.and_(pc.invert(mask), pc.is_valid(table.column("document_id")))
            others = table.select(["document_id", "chunk_index", "chunk_id"]).filter(rest)
            for document_id, index, chunk_id in zip(*(c.to_pylist() for c in others.columns)):
                yield TaggedOutput(PREVIOUS_IDS, (document_id, (index, chunk_id)))


def _manifest_keys(table: pa.Table) -> Iterator[tuple[int, int]]:
    """``(id_key, unchanged_key << 32 | chunk_count)`` for each row of a manifest table: two
    integers, about 130 bytes per document once a worker holds them in a dict. A row with a null
    field or a chunk count out of range (a hand-edited manifest) gives nothing: its document is
    chunked afresh."""
    rows = table.select(["document_id", "document_hash", "input_fingerprint", "chunk_count"]).to_pylist()
    for row in rows:
        count = row["chunk_count"]
        if None in row.values() or not 0 < count < 1 << 32:
            continue
        yield id_key(row["document_id"]), unchanged_key(row) << 32 | count


class CompareWithPrevious(beam.PTransform):
    """Keep an earlier run's chunks of every unchanged document; pass the rest on to chunking.

    A keyed side input of the earlier run's manifest (``documents/``), reduced to two integers
    per document (``AsDict``: the id's and the content's 128-bit keys and the chunk count, about
    130 bytes per document in each worker's memory), lets documents stream through without a
    shuffle. A document whose key still matches
    (``transforms.incremental``: same content hash and input fingerprint) is not chunked
    again; its previous chunks are copied from the earlier ``chunks/`` as Arrow tables, filtered
    by the kept ids (a second side input, their 128-bit keys), never turned into Python rows.

    Input: :class:`Document`. Output (a dict): ``documents`` (the documents to chunk),
    ``kept_chunks`` (pyarrow tables, ``CHUNK_SCHEMA``), ``kept_documents`` (manifest row dicts)
    and ``previous_chunk_ids`` (``(document_id, (chunk_index, chunk_id))`` of every previous
    chunk not kept, to list what the new output no longer holds).

    Args:
        previous: The earlier run's output directory (``chunks/`` and ``documents/``), any Beam filesystem.
        spec: The resolved configuration (to route documents as the chunking step will).
        tokenizer_identity: Singleton PCollection of the job's tokenizer identity.
        progress_seconds: Kept documents count in the progress lines (``transforms.progress``).
    """

    def __init__(
        self, previous: str, spec: Mapping[str, Any], tokenizer_identity, *, progress_seconds: float = 0
    ) -> None:
        super().__init__()
        self._progress_seconds = progress_seconds
        self._previous = previous
        self._spec = spec
        self._identity = tokenizer_identity

    def expand(self, documents):
        pipeline = documents.pipeline
        manifest = (
            pipeline
            | "Read previous manifest"
            >> ReadFromParquetBatched(
                previous_files(self._previous, "documents"),
                columns=["document_id", "document_hash", "input_fingerprint", "chunk_count"],
            ).with_output_types(pa.Table)
            | "Manifest keys" >> beam.FlatMap(_manifest_keys)
        )
        selected = _typed_main_output(
            documents
            | "Select changed"
            >> beam.ParDo(
                _SelectChangedDoFn(self._spec, self._progress_seconds), AsSingleton(self._identity), AsDict(manifest)
            ).with_outputs(KEPT_MANIFEST, _KEPT_IDS, main="documents"),
            "documents",
            Document,
        )
        kept = _typed_main_output(
            pipeline
            | "Read previous chunks"
            >> ReadFromParquetBatched(previous_files(self._previous, "chunks")).with_output_types(pa.Table)
            | "Keep unchanged"
            >> beam.ParDo(_KeptChunksDoFn(), AsList(selected[_KEPT_IDS])).with_outputs(PREVIOUS_IDS, main="chunks"),
            "chunks",
            pa.Table,
        )
        return {
            "documents": selected.documents,
            KEPT_CHUNKS: kept.chunks,
            KEPT_MANIFEST: selected[KEPT_MANIFEST],
            PREVIOUS_IDS: kept[PREVIOUS_IDS],
        }


def _deleted_rows(element):
    document_id, groups = element
    current = list(groups["current"])
    stale = stale_chunk_ids(groups["previous"], current)
    if stale:
        _counter("incremental.chunks_deleted").inc(len(stale))
        if not current:
            _counter("incremental.documents_deleted").inc()
        yield {"document_id": document_id, "chunk_ids": stale, "document_removed": not current}


class ListDeleted(beam.PTransform):
    """The previous chunk ids missing from this run's output, per document (``DELETED_SCHEMA`` rows).

    Input: a dict with ``previous`` (``CompareWithPrevious``'s ``previous_chunk_ids``) and
    ``chunks`` (this run's freshly validated chunk rows), joined by document id
    (``CoGroupByKey``; ids only). ``document_removed`` is true when the document has no chunk
    in this run's output (gone from the input, or rejected now).
    """

    def expand(self, pcolls):
        current = pcolls["chunks"] | "Chunk ids" >> beam.Map(lambda row: (row["document_id"], row["chunk_id"]))
        return (
            {"previous": pcolls["previous"], "current": current}
            | "Join by document id" >> beam.CoGroupByKey()
            | "Stale chunk ids" >> beam.FlatMap(_deleted_rows)
        )


# ----------------------------------------------------------------------------------------------
# Write
# ----------------------------------------------------------------------------------------------


#: A record batch is flushed before its strings pass this many bytes of UTF-8: the rows, the Arrow
#: table built from them and the Parquet writer's copy are alive together, so the batch is kept
#: small (a row larger than this makes a batch of its own; with ``--max-document-chars`` at most
#: 500 M no batch nears Arrow's 2 GiB per array).
MAX_BATCH_BYTES = 4 * 1024 * 1024
#: ... or this many rows.
MAX_BATCH_ROWS = 4096


def _utf8_size(value: Any) -> int:
    """Bytes of UTF-8 of the strings in ``value`` (a string, or a list of strings; 0 otherwise)."""
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, list):
        return sum(_utf8_size(v) for v in value)
    return 0


class _ArrowBatches(beam.DoFn):
    """Row dicts into pyarrow Tables of ``schema``, each under :data:`MAX_BATCH_BYTES` bytes of
    strings and :data:`MAX_BATCH_ROWS` rows (one larger row makes a table of its own). Once a
    table is written, Arrow's pool hands back its unused memory (``release_unused``)."""

    def __init__(self, schema: pa.Schema) -> None:
        self._schema = schema

    def start_bundle(self) -> None:
        self._rows: list[dict[str, Any]] = []
        self._bytes = 0

    def process(self, row: Mapping[str, Any]):
        size = sum(_utf8_size(v) for v in row.values())
        if self._rows and (self._bytes + size > MAX_BATCH_BYTES or len(self._rows) >= MAX_BATCH_ROWS):
            yield self._flush()
            # The table has been written downstream by now (the sink is fused here). Arrow's pool
            # (mimalloc) keeps the freed table and the Parquet writer's page buffers resident
            # otherwise, on top of a huge document's chunking: 9 to 23 MiB of the peak of 50 MB of
            # HTML, an HTML list, Markdown or RST (benchmarks/results/s13-memory-kinds.md).
            pa.default_memory_pool().release_unused()
        self._rows.append(row)
        self._bytes += size

    def finish_bundle(self):
        if self._rows:
            yield WindowedValue(self._flush(), MIN_TIMESTAMP, [GlobalWindow()])

    def _flush(self) -> pa.Table:
        table = pa.Table.from_pylist(self._rows, schema=self._schema)
        self._rows, self._bytes = [], 0
        return table


class _WriteRows(beam.PTransform):
    """Write row dicts as zstd-compressed Parquet files ``PREFIX-SSSSS-of-NNNNN.parquet`` of ``schema``,
    through Beam's file sink (:class:`_ParquetSink`) in byte-bounded record batches."""

    def __init__(self, file_path_prefix: str, schema: pa.Schema) -> None:
        super().__init__()
        self._prefix = file_path_prefix
        self._schema = schema

    def expand(self, rows):
        return (
            rows
            | "Record batches" >> beam.ParDo(_ArrowBatches(self._schema)).with_output_types(pa.Table)
            | "Write Parquet" >> _parquet_sink(self._prefix, self._schema)
        )


#: Columns that hold a document's or a chunk's text: written in plain pages, never dictionary-encoded.
#: Their values rarely repeat, so pyarrow's dictionary (its default) only grows to its 1 MiB limit and
#: falls back to plain pages, at a cost on both sides: a reader decodes the dictionary page too, and
#: a value larger than the limit sits whole in it, so reading it back holds one more copy of it
#: (apache/arrow#38245; a 50 MB document: 170 MiB of pyarrow's read peak against 118 in plain
#: pages, benchmarks/results/s12-scale.md). On the chunks of ``docs.parquet`` plain pages also read
#: 14% and write 6% faster, at the same size (benchmarks/results/s13-parquet-pages.md).
PLAIN_PAGE_COLUMNS = frozenset({"text", "embedding_text", "content", "payload", "detail"})


class _ParquetSink(filebasedsink.FileBasedSink):
    """Beam's file sink for pyarrow Tables of ``schema``: zstd-compressed Parquet, the columns of
    :data:`PLAIN_PAGE_COLUMNS` in plain pages and the others dictionary-encoded.

    Beam's own ``WriteToParquetBatched`` does the same but does not expose pyarrow's
    ``use_dictionary``; this is its sink with that one argument added (``open`` returns the
    ``ParquetWriter`` and the file it writes, which ``close`` closes in that order).
    """

    def __init__(self, file_path_prefix: str, schema: pa.Schema) -> None:
        super().__init__(
            file_path_prefix,
            coder=None,
            file_name_suffix=".parquet",
            mime_type="application/x-parquet",
            compression_type=CompressionTypes.UNCOMPRESSED,  # pages are compressed by the writer
        )
        self._schema = schema
        # pyarrow names a column by its Parquet path: a list of strings is ``NAME.list.item`` (the
        # list layout Beam's sink writes, use_compliant_nested_type=False, kept for every reader
        # of earlier outputs).
        self._dictionary = [
            f"{field.name}.list.item" if pa.types.is_list(field.type) else field.name
            for field in schema
            if field.name not in PLAIN_PAGE_COLUMNS
        ]

    def open(self, temp_path: str):
        handle = super().open(temp_path)
        writer = pq.ParquetWriter(
            handle, self._schema, compression="zstd", use_dictionary=self._dictionary, use_compliant_nested_type=False
        )
        return writer, handle

    def write_record(self, file_handle, value: pa.Table) -> None:
        file_handle[0].write_table(value)

    def close(self, file_handle) -> None:
        writer, handle = file_handle
        writer.close()
        handle.close()


def _parquet_sink(prefix: str, schema: pa.Schema) -> iobase.Write:
    """The Parquet sink every output uses (:class:`_ParquetSink`): ``PREFIX-SSSSS-of-NNNNN.parquet``."""
    return iobase.Write(_ParquetSink(prefix, schema))


class WriteChunks(_WriteRows):
    """Write chunk rows (``Chunk.to_row()`` dicts, ``CHUNK_SCHEMA``) as zstd Parquet files."""

    def __init__(self, file_path_prefix: str) -> None:
        super().__init__(file_path_prefix, CHUNK_SCHEMA)


class WriteDeadLetter(_WriteRows):
    """Write :class:`DeadLetter` records (``DEAD_LETTER_SCHEMA``) as zstd Parquet files; payloads
    are whole documents, so a batch may hold a single row."""

    def __init__(self, file_path_prefix: str) -> None:
        super().__init__(file_path_prefix, DEAD_LETTER_SCHEMA)

    def expand(self, rows):
        return super().expand(rows | "Dead-letter rows" >> beam.Map(DeadLetter.to_row))


class WriteManifest(_WriteRows):
    """Write manifest rows (``MANIFEST_SCHEMA``, ``documents/``) as zstd Parquet files."""

    def __init__(self, file_path_prefix: str) -> None:
        super().__init__(file_path_prefix, MANIFEST_SCHEMA)


class WriteDeleted(_WriteRows):
    """Write deleted-chunk rows (``DELETED_SCHEMA``, ``deleted/``) as zstd Parquet files."""

    def __init__(self, file_path_prefix: str) -> None:
        super().__init__(file_path_prefix, DELETED_SCHEMA)


class WriteKeptChunks(beam.PTransform):
    """Write pyarrow tables of kept chunks (``CHUNK_SCHEMA``) as zstd Parquet files, as they were read.

    The tables are filtered row groups of an earlier run's files, which that run wrote within
    Arrow's 2 GiB limit, so no batch here can exceed it.
    """

    def __init__(self, file_path_prefix: str) -> None:
        super().__init__()
        self._prefix = file_path_prefix

    def expand(self, tables):
        return tables | "Write Parquet" >> _parquet_sink(self._prefix, CHUNK_SCHEMA)
