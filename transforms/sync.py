"""Keeping a vector store equal to a run's chunks: what each chunk key needs. Beam-free.

A store keyed on ``chunk_key`` (:func:`transforms.documents.chunk_key`: the document id, the
embedded text and its occurrence number, not the position) holds one row per chunk: the key, the
chunk's ``chunk_id``, ``document_id``, ``text``, ``embedding_text``, ``metadata`` and the vector
of ``embedding_text``, with a :func:`store_fingerprint` of the columns beside the vector. A sync
joins the run's chunks with the store's ``(key, fingerprint)`` pairs by key; :func:`plan` then
decides per key:

* ``embed``: the run has the chunk and the store lacks its key (a chunk whose embedded text is
  new): embed it and write the whole row;
* ``update``: both have the key but the fingerprints differ (the chunk moved, its headings or
  offsets or metadata changed, its embedded text did not): write the row again with the stored
  vector, which the key guarantees is still the vector of this text under the store's model;
* ``reuse``: both have the key with the same fingerprint: nothing to do;
* ``delete``: the store has a key the run did not produce (a chunk of a removed or edited
  document): delete it, once every write of the run has succeeded.

The store records the embedding model's identity when it is created; a store made with another
model is refused, so a reused vector is always the model's vector of that text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["ACTIONS", "STORE_COLUMNS", "DuplicateChunkKey", "plan", "store_fingerprint"]

#: The chunk-row columns each stored row carries beside its vector.
STORE_COLUMNS = ("chunk_key", "chunk_id", "document_id", "text", "embedding_text", "metadata")

#: What :func:`plan` returns, in the order a sync applies them (deletes last).
ACTIONS = ("embed", "update", "reuse", "delete")


class DuplicateChunkKey(ValueError):
    """Two chunks of one run share a ``chunk_key``: the run's chunk files are not one run's."""


def store_fingerprint(row: Mapping[str, Any]) -> str:
    """sha256 hex of a chunk row's stored columns other than the key and the vector.

    Covers ``chunk_id`` (so the chunk's index and text), ``document_id``, ``text``,
    ``embedding_text`` and ``metadata`` (the JSON text as written), each length-prefixed so that
    no two rows' columns run together into the same bytes.

    Raises:
        KeyError: A column is missing.
    """
    digest = hashlib.sha256()
    for name in STORE_COLUMNS[1:]:
        value = (row[name] or "").encode("utf-8", "surrogatepass")
        digest.update(len(value).to_bytes(8, "big"))
        digest.update(value)
    return digest.hexdigest()


def plan(
    key: str, produced: Iterable[Mapping[str, Any]], stored: Iterable[str]
) -> tuple[str, Mapping[str, Any] | None]:
    """Decide what a sync does with one chunk key.

    Args:
        key: The ``chunk_key``.
        produced: This run's chunk rows with that key (none, or one).
        stored: The fingerprints the store holds under that key (none, or one; a store with a
            primary key holds at most one).

    Returns:
        ``(action, row)``: ``action`` one of :data:`ACTIONS`; ``row`` the run's chunk row, or
        ``None`` for ``delete``.

    Raises:
        DuplicateChunkKey: The run produced two chunks with that key.
    """
    rows = list(produced)
    if len(rows) > 1:
        documents = sorted({str(r.get("document_id")) for r in rows})
        raise DuplicateChunkKey(
            f"chunk_key {key} is written {len(rows)} times (documents {', '.join(json.dumps(d) for d in documents[:3])})"
        )
    fingerprints = set(stored)
    if not rows:
        return "delete", None
    row = rows[0]
    if not fingerprints:
        return "embed", row
    if fingerprints == {store_fingerprint(row)}:
        return "reuse", row
    return "update", row
