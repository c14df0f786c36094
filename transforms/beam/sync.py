"""A vector store kept equal to a run's chunks, as Beam transforms: :class:`SyncVectorStore`.

The graph::

    chunk rows (key -> row) ---------------\\
    the store's keys, 16 shards read apart --> CoGroupByKey -> plan (transforms.sync.plan)
        embed  -> batches -> embed (the model built once per worker) ---\\
        update -> batches -> the stored vectors read back ---------------> upsert (UpsertRows)
        reuse  -> counted                                                      |
        delete -> held until every upsert is done (a side input of their total) and the chunk
                  rows read are counted (equal to the run's, or the sync fails) -> DeleteKeys

Which keys the store holds and which to delete are decided by a keyed join, so no worker holds
the store's keys or the run's chunks whole. A failed run leaves every row it did not reach as it
was: the deletes wait for the total of every write, which exists only once all of them succeeded,
so a document whose chunks did not change keeps every row searchable, and a rerun converges. With
a claim (``VectorStore.claim_sync``), writes and deletes stop once the claim ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import apache_beam as beam
from apache_beam.pvalue import AsSingleton, TaggedOutput

from transforms.beam.outputs import counter
from transforms.beam.stores import DeleteKeys, StoreDoFn, UpsertRows
from transforms.stores.base import StoreRow
from transforms.sync import plan, store_fingerprint

__all__ = ["SHARDS", "SYNC_COUNTERS", "SyncVectorStore"]

#: The store's keys are read in this many shards (by the key's first hex digit), on any worker,
#: and one more for keys that start with no hex digit (rows no rechunk run wrote).
SHARDS = 16

#: Counters of a sync (namespace ``rechunk``), read into the report's ``embedding`` and
#: ``vector_store`` sections.
SYNC_COUNTERS = (
    "embedding.chunks_embedded",
    "embedding.chunks_reused",
    "vector_store.upserted",
    "vector_store.updated",
    "vector_store.deleted",
)

#: Chunk rows per call of the embedding model and per read of stored vectors.
_BATCH = 64


def _store_row(row: Mapping[str, Any], vector: Sequence[float]) -> StoreRow:
    """The store's row of a chunk row and its vector."""
    return StoreRow(
        chunk_key=row["chunk_key"],
        chunk_id=row["chunk_id"],
        document_id=row["document_id"],
        text=row["text"],
        embedding_text=row["embedding_text"],
        metadata=row["metadata"] or "{}",
        fingerprint=store_fingerprint(row),
        vector=tuple(float(x) for x in vector),
    )


class _StoredKeysDoFn(StoreDoFn):
    """A shard number in; the ``(chunk_key, fingerprint)`` pairs of that shard of the store out."""

    def process(self, shard: int) -> Iterator[tuple[str, str]]:
        yield from self.opened().stored(shard, SHARDS)


class _PlanDoFn(beam.DoFn):
    """A key with this run's rows and the store's fingerprints in; the row (or the key, for a
    delete) out on the output named by :func:`transforms.sync.plan`."""

    def __init__(self, store_type: str) -> None:
        self._store_type = store_type

    def setup(self) -> None:
        # Counted as planned: the report exists only for a sync whose every write and delete
        # succeeded, so each planned row was written (or deleted) once.
        self._counters = {
            "embed": counter("vector_store.upserted"),
            "update": counter("vector_store.updated"),
            "reuse": counter("embedding.chunks_reused"),
            "delete": counter("vector_store.deleted"),
        }

    def process(self, element: tuple[str, Mapping[str, Iterable[Any]]]) -> Iterator[Any]:
        key, joined = element
        action, row = plan(key, joined["produced"], joined["stored"])
        if row is not None and action in ("embed", "update"):
            _check_limits(self._store_type, row)
        self._counters[action].inc()
        if action == "update":  # its vector is reused too
            self._counters["reuse"].inc()
        yield TaggedOutput(action, key if row is None else row)


def _check_limits(store_type: str, row: Mapping[str, Any]) -> None:
    """Raise when the store cannot hold the chunk row (a chunk the validation step let through
    before a store was configured, kept since by ``--previous``).

    Raises:
        ValueError: Naming the chunk and the limit.
    """
    from transforms.stores.limits import store_limit_problem

    problem = store_limit_problem(
        store_type,
        document_id=row["document_id"],
        chunk_id=row["chunk_id"],
        text=row["text"],
        embedding_text=row["embedding_text"],
        metadata=row["metadata"] or "{}",
    )
    if problem:
        raise ValueError(
            f"chunk {row['chunk_index']} of document {row['document_id']!r:.200} (chunk_key {row['chunk_key']}): {problem}; "
            "run without --previous to dead-letter it"
        )


