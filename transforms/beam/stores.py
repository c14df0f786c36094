"""Beam writers for vector stores: `UpsertRows` (StoreRow -> written counts) and `DeleteKeys` (chunk_key -> deleted counts).

Both emit one count per written batch or bundle, so the counts' sum is the number of rows written
(or keys deleted) once the step has finished: a combined total usable as a side input that gates a
later step. A bundle whose write fails fails whole, and its counts are dropped with it.

Milvus rows go through Beam's own writer (`apache_beam.ml.rag.ingestion`'s
`VectorDatabaseWriteTransform` with `MilvusVectorWriterConfig`), pgvector rows through our batched
DoFn over `PgvectorStore.upsert` (Beam's Postgres writer needs a Java expansion service). A Milvus
Lite file must be written in the launching process: see `transforms.stores.milvus`.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

from transforms.stores import check_store_spec, open_store, store_password
from transforms.stores.base import StoreRow, VectorStore


class UpsertRows(beam.PTransform):
    """PCollection[StoreRow] (every row with a vector) -> PCollection[int]: rows written, one count per batch or bundle.

    `spec` is a `vector_store:` mapping (checked here, so a bad one raises ValueError when the
    pipeline is built). The collection must have been prepared (`VectorStore.prepare`). Milvus: a
    token from `password_env` is read when the pipeline is built and travels inside Beam's writer
    configuration; pgvector: the variable is read on the worker, in setup().
    """

    def __init__(self, spec: Mapping[str, Any], *, claim: str | None = None) -> None:
        super().__init__()
        self._spec = check_store_spec(spec)
        self._claim = claim

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        if self._spec["type"] == "milvus":
            from apache_beam.ml.rag.ingestion.base import VectorDatabaseWriteTransform

            # Beam warns, for its own transform, that a PTransform output hint will be ignored.
            with _without_output_hint_warning():
                write = VectorDatabaseWriteTransform(milvus_writer_config(self._spec))
                items = rows | "ToEmbeddableItems" >> beam.Map(to_embeddable_item)
                written = items | "WriteMilvus" >> write
            return written | "CountWritten" >> beam.ParDo(_CountPerBundle())
        return rows | "WriteRows" >> beam.ParDo(_WriteRowsFn(self._spec, claim=self._claim))


class _OutputHintWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "output type hint will be ignored" not in record.getMessage()


@contextlib.contextmanager
def _without_output_hint_warning() -> Iterator[None]:
    """Beam's warning about the output hint of its own ``VectorDatabaseWriteTransform``, left out
    of the job's log while that transform is built and applied."""
    found = _OutputHintWarning()
    root = logging.getLogger()
    root.addFilter(found)
    try:
        yield
    finally:
        root.removeFilter(found)


class DeleteKeys(beam.PTransform):
    """PCollection[str] (chunk_keys) -> PCollection[int]: keys deleted (held or not), one count per batch of `batch_size`."""

    def __init__(self, spec: Mapping[str, Any], *, claim: str | None = None) -> None:
        super().__init__()
        self._spec = check_store_spec(spec)
        self._claim = claim

    def expand(self, keys: beam.PCollection) -> beam.PCollection:
        return keys | "DeleteKeys" >> beam.ParDo(_DeleteKeysFn(self._spec, claim=self._claim))


def to_embeddable_item(row: StoreRow) -> Any:
    """A StoreRow as Beam's `EmbeddableItem`: id the chunk_key, content the text, the dense embedding the vector.

    The other columns ride in `metadata` under their own names (`metadata` parsed from its JSON text).
    Raises ValueError for a row without a vector.
    """
    from apache_beam.ml.rag.types import Content, EmbeddableItem, Embedding

    if row.vector is None:
        raise ValueError(f"chunk {row.chunk_key}: no vector to write")
    return EmbeddableItem(
        content=Content(text=row.text),
        id=row.chunk_key,
        metadata={
            "chunk_id": row.chunk_id,
            "document_id": row.document_id,
            "embedding_text": row.embedding_text,
            "metadata": json.loads(row.metadata),
            "fingerprint": row.fingerprint,
        },
        embedding=Embedding(dense_embedding=[float(value) for value in row.vector]),
    )


