"""Parquet input as row dicts, one row group at a time: :class:`ReadDocuments`, :class:`ReadDocumentIds`.

The rows' values are Python values made by ``transforms.columns`` (a string that is not valid
UTF-8 stays ``bytes``, a value Python cannot hold is an ``Unreadable``), for admission
(``transforms.admission``) to accept or dead-letter.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io import fileio, iobase
from apache_beam.io.fileio import EmptyMatchTreatment
from apache_beam.io.filesystem import CompressionTypes, FileMetadata
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.util import ReshufflePerKey

from transforms.columns import release_rows, table_columns

__all__ = ["ReadDocumentIds", "ReadDocuments", "ReadParquetRows"]


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
    Python values (``transforms.columns.table_columns``), drops the Arrow table and hands Arrow's unused memory
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
        # The footer is parsed once per range, not once per row group: that would make a file
        # of n row groups cost n footers of n row groups each (8,000 row groups of one row:
        # 145 s, against about 1 s).
        with _open_parquet(path) as f, pq.ParquetFile(f) as parquet:
            footer = parquet.metadata
        for index in range(start, stop):
            columns, num_rows = _read_row_group(path, footer, index, self._columns, self._rename)
            yield from release_rows(columns, num_rows)
            del columns


def _read_row_group(
    path: str, footer: pq.FileMetaData, index: int, columns: list[str] | None, rename: Mapping[str, str]
) -> tuple[dict[str, list[Any]], int]:
    """One row group's columns as Python values (renamed), and its row count; nothing of Arrow's
    is referenced when this returns, and the pool's unused memory is handed back. The file is
    open only while the row group is read (``footer``, its parsed footer, is not read again)."""
    with _open_parquet(path) as f, pq.ParquetFile(f, metadata=footer) as parquet:
        # One thread: with Arrow's thread pool some of the read's buffers (3 times a 5 MB
        # column, measured) are freed by pool threads after the table is returned, so they would
        # still be allocated when the rows are handed on. Decoding is about 0.1 s of CPU for all
        # of docs.parquet either way.
        table = parquet.read_row_group(index, columns=columns, use_threads=False)
    # Arrow's pool (mimalloc) keeps freed buffers resident: hand back the read's (the compressed
    # and decompressed pages, 2 times the table for one 50 MB document) before the Python
    # values are made, and the table's and the conversions' casts before the rows go on.
    pool = pa.default_memory_pool()
    pool.release_unused()
    num_rows = table.num_rows
    values = table_columns(table, rename)
    del table
    pool.release_unused()
    return values, num_rows