class _EmbedDoFn(beam.DoFn):
    """A batch of chunk rows in; their store rows, each with the vector of its ``embedding_text``, out.

    The model is built in ``setup()`` from the configuration's ``models:`` entry (once per
    worker) and closed in ``teardown()``. Each row's ``token_count`` (the validation step's
    recount in the model's own tokens) must be within the model's window: a chunk the model
    would truncate is never embedded.

    Raises:
        ValueError: A chunk is over the model's window, or the model gave another number of
            vectors, or vectors of another dimension.
    """

    def __init__(self, models: Mapping[str, Any], model: str, window: int, dimension: int | None) -> None:
        self._models_spec = dict(models)
        self._name = model
        self._window = window
        self._dimension = dimension
        self._models: dict[str, Any] = {}

    def setup(self) -> None:
        from transforms.models.registry import build_models

        self._models = build_models({self._name: self._models_spec[self._name]})
        self._embedded = counter("embedding.chunks_embedded")

    def process(self, batch: Sequence[Mapping[str, Any]]) -> Iterator[Any]:
        for row in batch:
            if row["token_count"] is None or row["token_count"] > self._window:
                raise ValueError(
                    f"chunk {row['chunk_index']} of document {row['document_id']!r} has {row['token_count']} tokens, "
                    f"over the embedding model's window of {self._window}: it would be truncated"
                )
        vectors = self._models[self._name].embed([row["embedding_text"] for row in batch])
        if len(vectors) != len(batch):
            raise ValueError(f"the embedding model gave {len(vectors)} vectors for {len(batch)} texts")
        for row, vector in zip(batch, vectors):
            if self._dimension is not None and len(vector) != self._dimension:
                raise ValueError(
                    f"the embedding model gave a vector of {len(vector)} dimensions, not {self._dimension}"
                )
            self._embedded.inc()
            yield _store_row(row, vector)

    def teardown(self) -> None:
        for model in self._models.values():
            close = getattr(model, "close", None)
            if close is not None:
                close()
        self._models = {}


class _StoredVectorsDoFn(StoreDoFn):
    """A batch of chunk rows whose key the store holds in; their store rows with the stored vectors out.

    Raises:
        ValueError: A key's row left the store while the run read it (another writer).
    """

    def process(self, batch: Sequence[Mapping[str, Any]]) -> Iterator[Any]:
        vectors = self.opened().vectors([row["chunk_key"] for row in batch])
        for row in batch:
            if row["chunk_key"] not in vectors:
                raise ValueError(
                    f"chunk_key {row['chunk_key']} left {self.opened().described} while this run read it: "
                    "another writer is using the store"
                )
            yield _store_row(row, vectors[row["chunk_key"]])


def _after_writes(key: str, written: int, rows_read: int, expected_rows: int | None) -> str:
    """A key to delete, passed on only once ``written`` (every write's total) exists, and only
    when the sync read the chunk rows it was told to expect.

    Raises:
        ValueError: ``rows_read`` is not ``expected_rows`` (the chunks changed under the sync):
            the pipeline fails before any delete.
    """
    del written
    if expected_rows is not None and rows_read != expected_rows:
        raise ValueError(
            f"the sync read {rows_read:,} chunk rows, not the {expected_rows:,} the run wrote and verified "
            "(its chunks changed while it synced): no key deleted"
        )
    return key


class SyncVectorStore(beam.PTransform):
    """Make a vector store hold exactly the chunks of a PCollection of chunk rows.

    Input: chunk rows as dicts with at least :data:`transforms.sync.STORE_COLUMNS`,
    ``chunk_index``, ``token_count``. Output: the counts of the deletes (one per batch), for
    whoever wants to wait for the end. The store must exist (``prepare()``d with the model) before
    the pipeline runs. Counters: :data:`SYNC_COUNTERS`.

    Args:
        store_spec: The checked ``vector_store:`` section (:func:`transforms.stores.check_store_spec`).
        models: The configuration's ``models:`` section.
        model: The name under ``models:`` of the embedding model.
        window: The model's input window in its own tokens (special tokens included).
        dimension: The model's vector size, when known.
        expected_rows: The number of chunk rows the input must hold (the run's verified
            ``chunks_written``); when given, a sync that reads another number fails before any
            delete, so chunks removed or replaced under it never empty the store.
        claim: The sync's claim on the store (:meth:`VectorStore.claim_sync`): its writes and
            deletes stop once the claim ends (the launching process gone).
    """

    def __init__(
        self,
        store_spec: Mapping[str, Any],
        *,
        models: Mapping[str, Any],
        model: str,
        window: int,
        dimension: int | None = None,
        expected_rows: int | None = None,
        claim: str | None = None,
    ) -> None:
        super().__init__()
        self._claim = claim
        self._store_spec = dict(store_spec)
        self._models = dict(models)
        self._model = model
        self._window = window
        self._dimension = dimension
        self._expected_rows = expected_rows

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        produced = rows | "Key chunks" >> beam.Map(lambda row: (row["chunk_key"], row))
        stored = (
            rows.pipeline
            | "Store shards" >> beam.Create(list(range(SHARDS + 1)))  # the last: keys of no hex prefix
            | "Spread shards" >> beam.Reshuffle()
            | "Read stored keys" >> beam.ParDo(_StoredKeysDoFn(self._store_spec))
        )
        planned = (
            {"produced": produced, "stored": stored}
            | "Join by key" >> beam.CoGroupByKey()
            | "Plan"
            >> beam.ParDo(_PlanDoFn(self._store_spec["type"])).with_outputs("embed", "update", "reuse", "delete")
        )
        embedded = (
            planned.embed
            | "Batch to embed" >> beam.BatchElements(min_batch_size=1, max_batch_size=_BATCH)
            | "Embed" >> beam.ParDo(_EmbedDoFn(self._models, self._model, self._window, self._dimension))
        )
        updated = (
            planned.update
            | "Batch to update" >> beam.BatchElements(min_batch_size=1, max_batch_size=_BATCH)
            | "Read stored vectors" >> beam.ParDo(_StoredVectorsDoFn(self._store_spec))
        )
        written = (
            (embedded, updated)
            | "Rows to write" >> beam.Flatten()
            | "Upsert" >> UpsertRows(self._store_spec, claim=self._claim)
            | "Rows written" >> beam.CombineGlobally(sum)
        )
        rows_read = rows | "Count chunk rows" >> beam.combiners.Count.Globally()
        return (
            planned.delete
            | "After every write"
            >> beam.Map(_after_writes, AsSingleton(written), AsSingleton(rows_read), self._expected_rows)
            | "Delete" >> DeleteKeys(self._store_spec, claim=self._claim)
        )
