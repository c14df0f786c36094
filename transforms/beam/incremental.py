"""Incremental re-chunking (``--previous``) as Beam transforms: :class:`PreviousManifestNotes`,
:class:`CompareWithPrevious`, :class:`ListDeleted`.

The keys and rows are Beam-free (``transforms.incremental``): a document whose key matches the
earlier run's manifest keeps its earlier chunks, copied as Arrow tables; the rest is chunked.
Every decision is a keyed join by document id (a shuffle of ids and a few integers per
document), never a side input a worker holds whole: memory per worker does not grow with the
corpus.
"""

from __future__ import annotations

import contextlib
import dataclasses
import struct
from collections.abc import Iterator, Mapping
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io import fileio
from apache_beam.io.filesystem import FileMetadata
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import AsSingleton, TaggedOutput

from transforms.admission import id_as_text
from transforms.beam.chunk import shared_tokenizer
from transforms.beam.coders import typed_main_output
from transforms.beam.outputs import counter
from transforms.beam.read import range_key
from transforms.chunkers.base import ChunkingError
from transforms.chunkers.registry import build_router
from transforms.chunkers.router import ChunkerRouter
from transforms.documents import CHUNK_SCHEMA, Document
from transforms.incremental import (
    manifest_row,
    pack_entry,
    previous_files,
    stale_chunk_ids,
    unchanged_key,
    unpack_entry,
)
from transforms.integrity import (
    DamagedPreviousOutput,
    add_index_set_digests,
    digest_key,
    index_set_digest,
    kept_chunk_problem,
    kept_count_problem,
)
from transforms.progress import ProgressLog, shared_progress

__all__ = [
    "KEPT_CHUNKS",
    "KEPT_MANIFEST",
    "PREVIOUS_IDS",
    "UNIT_ROWS",
    "CompareWithPrevious",
    "ListDeleted",
    "PreviousManifestNotes",
]

#: Tags of :class:`CompareWithPrevious`'s outputs besides the documents to chunk.
KEPT_CHUNKS = "kept_chunks"
KEPT_MANIFEST = "kept_documents"
PREVIOUS_IDS = "previous_chunk_ids"
_KEPT = "kept"
_WHERE = "where"

#: Rows of the previous ``chunks/`` read as one unit (consecutive row groups of one file, at least
#: one): a unit's reader holds the kept ids of its own rows only.
UNIT_ROWS = 65_536

#: A kept document's value in the joins, packed (bytes, not a tuple of Python integers: a keyed
#: join holds every value, encoded and decoded): its :func:`~transforms.integrity.digest_key`
#: and its manifest chunk count.
_KEPT_VALUE = struct.Struct(">QI")
#: Rows of one kept document found in one table: their count and
#: :func:`~transforms.integrity.index_set_digest`.
_FOUND_VALUE = struct.Struct(">IQ")


def _manifest_entries(table: pa.Table) -> Iterator[tuple[str, bytes]]:
    """``(document_id, entry)`` for each row of a manifest table, ``entry`` its ``unchanged_key``
    and ``chunk_count`` packed (:func:`~transforms.incremental.pack_entry`). A row with a null
    field or a chunk count out of range (a hand-edited manifest) gives nothing: its document is
    chunked afresh."""
    rows = table.select(["document_id", "document_hash", "input_fingerprint", "chunk_count"]).to_pylist()
    for row in rows:
        count = row["chunk_count"]
        if None in row.values() or not 0 < count < 1 << 32:
            continue
        yield row["document_id"], pack_entry(unchanged_key(row), count)


def _row_id(element) -> Iterator[tuple[str, int]]:
    """``(id, range key)`` of a ``(range key, {"id": value})`` pair, for an id admission could accept."""
    key, row = element
    text = id_as_text(row.get("id"))[0]
    if text:
        yield text, key


