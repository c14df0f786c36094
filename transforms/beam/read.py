"""Parquet input as row dicts, one range (of row groups, or of the rows of one) at a time:
:class:`ReadDocuments`, :class:`ReadDocumentIds`, and both from one listing,
:class:`ReadDocumentsAndIds` (the chunk job's read).

The rows' values are Python values made by ``transforms.columns`` (a string that is not valid
UTF-8 stays ``bytes``, a value Python cannot hold is an ``Unreadable``), for admission
(``transforms.admission``) to accept or dead-letter.
"""

from __future__ import annotations

import hashlib
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

from transforms.admission import id_as_text
from transforms.columns import release_rows, table_columns
from transforms.integrity import InputChanged, InputUnreadable, parquet_fingerprint

__all__ = [
    "MAX_ROW_RANGES",
    "ListRowGroupRanges",
    "ReadDocumentIds",
    "ReadDocuments",
    "ReadDocumentsAndIds",
    "ReadParquetRows",
    "ReadRowGroups",
    "range_bytes",
    "range_key",
    "row_ranges",
]


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


class ReadDocumentsAndIds(beam.PTransform):
    """The document rows and, in a second read, their ids alone, both from one listing of the files.

    The files are listed once (:class:`ListRowGroupRanges`): both reads take their ranges, each
    with its file's :func:`~transforms.integrity.parquet_fingerprint`, from that one listing, and
    each checks the fingerprint when it opens the file. So the duplicate-id count and the
    documents see the same files with the same rows, or the run stops
    (:class:`~transforms.integrity.InputChanged`: a file rewritten or removed between the two
    reads); a file added after the listing is read by neither.

    Output: a dict, ``rows`` (as :class:`ReadDocuments`) and ``ids`` (as :class:`ReadDocumentIds`).

    With ``row_notes``, each row comes with a note found for its id by a keyed join, not by a side
    input: the ids are read first, each with its range's :func:`range_key`; ``row_notes`` turns
    those ``(range key, {"id": value})`` pairs into ``(range key, (id, note))`` pairs (``id`` as
    :func:`~transforms.admission.id_as_text` gives it), and a ``CoGroupByKey`` by range key hands
    each range's reader the notes of its own rows only (memory bounded by a range's rows, not by
    the input). ``rows`` are then ``(row, note)`` pairs, the note ``None`` for an id without one.

    Args:
        file_pattern: A file pattern on any Beam filesystem.
        column_map: Contract column name -> the input's column name.
        max_document_chars: A ``content`` value longer than this (code points) is not made a
            Python string: it stays in Arrow's buffer as a :class:`~transforms.columns.ArrowText`
            for admission to reject (``None``: every value is a string).
        row_notes: A PTransform from ``(range key, {"id": value})`` to ``(range key, (id, note))``
            pairs, or ``None``.

    Raises:
        IOError: When the pipeline is built, if ``file_pattern`` matches no file.
    """

    def __init__(
        self,
        file_pattern: str,
        *,
        column_map: Mapping[str, str] | None = None,
        max_document_chars: int | None = None,
        row_notes: beam.PTransform | None = None,
    ) -> None:
        super().__init__()
        self._file_pattern = file_pattern
        self._column_map = dict(column_map or {})
        self._text_limits = {} if max_document_chars is None else {"content": max_document_chars}
        self._row_notes = row_notes

    def expand(self, pbegin):
        ranges = pbegin | "List input" >> ListRowGroupRanges(self._file_pattern)
        rename = {source: target for target, source in self._column_map.items()}
        source = self._column_map.get("id", "id")
        if self._row_notes is None:
            return {
                "rows": ranges | "Read documents" >> ReadRowGroups(rename=rename, text_limits=self._text_limits),
                "ids": ranges | "Read ids" >> ReadRowGroups(columns=[source], rename={source: "id"}),
            }
        ids = ranges | "Read ids" >> ReadRowGroups(columns=[source], rename={source: "id"}, keyed=True)
        notes = ids | "Notes of rows" >> self._row_notes
        rows = (
            # (The join by range also spreads the ranges over the workers, as ReadRowGroups's shuffle.)
            {
                "range": ranges | "Key ranges" >> beam.Map(lambda row_groups: (range_key(row_groups), row_groups)),
                "notes": notes,
            }
            | "Join notes by range" >> beam.CoGroupByKey()
            | "Read noted documents" >> beam.ParDo(_ReadNotedRowGroupsDoFn(None, rename, self._text_limits))
        )
        return {"rows": rows, "ids": ids | "Ids" >> beam.Values()}


