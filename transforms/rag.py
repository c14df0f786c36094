"""Chunks into Beam's RAG types, so Beam's embedding and vector-database transforms follow directly.

A row of ``chunks/*.parquet`` (``CHUNK_SCHEMA``) becomes an ``apache_beam.ml.rag.types.Chunk``
(``EmbeddableItem`` in Beam 2.77):

- ``id`` = ``chunk_id`` (stable: the same chunk keeps its id run after run), or with
  ``id_column="chunk_key"`` the chunk's key (it survives edits elsewhere in the document, so a
  store keyed by it re-embeds only the chunks an edit touched);
- ``content.text`` = ``embedding_text`` (exactly what the budget was checked on: the text with its
  heading prefix where the chunker added one);
- ``index`` = ``chunk_index``;
- ``metadata``: ``document_id``, ``headings`` (list, outermost first), ``page_no``,
  ``start_offset``, ``end_offset`` (code points in the source document, or None), ``text`` (the
  chunk as a reader sees it), ``token_count``, ``tokenizer``, ``chunker``, ``content_format``,
  ``document_hash`` and ``document_metadata`` (the chunk's ``metadata`` JSON, parsed).

Then, for example::

    chunks | ToRagChunks()
           | MLTransform(write_artifact_location=TMP).with_transform(HuggingfaceTextEmbeddings(model_name=PATH))
           | beam.ml.rag.ingestion.base.VectorDatabaseWriteTransform(...)

Pure data: no model, no torch (see ``examples/embed_chunks.py`` for the embedding step).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import apache_beam as beam
from apache_beam.ml.rag.types import Chunk as RagChunk
from apache_beam.ml.rag.types import Content

__all__ = ["ID_COLUMNS", "ToRagChunks", "rag_chunk"]

#: The chunk columns a RAG ``Chunk``'s ``id`` may come from.
ID_COLUMNS = ("chunk_id", "chunk_key")


def rag_chunk(row: Mapping[str, Any], id_column: str = "chunk_id") -> RagChunk:
    """One chunk row (a dict with ``CHUNK_SCHEMA``'s columns) as a Beam RAG ``Chunk``.

    Args:
        row: The chunk row.
        id_column: ``chunk_id`` or ``chunk_key``: the column the ``Chunk``'s ``id`` is.

    Raises:
        KeyError: a required column (``chunk_id``, ``embedding_text``, ``chunk_index``,
            ``document_id``, or ``id_column``) is missing.
        ValueError: ``metadata`` is neither null (empty, or JSON ``null``: no metadata) nor a JSON
            object.
    """
    raw = row.get("metadata")
    try:
        document_metadata = (json.loads(raw) if raw else None) if isinstance(raw, str) else raw
    except ValueError:
        document_metadata = raw  # not JSON: refused below with the chunk's id
    if document_metadata is None:  # no metadata: null, "" or JSON null
        document_metadata = {}
    if not isinstance(document_metadata, dict):
        raise ValueError(f"chunk {row['chunk_id']}: metadata must be a JSON object, got {raw!r:.80}")
    headings = row.get("headings")
    return RagChunk(
        content=Content(text=row["embedding_text"]),
        id=row[id_column],
        index=int(row["chunk_index"]),
        metadata={
            "document_id": row["document_id"],
            "headings": list(headings) if headings is not None else [],
            "page_no": row.get("page_no"),
            "start_offset": row.get("start_offset"),
            "end_offset": row.get("end_offset"),
            "text": row.get("text"),
            "token_count": row.get("token_count"),
            "tokenizer": row.get("tokenizer"),
            "chunker": row.get("chunker"),
            "content_format": row.get("content_format"),
            "document_hash": row.get("document_hash"),
            "chunk_key": row.get("chunk_key"),
            "document_metadata": document_metadata,
        },
    )


class ToRagChunks(beam.PTransform):
    """Chunk rows (dicts, e.g. from ``beam.io.ReadFromParquet('OUT/chunks/*.parquet')``) into
    ``apache_beam.ml.rag.types.Chunk``: see :func:`rag_chunk` for the mapping.

    Args:
        id_column: ``chunk_id`` (default) or ``chunk_key`` (what a store that should re-embed only
            edited chunks is keyed by).

    Raises:
        ValueError: ``id_column`` is neither.
    """

    def __init__(self, id_column: str = "chunk_id") -> None:
        super().__init__()
        if id_column not in ID_COLUMNS:
            raise ValueError(f"id_column must be one of {ID_COLUMNS}, got {id_column!r:.80}")
        self.id_column = id_column

    def expand(self, rows):
        return rows | "To RAG chunks" >> beam.Map(rag_chunk, self.id_column).with_output_types(RagChunk)