def _notes_by_range(element) -> Iterator[tuple[int, tuple[str, bytes]]]:
    """``(range key, (id, entry))`` for each range that holds an id the manifest lists once
    (several differing rows of one id, a hand edit, give no note: the document is chunked afresh)."""
    document_id, groups = element
    entries = set(groups["manifest"])
    if len(entries) != 1:
        return
    (entry,) = entries
    for row_groups in set(groups["ids"]):
        yield row_groups, (document_id, entry)


class PreviousManifestNotes(beam.PTransform):
    """The previous manifest's entry of each input id, joined by id and sent to the id's range.

    Input: ``(range key, {"id": value})`` pairs (``ReadDocumentsAndIds``'s ids read). Output:
    ``(range key, (document_id, entry))`` for each id the manifest lists (``CoGroupByKey`` by
    document id of the ids and the manifest's rows, each reduced to its ``unchanged_key`` and
    ``chunk_count`` packed in 20 bytes: :func:`~transforms.incremental.pack_entry`),
    for ``ReadDocumentsAndIds(row_notes=...)`` to hand each document its entry as it is read.

    Args:
        previous: The earlier run's output directory (``documents/``), any Beam filesystem.
    """

    def __init__(self, previous: str) -> None:
        super().__init__()
        self._previous = previous

    def expand(self, ids):
        manifest = _read_previous(
            ids.pipeline,
            "previous manifest",
            previous_files(self._previous, "documents"),
            ["document_id", "document_hash", "input_fingerprint", "chunk_count"],
        ) | "Manifest entries" >> beam.FlatMap(_manifest_entries)
        return (
            {"ids": ids | "Ids and ranges" >> beam.FlatMap(_row_id), "manifest": manifest}
            | "Join manifest by id" >> beam.CoGroupByKey()
            | "Notes by range" >> beam.FlatMap(_notes_by_range)
        )


class _SelectChangedDoFn(beam.DoFn):
    """Pass on the documents to chunk; for an unchanged one, emit its manifest row and its kept
    entry instead.

    ``setup()`` builds the router (to route documents as chunking will); ``teardown()`` closes
    the models it built and drops it.
    """

    def __init__(
        self, spec: Mapping[str, Any], progress_seconds: float = 0, documents_total: int | None = None
    ) -> None:
        self._progress_args = (progress_seconds, documents_total)
        self._spec = dict(spec)
        self._max_tokens = spec["max_tokens"]
        self._skipped = counter("documents_skipped_unchanged")
        self._chunked = counter("documents_chunked")
        self._changed = counter("incremental.documents_changed")
        self._router: ChunkerRouter | None = None
        self._progress: ProgressLog | None = None

    def setup(self) -> None:
        self._progress = shared_progress(*self._progress_args)
        self._router = build_router(self._spec, tokenizer=shared_tokenizer(self._spec["tokenizer"]))

    def teardown(self) -> None:
        if self._router is not None:
            self._router.close()
        self._router = self._progress = None

    def process(self, document: Document, tokenizer_identity: str):
        router, progress = self._router, self._progress
        assert router is not None and progress is not None, "process() before setup()"
        if document.previous is None:  # counted as new once chunked (a dead-lettered one is not new)
            yield dataclasses.replace(document, previous_run="new")
            return
        key, chunk_count = unpack_entry(document.previous)
        document = dataclasses.replace(document, previous=None)
        try:
            _, chunker = router.select(document)
        except ChunkingError:  # chunking will dead-letter it, with the reason
            self._changed.inc()
            yield document
            return
        row = manifest_row(
            document,
            chunker=chunker.name,
            chunker_config_hash=chunker.config_hash,
            tokenizer=tokenizer_identity,
            max_tokens=self._max_tokens,
            chunk_count=chunk_count,
            libraries=chunker.fingerprint_libraries,
        )
        if unchanged_key(row) != key:
            self._changed.inc()
            yield document
            return
        self._skipped.inc()
        self._chunked.inc()
        progress.add(documents=1, chunks=chunk_count)  # (chunks_written counts the rows copied)
        yield TaggedOutput(KEPT_MANIFEST, row)
        yield TaggedOutput(_KEPT, (document.id, _KEPT_VALUE.pack(digest_key(row["document_hash"]), chunk_count)))