class ReadParquetRows(beam.PTransform):
    """Rows of Parquet files as dicts, read a row group (or a range of its rows) at a time and not
    held while processed.

    :class:`ListRowGroupRanges` lists the files and cuts them into ranges of row groups, and a
    large row group into ranges of its rows, spread over workers; :class:`ReadRowGroups` reads
    each range's row groups one at a time with pyarrow (``ParquetFile.read_row_group``; a range
    of rows with ``ParquetFile.iter_batches``, a batch at a time), converts one to Python values
    (``transforms.columns.table_columns``), drops the Arrow table and hands Arrow's unused memory
    back before it yields the row group's first row. (Beam's ``ReadFromParquetBatched`` keeps
    the table in its reader's frame while the rows are processed downstream in the same fused
    stage: for a row group holding one 50 MB document, 50 MB of Arrow data and the pool's pages,
    +157 MiB RSS measured, held while the document is chunked.)

    A row's values are released as the row is yielded: the DoFn holds only the rows of its row
    group (or range of rows) not yet processed. Rows come in file order within a range; ranges
    come in the runner's order. A file of 0 bytes holds no rows (as with Beam's file sources); a file with no row
    group, or empty ones, gives no rows.

    Args:
        file_pattern: A file pattern on any Beam filesystem.
        columns: Read only these columns (``None``: all).
        rename: Input column name -> output name; an output name that is also an input column's
            name drops that column (the mapped one wins).

    Raises:
        IOError: When the pipeline is built, if ``file_pattern`` matches no file (as Beam's
            file sources with ``validate=True``). A file removed before the running job lists the
            files gives no rows. Raised on a worker (and so by the runner):
            :class:`~transforms.integrity.InputChanged` for a file removed or rewritten after
            the listing, :class:`~transforms.integrity.InputUnreadable` for a file that is not
            readable Parquet or whose pages fail their checksums.
    """

    def __init__(
        self, file_pattern: str, *, columns: list[str] | None = None, rename: Mapping[str, str] | None = None
    ) -> None:
        super().__init__()
        self._file_pattern = file_pattern
        self._columns = None if columns is None else list(columns)
        self._rename = dict(rename or {})

    def expand(self, pbegin):
        return (
            pbegin
            | "List files" >> ListRowGroupRanges(self._file_pattern)
            | "Read row groups" >> ReadRowGroups(columns=self._columns, rename=self._rename)
        )