def milvus_writer_config(spec: Mapping[str, Any]) -> Any:
    """Beam's `MilvusVectorWriterConfig` for a checked milvus spec: our collection's fields as column specs, no sparse embedding.

    A Milvus Lite path is made absolute and its parent folder created.
    """
    from apache_beam.ml.rag.ingestion.jdbc_common import WriteConfig
    from apache_beam.ml.rag.ingestion.milvus_search import MilvusVectorWriterConfig, MilvusWriteConfig
    from apache_beam.ml.rag.ingestion.postgres_common import ColumnSpec
    from apache_beam.ml.rag.utils import MilvusConnectionParameters

    from transforms.stores.milvus import VECTOR_FIELD, client_uri

    columns = [
        ColumnSpec("chunk_key", str, _item_id),
        *(ColumnSpec(name, str, _ItemMetadata(name)) for name in ("chunk_id", "document_id")),
        ColumnSpec("text", str, _item_text),
        ColumnSpec("embedding_text", str, _ItemMetadata("embedding_text")),
        ColumnSpec("metadata", dict, _ItemMetadata("metadata")),
        ColumnSpec("fingerprint", str, _ItemMetadata("fingerprint")),
        ColumnSpec(VECTOR_FIELD, list, _item_vector),
    ]
    return MilvusVectorWriterConfig(
        connection_params=MilvusConnectionParameters(uri=client_uri(spec["uri"]), token=store_password(spec)),
        write_config=MilvusWriteConfig(
            collection_name=spec["collection"], write_config=WriteConfig(write_batch_size=spec["batch_size"])
        ),
        column_specs=columns,
    )


def _item_id(item: Any) -> str:
    return item.id


def _item_text(item: Any) -> str:
    return item.content.text


def _item_vector(item: Any) -> list[float]:
    return list(item.dense_embedding)


class _ItemMetadata:
    """The value of one metadata key of an EmbeddableItem (a picklable column value function)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, item: Any) -> Any:
        return item.metadata[self.name]


class _CountPerBundle(beam.DoFn):
    """Counts the elements of a bundle and emits the count (if any) when the bundle finishes."""

    def start_bundle(self) -> None:
        self._count = 0

    def process(self, element: object) -> Iterator[int]:
        self._count += 1
        return iter(())

    def finish_bundle(self) -> Iterable[WindowedValue]:
        if self._count:
            yield WindowedValue(self._count, GlobalWindow().max_timestamp(), (GlobalWindow(),))
        self._count = 0


class StoreDoFn(beam.DoFn):
    """A DoFn with the store of a checked `vector_store:` spec, opened in setup() as `self._store`
    and closed in teardown(); with `claim` (a sync's, from `VectorStore.claim_sync`), the store
    writes only while that claim holds (`VectorStore.write_for`)."""

    def __init__(self, spec: Mapping[str, Any], *, claim: str | None = None) -> None:
        self._spec = dict(spec)
        self._claim = claim
        self._store: VectorStore | None = None

    def setup(self) -> None:
        self._store = open_store(self._spec)
        self._store.write_for(self._claim)

    def opened(self) -> VectorStore:
        """The open store (between setup() and teardown()). A method, not a property: Beam
        inspects a DoFn's attributes when the pipeline is built, before setup()."""
        if self._store is None:
            raise RuntimeError("the store is opened in setup()")
        return self._store

    def teardown(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


class _BatchedStoreFn(StoreDoFn):
    """Buffers elements up to `batch_size` and hands each full buffer (and the rest at bundle end) to `_write`.

    Each written batch emits its size.
    """

    def __init__(self, spec: Mapping[str, Any], *, claim: str | None = None) -> None:
        super().__init__(spec, claim=claim)
        self._buffer: list[Any] = []

    def start_bundle(self) -> None:
        self._buffer = []

    def process(self, element: Any) -> Iterator[int]:
        self._buffer.append(element)
        if len(self._buffer) >= self._spec["batch_size"]:
            yield self._flush()

    def finish_bundle(self) -> Iterable[WindowedValue]:
        if self._buffer:
            yield WindowedValue(self._flush(), GlobalWindow().max_timestamp(), (GlobalWindow(),))

    def _flush(self) -> int:
        buffer, self._buffer = self._buffer, []
        self._write(self.opened(), buffer)
        return len(buffer)

    def _write(self, store: VectorStore, buffer: list[Any]) -> None:
        raise NotImplementedError


class _WriteRowsFn(_BatchedStoreFn):
    """Upserts StoreRows in batches of `batch_size` (one transaction each, for pgvector)."""

    def _write(self, store: VectorStore, buffer: list[Any]) -> None:
        store.upsert(buffer)


class _DeleteKeysFn(_BatchedStoreFn):
    """Deletes chunk_keys in batches of `batch_size`."""

    def _write(self, store: VectorStore, buffer: list[Any]) -> None:
        store.delete(buffer)