def split_kept(table: pa.Table, hashes: Mapping[str, int]) -> Iterator[Any]:
    """Split a previous chunk table: the rows of kept documents (one ``CHUNK_SCHEMA`` table,
    checked by :func:`~transforms.integrity.kept_chunk_problem`), then ``TaggedOutput(PREVIOUS_IDS,
    (document_id, (chunk_index, chunk_id)))`` of every other row.

    Args:
        table: Rows of a previous ``chunks/`` file.
        hashes: Kept document id -> :func:`~transforms.integrity.digest_key` of its hash, as this
            run computed it from the content (only the ids of ``table``'s rows are needed).

    Raises:
        DamagedPreviousOutput: A kept row fails the check.
    """
    ids = table.column("document_id").to_pylist()
    # (A row without a document id, which no rechunk run writes, belongs to no document: left out.)
    mask = pa.array([i in hashes for i in ids], pa.bool_())
    kept = table.filter(mask)
    if kept.num_rows:
        problem = kept_chunk_problem(kept, hashes)
        if problem is not None:
            raise DamagedPreviousOutput("chunks/", problem)
        counter("chunks_written").inc(kept.num_rows)
        for chunker, n in zip(*_value_counts(kept.column("chunker"))):
            counter(f"chunks_by_chunker.{chunker}").inc(n)
        yield kept.select(CHUNK_SCHEMA.names).cast(CHUNK_SCHEMA)
    if kept.num_rows < table.num_rows:
        rest = pc.and_(pc.invert(mask), pc.is_valid(table.column("document_id")))
        others = table.select(["document_id", "chunk_index", "chunk_id"]).filter(rest)
        for document_id, index, chunk_id in zip(*(c.to_pylist() for c in others.columns)):
            yield TaggedOutput(PREVIOUS_IDS, (document_id, (index, chunk_id)))


@contextlib.contextmanager
def _open_checked(path: str) -> Iterator[pq.ParquetFile]:
    """A previous output's file open for reading, its pages' checksums verified as they are read."""
    with FileSystems.open(path) as f, pq.ParquetFile(f, page_checksum_verification=True) as parquet:
        yield parquet


class _ChunkUnitsDoFn(beam.DoFn):
    """The units of one previous ``chunks/`` file, ``(key, (path, start, stop))`` (consecutive row
    groups, :data:`UNIT_ROWS` rows or one row group; ``key``: its
    :func:`~transforms.beam.read.range_key`), and ``TaggedOutput(_WHERE, (document_id, key))`` for
    each document with rows in a unit; only the ``document_id`` column is read (pages checked). A
    file that cannot be read raises :class:`~transforms.integrity.DamagedPreviousOutput`."""

    def process(self, metadata: FileMetadata):
        path = metadata.path
        try:
            with _open_checked(path) as parquet:
                footer = parquet.metadata
                start, rows, ids = 0, 0, set()
                for index in range(footer.num_row_groups):
                    column = parquet.read_row_group(index, columns=["document_id"], use_threads=False)
                    ids.update(column.column("document_id").unique().drop_null().to_pylist())
                    rows += footer.row_group(index).num_rows
                    if rows >= UNIT_ROWS or index == footer.num_row_groups - 1:
                        unit = (path, start, index + 1)
                        key = range_key(unit)
                        yield key, unit
                        for document_id in sorted(ids):
                            yield TaggedOutput(_WHERE, (document_id, key))
                        start, rows, ids = index + 1, 0, set()
        except (OSError, ValueError, pa.ArrowException) as err:
            raise DamagedPreviousOutput(path, f"{type(err).__name__}: {err}") from err


def _kept_by_unit(element) -> Iterator[tuple[int, tuple[str, int]]]:
    """``(unit key, (document_id, digest))`` for each unit holding rows of a kept document."""
    document_id, groups = element
    kept = next(iter(groups["kept"]), None)
    if kept is not None:
        digest, _ = _KEPT_VALUE.unpack(kept)
        for unit in set(groups["where"]):
            yield unit, (document_id, digest)