class ListRowGroupRanges(beam.PTransform):
    """The files of a pattern as ranges, spread over workers, for :class:`ReadRowGroups`:
    ``(path, start, stop, fingerprint)`` (the row groups ``start <= i < stop``) or
    ``(path, i, i + 1, fingerprint, first, stop_row)`` (the rows ``first <= r < stop_row`` of the
    row group ``i``).

    Beam's ``fileio.MatchFiles`` lists the files (any Beam filesystem). A DoFn reads each file's
    footer, takes its :func:`~transforms.integrity.parquet_fingerprint` and cuts the file into
    byte ranges of :func:`range_bytes` (a quarter of Beam's Parquet split size for the file,
    ``iobase.Read.get_desired_chunk_size``), in file order: the row groups that start in one byte
    range make one range, and a row group larger than a byte range is cut into ranges of equal row
    counts (:func:`row_ranges`), as many as byte ranges it spans (at most :data:`MAX_ROW_RANGES`).
    So a file of one row group keeps several workers busy, and the ranges depend on the footer
    alone. Each :class:`ReadRowGroups` spreads them over workers (a ``ReshufflePerKey`` keyed by
    the ranges).

    Raises:
        IOError: When the pipeline is built, if ``file_pattern`` matches no file. On a worker,
            :class:`~transforms.integrity.InputUnreadable` for a file that does not end as
            Parquet, :class:`~transforms.integrity.InputChanged` for one gone after its match.
    """

    def __init__(self, file_pattern: str) -> None:
        super().__init__()
        self._file_pattern = file_pattern

    def expand(self, pbegin):
        # As Beam's FileBasedSource(validate=True): fail when the pipeline is built, not mid-run.
        if not FileSystems.match([self._file_pattern], limits=[1])[0].metadata_list:
            raise OSError(f"No files found based on the file pattern {self._file_pattern}")
        return (
            pbegin
            | "Match files" >> fileio.MatchFiles(self._file_pattern, EmptyMatchTreatment.ALLOW)
            | "Row group ranges" >> beam.ParDo(_RowGroupRangesDoFn())
        )


class ReadRowGroups(beam.PTransform):
    """Rows of :class:`ListRowGroupRanges`'s ranges, spread over workers and read as
    :class:`ReadParquetRows` says; each
    file's fingerprint is checked against the listing's when the range opens it, and its pages'
    checksums (where the writer wrote them) as they are read.

    Args:
        columns: Read only these columns (``None``: all).
        rename: Input column name -> output name (as :class:`ReadParquetRows`).
        text_limits: Output column name -> code points: a longer text value of that column stays
            an Arrow value (``transforms.columns.table_columns``).
        keyed: Give ``(range key, row)`` pairs (:func:`range_key`) instead of rows.
    """

    def __init__(
        self,
        *,
        columns: list[str] | None = None,
        rename: Mapping[str, str] | None = None,
        text_limits: Mapping[str, int] | None = None,
        keyed: bool = False,
    ) -> None:
        super().__init__()
        self._columns = None if columns is None else list(columns)
        self._rename = dict(rename or {})
        self._text_limits = dict(text_limits or {})
        self._keyed = keyed

    def expand(self, ranges):
        return (
            ranges
            # Keyed by the range itself, not by Beam's random keys: the same spread on every run
            # (the FnApiRunner deals keys to its workers in turn; ranges of about equal compressed
            # bytes, range_bytes, so that dealing them in turn balances the workers). Each read
            # spreads the listing's ranges itself: a shuffle shared by two reads would put both in one
            # stage, and a read whose rows meet a side input computed from the other could then
            # not be fused with that consumer (every row encoded between stages: +200 MiB to
            # chunk one 50 MB document, measured).
            | "Key ranges" >> beam.Map(lambda row_groups: (row_groups, None))
            | "Spread ranges" >> ReshufflePerKey()
            | "Range" >> beam.Keys()
            | "Read row groups"
            >> beam.ParDo(
                (_KeyedReadRowGroupsDoFn if self._keyed else _ReadRowGroupsDoFn)(
                    self._columns, self._rename, self._text_limits
                )
            )
        )


def _open_parquet(path: str):
    """The file as Beam's Parquet source opens it (``FileBasedSource.open_file``), through Beam's
    filesystems (with their own read buffers, e.g. GCS's)."""
    return FileSystems.open(path, "application/octet-stream", compression_type=CompressionTypes.AUTO)


