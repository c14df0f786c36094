"""Row dicts and Arrow tables into zstd-compressed Parquet files: :class:`WriteRows` and the job's Write* transforms.

Every output is written through Beam's file sink (:class:`_ParquetSink`) as
``PREFIX-SSSSS-of-NNNNN.parquet``, in record batches bounded in bytes (:data:`MAX_BATCH_BYTES`)
and rows (:data:`MAX_BATCH_ROWS`). Given a ``run_id``, each file's footer holds it under the
key-value metadata key :data:`RUN_ID_KEY` (the commit's check that the files are this run's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io import filebasedsink, iobase
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from transforms.columns import ArrowText
from transforms.documents import CHUNK_SCHEMA, DEAD_LETTER_SCHEMA, DeadLetter
from transforms.incremental import DELETED_SCHEMA, MANIFEST_SCHEMA

__all__ = [
    "MAX_BATCH_BYTES",
    "MAX_BATCH_ROWS",
    "PLAIN_PAGE_COLUMNS",
    "RUN_ID_KEY",
    "WriteChunks",
    "WriteDeadLetter",
    "WriteDeleted",
    "WriteKeptChunks",
    "WriteManifest",
    "WriteRows",
]

#: A record batch is flushed before its strings pass this many bytes of UTF-8: the rows, the Arrow
#: table built from them and the Parquet writer's copy are alive together, so the batch is kept
#: small (a row larger than this makes a batch of its own; with ``--max-document-chars`` at most
#: 500 M no batch nears Arrow's 2 GiB per array).
MAX_BATCH_BYTES = 4 * 1024 * 1024
#: ... or this many rows.
MAX_BATCH_ROWS = 4096
#: The Parquet footer's key-value metadata key of the id of the run that wrote the file.
RUN_ID_KEY = b"rechunk.run_id"


def _utf8_size(value: Any) -> int:
    """Bytes of UTF-8 of the strings in ``value`` (a string, an :class:`ArrowText`, or a list of
    strings; 0 otherwise)."""
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, list):
        return sum(_utf8_size(v) for v in value)
    if isinstance(value, ArrowText):
        return value.utf8_bytes
    return 0


def _table(rows: list[Mapping[str, Any]], schema: pa.Schema) -> pa.Table:
    """``rows`` as a table of ``schema``. A column holding :class:`ArrowText` values is built from
    their Arrow buffers as they are (a chunked column: runs of the other values, and each of them),
    so a huge rejected document is not copied into a second UTF-8 buffer."""
    arrow_columns = {name for row in rows for name, value in row.items() if isinstance(value, ArrowText)}
    if not arrow_columns:
        return pa.Table.from_pylist(rows, schema=schema)
    table = pa.Table.from_pylist(
        [{k: (None if k in arrow_columns else v) for k, v in row.items()} for row in rows], schema=schema
    )
    for name in sorted(arrow_columns):
        arrow_type = schema.field(name).type
        pieces: list[pa.Array] = []
        run: list[Any] = []
        for row in rows:
            value = row.get(name)
            if isinstance(value, ArrowText):
                if run:
                    pieces.append(pa.array(run, type=arrow_type))
                    run = []
                pieces.append(value.as_arrow(arrow_type))
            else:
                run.append(value)
        if run:
            pieces.append(pa.array(run, type=arrow_type))
        index = schema.get_field_index(name)
        table = table.set_column(index, schema.field(name), pa.chunked_array(pieces, type=arrow_type))
    return table


class _ArrowBatches(beam.DoFn):
    """Row dicts (or records that ``to_row`` turns into row dicts, here rather than on an edge of
    their own, whose size estimate would encode each row) into pyarrow Tables of ``schema``, each
    under :data:`MAX_BATCH_BYTES` bytes of strings and :data:`MAX_BATCH_ROWS` rows (one larger row
    makes a table of its own). Once a table is written, Arrow's pool hands back its unused memory
    (``release_unused``)."""

    def __init__(self, schema: pa.Schema, to_row: Callable[[Any], Mapping[str, Any]] | None = None) -> None:
        self._schema = schema
        self._to_row = to_row
        # Only these columns hold strings: a row's size is theirs.
        self._string_columns = tuple(
            field.name
            for field in schema
            if pa.types.is_string(field.type)
            or pa.types.is_large_string(field.type)
            or (pa.types.is_list(field.type) and pa.types.is_string(field.type.value_type))
        )

    def start_bundle(self) -> None:
        self._rows: list[Mapping[str, Any]] = []
        self._bytes = 0

    def process(self, element: Any):
        row = element if self._to_row is None else self._to_row(element)
        size = 0
        for name in self._string_columns:
            value = row.get(name)
            if value.__class__ is str:  # (most values: sized here, without a call per column)
                size += len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
            elif value is not None:
                size += _utf8_size(value)
        if self._rows and (self._bytes + size > MAX_BATCH_BYTES or len(self._rows) >= MAX_BATCH_ROWS):
            yield self._flush()
            # The table has been written downstream by now (the sink is fused here). Arrow's pool
            # (mimalloc) keeps the freed table and the Parquet writer's page buffers resident
            # otherwise, on top of a huge document's chunking: 9 to 23 MiB of the peak of 50 MB of
            # HTML, an HTML list, Markdown or RST (benchmarks/results/2026-12-01-memory-single-documents.md).
            pa.default_memory_pool().release_unused()
        self._rows.append(row)
        self._bytes += size

    def finish_bundle(self):
        if self._rows:
            yield WindowedValue(self._flush(), MIN_TIMESTAMP, [GlobalWindow()])

    def _flush(self) -> pa.Table:
        table = _table(self._rows, self._schema)
        self._rows, self._bytes = [], 0
        return table


class WriteRows(beam.PTransform):
    """Write row dicts as zstd-compressed Parquet files ``PREFIX-SSSSS-of-NNNNN.parquet`` of ``schema``,
    through Beam's file sink (:class:`_ParquetSink`) in byte-bounded record batches.

    Args:
        file_path_prefix: The files' path up to ``-SSSSS-of-NNNNN.parquet``, on any Beam filesystem.
        schema: The files' Arrow schema; each row dict has its columns.
        run_id: Written in each file's footer (:data:`RUN_ID_KEY`), when given.
        to_row: Turns each element into its row dict (``None``: the elements are row dicts).
        data_page_version: Parquet's data page version, ``"1.0"`` or ``"2.0"`` (see
            :class:`_ParquetSink`).
    """

    def __init__(
        self,
        file_path_prefix: str,
        schema: pa.Schema,
        *,
        run_id: str | None = None,
        to_row: Callable[[Any], Mapping[str, Any]] | None = None,
        data_page_version: str = "1.0",
    ) -> None:
        super().__init__()
        self._prefix = file_path_prefix
        self._schema = schema
        self._run_id = run_id
        self._to_row = to_row
        self._data_page_version = data_page_version

    def expand(self, rows):
        return (
            rows
            | "Record batches" >> beam.ParDo(_ArrowBatches(self._schema, self._to_row)).with_output_types(pa.Table)
            | "Write Parquet" >> _parquet_sink(self._prefix, self._schema, self._run_id, self._data_page_version)
        )


#: Columns that hold a document's or a chunk's text: written in plain pages, never dictionary-encoded,
#: and without min and max statistics (see :class:`_ParquetSink`).
#: Their values rarely repeat, so pyarrow's dictionary (its default) only grows to its 1 MiB limit and
#: falls back to plain pages, at a cost on both sides: a reader decodes the dictionary page too, and
#: a value larger than the limit sits whole in it, so reading it back holds one more copy of it
#: (apache/arrow#38245; a 50 MB document: 170 MiB of pyarrow's read peak against 118 in plain
#: pages). On the chunks of ``docs.parquet`` plain pages also read 14% and write 6% faster, at the
#: same size.
PLAIN_PAGE_COLUMNS = frozenset({"text", "embedding_text", "content", "payload", "detail"})


class _ParquetSink(filebasedsink.FileBasedSink):
    """Beam's file sink for pyarrow Tables of ``schema``: zstd-compressed Parquet, the columns of
    :data:`PLAIN_PAGE_COLUMNS` in plain pages and the others dictionary-encoded.

    Beam's own ``WriteToParquetBatched`` does the same but does not expose pyarrow's
    ``use_dictionary``; this is its sink with that one argument added (``open`` returns the
    ``ParquetWriter`` and the file it writes, which ``close`` closes in that order).
    """

    def __init__(
        self, file_path_prefix: str, schema: pa.Schema, run_id: str | None = None, data_page_version: str = "1.0"
    ) -> None:
        super().__init__(
            file_path_prefix,
            coder=None,
            file_name_suffix=".parquet",
            mime_type="application/x-parquet",
            compression_type=CompressionTypes.UNCOMPRESSED,  # pages are compressed by the writer
        )
        # (the footer's key-value metadata is the writer's schema's: batches need not carry it)
        self._schema = schema if run_id is None else schema.with_metadata({RUN_ID_KEY: run_id.encode("utf-8")})
        # pyarrow names a column by its Parquet path: a list of strings is ``NAME.list.item`` (the
        # list layout Beam's sink writes, use_compliant_nested_type=False, kept for every reader
        # of earlier outputs).
        self._dictionary = [
            f"{field.name}.list.item" if pa.types.is_list(field.type) else field.name
            for field in schema
            if field.name not in PLAIN_PAGE_COLUMNS
        ]
        self._data_page_version = data_page_version

    def open(self, temp_path: str):
        handle = super().open(temp_path)
        writer = pq.ParquetWriter(
            handle,
            self._schema,
            compression="zstd",
            use_dictionary=self._dictionary,
            # Min and max statistics of the text columns: none. They would be a copy of a row
            # group's least and greatest text, which no reader filters on, and pyarrow builds them
            # in several more: 290 MiB of peak to write one 50 MB dead-lettered document, against
            # 104 MiB without (benchmarks/memory.py --dead-letter).
            write_statistics=self._dictionary,
            use_compliant_nested_type=False,
            write_page_checksum=True,  # verified when a later run reads it (--previous, or --input for parse output)
            data_page_version=self._data_page_version,
        )
        return writer, handle

    def write_record(self, file_handle, value: pa.Table) -> None:
        file_handle[0].write_table(value)

    def close(self, file_handle) -> None:
        writer, handle = file_handle
        writer.close()
        handle.close()


def _parquet_sink(
    prefix: str, schema: pa.Schema, run_id: str | None = None, data_page_version: str = "1.0"
) -> iobase.Write:
    """The Parquet sink every output uses (:class:`_ParquetSink`): ``PREFIX-SSSSS-of-NNNNN.parquet``."""
    return iobase.Write(_ParquetSink(prefix, schema, run_id, data_page_version))


class WriteChunks(WriteRows):
    """Write chunk rows (``Chunk.to_row()`` dicts, ``CHUNK_SCHEMA``) as zstd Parquet files."""

    def __init__(self, file_path_prefix: str, *, run_id: str | None = None) -> None:
        super().__init__(file_path_prefix, CHUNK_SCHEMA, run_id=run_id)


class WriteDeadLetter(WriteRows):
    """Write :class:`DeadLetter` records (``DEAD_LETTER_SCHEMA``) as zstd Parquet files; payloads
    are whole documents, so a batch may hold a single row.

    In data pages of version 2.0: a version 1.0 page is its values joined to their null levels in
    one more buffer before it is compressed, a second copy of a huge rejected document (200 M
    characters of random words: 1,008 MiB of peak to dead-letter it in 1.0 pages, against 921 to
    chunk it; ``benchmarks/memory.py --dead-letter``). Current Parquet readers (pyarrow, DuckDB,
    Spark's) read both.
    """

    def __init__(self, file_path_prefix: str, *, run_id: str | None = None) -> None:
        super().__init__(
            file_path_prefix, DEAD_LETTER_SCHEMA, run_id=run_id, to_row=DeadLetter.to_row, data_page_version="2.0"
        )


class WriteManifest(WriteRows):
    """Write manifest rows (``MANIFEST_SCHEMA``, ``documents/``) as zstd Parquet files."""

    def __init__(self, file_path_prefix: str, *, run_id: str | None = None) -> None:
        super().__init__(file_path_prefix, MANIFEST_SCHEMA, run_id=run_id)


class WriteDeleted(WriteRows):
    """Write deleted-chunk rows (``DELETED_SCHEMA``, ``deleted/``) as zstd Parquet files."""

    def __init__(self, file_path_prefix: str, *, run_id: str | None = None) -> None:
        super().__init__(file_path_prefix, DELETED_SCHEMA, run_id=run_id)


class WriteKeptChunks(beam.PTransform):
    """Write pyarrow tables of kept chunks (``CHUNK_SCHEMA``) as zstd Parquet files, as they were read.

    The tables are filtered row groups of an earlier run's files, which that run wrote within
    Arrow's 2 GiB limit, so no batch here can exceed it.
    """

    def __init__(self, file_path_prefix: str, *, run_id: str | None = None) -> None:
        super().__init__()
        self._prefix = file_path_prefix
        self._run_id = run_id

    def expand(self, tables):
        return tables | "Write Parquet" >> _parquet_sink(self._prefix, CHUNK_SCHEMA, self._run_id)