class _KeptChunksDoFn(beam.DoFn):
    """The units of a previous ``chunks/`` file of one key joined with their kept documents
    (``(key, {"unit": [(path, start, stop), ...], "kept": [(document_id, digest), ...]})``), read
    a row group at a time with checksums verified and split by :func:`split_kept`."""

    def process(self, element):
        _, groups = element
        hashes = dict(groups["kept"])
        for path, start, stop in groups["unit"]:
            try:
                with _open_checked(path) as parquet:
                    for index in range(start, stop):
                        table = parquet.read_row_group(index)
                        yield from split_kept(table, hashes)
            except (OSError, ValueError, pa.ArrowException) as err:
                raise DamagedPreviousOutput(path, f"{type(err).__name__}: {err}") from err


def _kept_rows_found(table) -> Iterator[tuple[str, bytes]]:
    """Per kept document in one table of kept chunks (a pyarrow table): ``(document_id, found)``,
    ``found`` its rows' count and :func:`~transforms.integrity.index_set_digest` of their
    ``chunk_index`` values, packed (:data:`_FOUND_VALUE`)."""
    # (``table`` has no type hint: Beam would hold the kept-chunks ParDo's other outputs to it.)
    found: dict[str, list[int]] = {}
    for document_id, index in zip(table.column("document_id").to_pylist(), table.column("chunk_index").to_pylist()):
        found.setdefault(document_id, []).append(index)
    for document_id, indexes in found.items():
        yield document_id, _FOUND_VALUE.pack(len(indexes), index_set_digest(indexes))


def _check_kept_counts(element) -> Iterator[None]:
    """Raise :class:`~transforms.integrity.DamagedPreviousOutput` when a kept document's rows in
    ``chunks/`` are not its manifest row's ``chunk_count`` chunks (none found included). The rows
    found in each table are added up here, in the join (digests add in any order), streamed from
    the grouped values, not held."""
    document_id, groups = element
    rows, digest = 0, 0
    for found in groups["found"]:
        part_rows, part_digest = _FOUND_VALUE.unpack(found)
        rows, digest = rows + part_rows, add_index_set_digests(digest, part_digest)
    for expected in groups["expected"]:
        _, chunk_count = _KEPT_VALUE.unpack(expected)
        problem = kept_count_problem(document_id, chunk_count, rows, digest)
        if problem is not None:
            raise DamagedPreviousOutput("chunks/", problem)
    yield from ()


def _value_counts(column: pa.ChunkedArray) -> tuple[list[str], list[int]]:
    """The distinct values of ``column`` and how many rows hold each."""
    counts = pc.value_counts(column)
    return counts.field("values").to_pylist(), counts.field("counts").to_pylist()


class _ReadCheckedTablesDoFn(beam.DoFn):
    """Each row group of a previous output's file as a table (``columns`` only, all when ``None``),
    its pages' checksums verified; a file that cannot be read whole raises
    :class:`~transforms.integrity.DamagedPreviousOutput`."""

    def __init__(self, columns: list[str] | None = None) -> None:
        self._columns = columns

    def process(self, metadata: FileMetadata) -> Iterator[pa.Table]:
        try:
            with _open_checked(metadata.path) as parquet:
                for index in range(parquet.metadata.num_row_groups):
                    yield parquet.read_row_group(index, columns=self._columns)
        except (OSError, ValueError, pa.ArrowException) as err:
            raise DamagedPreviousOutput(metadata.path, f"{type(err).__name__}: {err}") from err


def _match_previous(pipeline, label: str, pattern: str):
    """The files of a previous output matching ``pattern``, spread over the workers."""
    return (
        pipeline
        | f"Match {label}" >> fileio.MatchFiles(pattern, empty_match_treatment=fileio.EmptyMatchTreatment.ALLOW)
        | f"Spread {label}" >> beam.Reshuffle()
    )


def _read_previous(pipeline, label: str, pattern: str, columns: list[str] | None = None):
    """The tables of a previous output's files matching ``pattern``, checked as they are read."""
    return _match_previous(pipeline, label, pattern) | f"Read {label}" >> beam.ParDo(
        _ReadCheckedTablesDoFn(columns)
    ).with_output_types(pa.Table)