class _RowGroupRangesDoFn(beam.DoFn):
    """The ranges of one matched file, in file order (see :class:`ListRowGroupRanges`):
    ``(path, start, stop, fingerprint)`` for the row groups ``start <= i < stop`` that start in one
    byte range of :func:`range_bytes`, and ``(path, i, i + 1, fingerprint, first, stop_row)`` for
    the rows ``first <= r < stop_row`` of a row group ``i`` larger than that, cut into ranges of
    equal row counts (at most :data:`MAX_ROW_RANGES`); ``fingerprint`` is the file's
    :func:`~transforms.integrity.parquet_fingerprint`."""

    def process(self, metadata: FileMetadata) -> Iterator[tuple[Any, ...]]:
        if metadata.size_in_bytes == 0:  # as Beam's file sources: a file of 0 bytes holds no rows
            return
        path = metadata.path
        try:
            with _open_parquet(path) as f:
                fingerprint = parquet_fingerprint(f)
                with pq.ParquetFile(f) as parquet:
                    footer = parquet.metadata
                    groups = [footer.row_group(i) for i in range(footer.num_row_groups)]
                    offsets = [_row_group_offset(group) for group in groups]
                    sizes = [_row_group_bytes(group) for group in groups]
                    counts = [group.num_rows for group in groups]
        except (OSError, ValueError, pa.ArrowException) as err:
            raise _unreadable(path, "not a readable Parquet file", err) from err
        target = range_bytes(int(fingerprint.partition(":")[0]))
        start: int | None = None  # the first row group of the range being gathered
        for index in range(len(offsets)):
            cut = sizes[index] > target and counts[index] > 1
            if start is not None and (cut or offsets[index] // target != offsets[start] // target):
                yield path, start, index, fingerprint
                start = None
            if cut:
                pieces = min(-(-sizes[index] // target), MAX_ROW_RANGES)
                for first, stop in row_ranges(counts[index], pieces):
                    yield path, index, index + 1, fingerprint, first, stop
            elif start is None:
                start = index
        if start is not None:
            yield path, start, len(offsets), fingerprint


def range_bytes(file_bytes: int) -> int:
    """The target size of one range, in compressed bytes of a file of ``file_bytes`` bytes: a
    quarter of Beam's split size for that file (``iobase.Read.get_desired_chunk_size``: 1 MiB, or
    1,000 times the square root of the size when larger), so that even a file of one row group
    gives a few ranges to each of several workers."""
    return max(1, iobase.Read.get_desired_chunk_size(file_bytes) // _RANGES_PER_SPLIT)


_RANGES_PER_SPLIT = 4

#: At most this many ranges of rows in one row group: each range decodes the rows before it again,
#: about half a decode of the row group a range. Measured: the 20 ranges of a 65 MB row group cost
#: 0.7 s of CPU over its whole read (about 4 % of chunking it), the 25 ranges of a 116 MB one 5.3 s
#: (about 15 %); 32 ranges bound that cost while a row group still spreads over 32 workers.
MAX_ROW_RANGES = 32


def row_ranges(num_rows: int, pieces: int) -> list[tuple[int, int]]:
    """``[(first, stop), ...]``: the rows ``0 <= r < num_rows`` cut into at most ``pieces``
    consecutive ranges of ``ceil(num_rows / pieces)`` rows (the last may hold fewer), none empty;
    ``[]`` for no rows."""
    step = -(-num_rows // max(1, min(pieces, num_rows))) if num_rows > 0 else 1
    return [(first, min(first + step, num_rows)) for first in range(0, num_rows, step)]


def _row_group_bytes(row_group: pq.RowGroupMetaData) -> int:
    """A row group's compressed size in bytes (its column chunks')."""
    return sum(row_group.column(i).total_compressed_size for i in range(row_group.num_columns))


def _unreadable(path: str, what: str, err: BaseException) -> Exception:
    """The error for a file that failed to open or read: :class:`InputChanged` when it is gone,
    :class:`InputUnreadable` (``what`` and the error) otherwise."""
    try:
        gone = not FileSystems.exists(path)
    except Exception:  # the filesystem cannot tell: the read's own error says what happened
        gone = False
    if gone:
        return InputChanged(path, "removed after the job listed it")
    return InputUnreadable(path, f"{what} ({type(err).__name__}: {err})")


def _row_group_offset(row_group: pq.RowGroupMetaData) -> int:
    """Where a row group starts in its file (as Beam's ``_ParquetUtils.get_offset``); 0 for a row
    group of no column (a file of no column: it holds no data)."""
    if row_group.num_columns == 0:
        return 0
    first = row_group.column(0)
    return first.dictionary_page_offset if first.has_dictionary_page else first.data_page_offset


class _ReadRowGroupsDoFn(beam.DoFn):
    """Rows of a range of row groups (see :class:`ReadParquetRows`); the file is opened once for
    the range, and its fingerprint checked against the listing's."""

    def __init__(
        self, columns: list[str] | None, rename: Mapping[str, str], text_limits: Mapping[str, int] | None = None
    ) -> None:
        self._columns = columns
        self._rename = rename
        self._text_limits = dict(text_limits or {})

    def process(self, row_groups: tuple[Any, ...]) -> Iterator[dict[str, Any]]:
        path, start, stop, listed, *rows = row_groups
        # The footer is parsed once per range, not once per row group: that would make a file
        # of n row groups cost n footers of n row groups each (8,000 row groups of one row:
        # 145 s, against about 1 s).
        try:
            f = _open_parquet(path)
        except OSError as err:
            raise _unreadable(path, "cannot be opened", err) from err
        with f:
            try:
                fingerprint = parquet_fingerprint(f)
            except (OSError, ValueError) as err:
                raise InputChanged(path, f"no longer Parquet ({type(err).__name__}: {err})") from err
            if fingerprint != listed:
                raise InputChanged(path, _change(listed, fingerprint))
            try:
                parquet = pq.ParquetFile(f, page_checksum_verification=True)
            except (OSError, ValueError, pa.ArrowException) as err:
                raise _unreadable(path, "not a readable Parquet file", err) from err
            with parquet:
                if rows:  # some rows of one row group
                    columns, num_rows = _read_row_range(
                        path, parquet, start, (rows[0], rows[1]), self._columns, self._rename, self._text_limits
                    )
                    yield from release_rows(columns, num_rows)
                    return
                for index in range(start, stop):
                    columns, num_rows = _read_row_group(
                        path, parquet, index, self._columns, self._rename, self._text_limits
                    )
                    yield from release_rows(columns, num_rows)
                    del columns


def range_key(row_groups: tuple) -> int:
    """A 63-bit key of a range of row groups (any tuple of text and integers: the first 63 bits of
    the sha256 of its ``repr``), compact in a shuffle where the range itself (path and
    fingerprint) would be about 150 bytes an element. Ranges sharing a key (about one chance in
    10^7 for a million ranges) are only read together."""
    return int.from_bytes(hashlib.sha256(repr(row_groups).encode("utf-8", "surrogatepass")).digest()[:8], "big") >> 1


class _KeyedReadRowGroupsDoFn(_ReadRowGroupsDoFn):
    """``(range key, row)`` for each row of a range (as :class:`_ReadRowGroupsDoFn`; :func:`range_key`)."""

    def process(self, row_groups: tuple[Any, ...]) -> Iterator[tuple[int, Any]]:  # type: ignore[override]
        key = range_key(row_groups)
        for row in super().process(row_groups):
            yield key, row


class _ReadNotedRowGroupsDoFn(_ReadRowGroupsDoFn):
    """``(row, note)`` for each row of the ranges of one key joined with their notes (``(key,
    {"range": [range, ...], "notes": [(id, note), ...]})``, a ``CoGroupByKey``'s output): the note
    of the row's id, or ``None``. Only these ranges' notes are held while they are read (a note
    belongs to an id, so ranges sharing a key may share their notes)."""

    def process(self, element) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]
        _, groups = element
        notes = dict(groups["notes"])
        for row_groups in groups["range"]:
            for row in super().process(row_groups):
                yield row, notes.get(id_as_text(row.get("id"))[0]) if notes else None


def _change(listed: str, found: str) -> str:
    """What differs between two fingerprints, in words."""
    listed_size, found_size = listed.partition(":")[0], found.partition(":")[0]
    if listed_size != found_size:
        return f"{listed_size} bytes when listed, {found_size} bytes when read again"
    return f"rewritten after the job listed it (its footer differs; {found_size} bytes both times)"


def _read_row_group(
    path: str,
    parquet: pq.ParquetFile,
    index: int,
    columns: list[str] | None,
    rename: Mapping[str, str],
    text_limits: Mapping[str, int] | None = None,
) -> tuple[dict[str, list[Any]], int]:
    """One row group's columns as Python values (renamed), and its row count; nothing of Arrow's
    is referenced when this returns but the values over ``text_limits`` (their column's buffer,
    as :class:`~transforms.columns.ArrowText`), and the pool's unused memory is handed back.

    Raises:
        InputUnreadable: A page fails its checksum, or cannot be decoded, or the pages hold
            another number of rows than the footer lists.
    """
    try:
        # One thread: with Arrow's thread pool some of the read's buffers (3 times a 5 MB
        # column, measured) are freed by pool threads after the table is returned, so they would
        # still be allocated when the rows are handed on. Decoding is about 0.1 s of CPU for all
        # of docs.parquet either way.
        table = parquet.read_row_group(index, columns=columns, use_threads=False)
    except (OSError, ValueError, pa.ArrowException) as err:
        raise _unreadable(path, f"row group {index} cannot be read", err) from err
    # Arrow's pool (mimalloc) keeps freed buffers resident: hand back the read's (the compressed
    # and decompressed pages, 2 times the table for one 50 MB document) before the Python
    # values are made, and the table's and the conversions' casts before the rows go on.
    listed = parquet.metadata.row_group(index).num_rows
    if table.num_rows != listed:  # (Arrow stops at the pages' end, silently)
        raise InputUnreadable(path, f"row group {index} holds {table.num_rows} rows, its footer lists {listed}")
    pool = pa.default_memory_pool()
    pool.release_unused()
    num_rows = table.num_rows
    values = table_columns(table, rename, text_limits=text_limits)
    del table
    pool.release_unused()
    return values, num_rows


def _read_row_range(
    path: str,
    parquet: pq.ParquetFile,
    index: int,
    rows: tuple[int, int],
    columns: list[str] | None,
    rename: Mapping[str, str],
    text_limits: Mapping[str, int] | None = None,
) -> tuple[dict[str, list[Any]], int]:
    """The rows ``first <= r < stop`` of one row group as :func:`_read_row_group` gives a whole
    one. The row group is decoded in record batches of ``stop - first`` rows
    (``ParquetFile.iter_batches``), the batches before ``first`` dropped as they come, and the read
    stops at ``stop``: at most one batch of Arrow data is held beyond the range's own, never the
    whole row group decoded.

    Raises:
        InputUnreadable: A page fails its checksum, or cannot be decoded, or the pages hold fewer
            rows than the footer lists.
    """
    first, stop = rows
    parts: list[pa.RecordBatch] = []
    position = 0
    try:
        batches = parquet.iter_batches(
            batch_size=max(1, stop - first), row_groups=[index], columns=columns, use_threads=False
        )
        for batch in batches:
            end = position + batch.num_rows
            if end > first:
                skip = max(first - position, 0)
                parts.append(batch.slice(skip, min(stop, end) - position - skip))
            del batch
            position = end
            if position >= stop:
                break
        del batches
    except (OSError, ValueError, pa.ArrowException) as err:
        raise _unreadable(path, f"row group {index} cannot be read", err) from err
    if position < stop:  # the pages end before the rows the footer lists (Arrow stops silently)
        raise InputUnreadable(path, f"row group {index} holds {position} rows, its footer lists at least {stop}")
    pool = pa.default_memory_pool()
    pool.release_unused()
    if not parts:
        return {}, 0
    table = pa.Table.from_batches(parts)
    del parts
    num_rows = table.num_rows
    values = table_columns(table, rename, text_limits=text_limits)
    del table
    pool.release_unused()
    return values, num_rows