class CompareWithPrevious(beam.PTransform):
    """Keep an earlier run's chunks of every unchanged document; pass the rest on to chunking.

    Every decision is a keyed join by document id, so no worker holds the manifest or the kept
    ids whole. Each document arrives with its previous manifest entry (``Document.previous``,
    joined to it by id before it was read: :class:`PreviousManifestNotes`). A document whose key
    still matches (``transforms.incremental``: same content hash and input fingerprint) is not
    chunked again; its previous chunks are copied from the earlier ``chunks/`` as Arrow tables,
    never turned into Python rows: the ``document_id`` column of ``chunks/`` is read first, by
    units of :data:`UNIT_ROWS` rows, and joined by id with the kept documents
    (``CoGroupByKey``), then each unit, joined with its own kept ids by unit, is read and split.
    Each kept document's rows are counted and joined with its manifest row's count.

    Input: :class:`Document`. Output (a dict): ``documents`` (the documents to chunk),
    ``kept_chunks`` (pyarrow tables, ``CHUNK_SCHEMA``), ``kept_documents`` (manifest row dicts)
    and ``previous_chunk_ids`` (``(document_id, (chunk_index, chunk_id))`` of every previous
    chunk not kept, to list what the new output no longer holds).

    Args:
        previous: The earlier run's output directory (``chunks/`` and ``documents/``), any Beam filesystem.
        spec: The resolved configuration (to route documents as the chunking step will).
        tokenizer_identity: Singleton PCollection of the job's tokenizer identity.
        progress_seconds, documents_total: Kept documents count in the progress lines
            (``transforms.progress``).
    """

    def __init__(
        self,
        previous: str,
        spec: Mapping[str, Any],
        tokenizer_identity,
        *,
        progress_seconds: float = 0,
        documents_total: int | None = None,
    ) -> None:
        super().__init__()
        self._progress_args = (progress_seconds, documents_total)
        self._previous = previous
        self._spec = spec
        self._identity = tokenizer_identity

    def expand(self, documents):
        pipeline = documents.pipeline
        selected = typed_main_output(
            documents
            | "Select changed"
            >> beam.ParDo(
                _SelectChangedDoFn(self._spec, *self._progress_args), AsSingleton(self._identity)
            ).with_outputs(KEPT_MANIFEST, _KEPT, main="documents"),
            "documents",
            Document,
        )
        units = _match_previous(pipeline, "previous chunks", previous_files(self._previous, "chunks")) | (
            "Chunk ids by unit" >> beam.ParDo(_ChunkUnitsDoFn()).with_outputs(_WHERE, main="units")
        )
        kept_by_unit = (
            {"kept": selected[_KEPT], "where": units[_WHERE]}
            | "Join kept ids with their units" >> beam.CoGroupByKey()
            | "Kept ids by unit" >> beam.FlatMap(_kept_by_unit)
        )
        kept = typed_main_output(
            {"unit": units.units, "kept": kept_by_unit}
            | "Join units with their kept ids" >> beam.CoGroupByKey()
            | "Keep unchanged" >> beam.ParDo(_KeptChunksDoFn()).with_outputs(PREVIOUS_IDS, main="chunks"),
            "chunks",
            pa.Table,
        )
        # (Counted in a step of its own: Beam's runtime type check holds every output of a ParDo
        # to the input hints of all its consumers. The counts of a document's tables are added up
        # in the join itself: a combine before it would be one more shuffle of every kept id.)
        found = kept.chunks | "Count kept rows" >> beam.FlatMap(_kept_rows_found)
        _ = (
            {"expected": selected[_KEPT], "found": found}
            | "Join kept counts" >> beam.CoGroupByKey()
            | "Check kept counts" >> beam.FlatMap(_check_kept_counts)
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
        counter("incremental.chunks_deleted").inc(len(stale))
        if not current:
            counter("incremental.documents_deleted").inc()
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
