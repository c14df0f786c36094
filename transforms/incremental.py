"""Incremental re-chunking: what decides that a document's previous chunks can be kept.

Beam-free. A run writes, beside its chunks, a manifest ``documents/*.parquet`` with one row per
document whose every chunk was accepted (:data:`MANIFEST_SCHEMA`). A later run given that output as
``--previous`` keeps a document's previous chunks, without chunking it again, when the row it
would write for the document has the same :func:`unchanged_key` as the previous row: the same
``document_hash`` (sha256 of the content) and the same :func:`input_fingerprint`, which covers
everything else a fresh run's chunks depend on (content format, metadata, the routed chunker's
``config_hash``, the tokenizer identity, the job's ``max_tokens``, rechunk's version and the
chunking libraries' versions). Every other document is chunked afresh, so the output equals a
fresh run's row for row.

``deleted/*.parquet`` (:data:`DELETED_SCHEMA`) then lists, per document, the previous chunk ids that
are not in the new output (:func:`stale_chunk_ids`): those of documents gone from the input (or
now rejected), and those a changed document no longer produces. A vector store applies a run by
deleting those ids and upserting ``chunks/``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

import transforms
from transforms.documents import FOLDER_FILES, Document, dumps_metadata

__all__ = [
    "DELETED_SCHEMA",
    "MANIFEST_SCHEMA",
    "id_key",
    "input_fingerprint",
    "manifest_row",
    "pack_entry",
    "previous_files",
    "stale_chunk_ids",
    "unchanged_key",
    "unpack_entry",
]

#: ``documents/*.parquet``: one row per document whose chunks are all in ``chunks/``.
MANIFEST_SCHEMA = pa.schema(
    [
        ("document_id", pa.string()),
        ("document_hash", pa.string()),
        ("input_fingerprint", pa.string()),
        ("chunker", pa.string()),
        ("chunker_config_hash", pa.string()),
        ("tokenizer", pa.string()),
        ("chunk_count", pa.int32()),
    ]
)

#: ``deleted/*.parquet``: per document, the previous run's chunk ids that are not in this run's output.
DELETED_SCHEMA = pa.schema(
    [
        ("document_id", pa.string()),
        ("chunk_ids", pa.list_(pa.string())),
        ("document_removed", pa.bool_()),
    ]
)


#: Installed distributions whose version can change any document's chunks (the tokenizers, the
#: normalizers' parsers, docling-core): in every fingerprint. A chunker that needs more names them
#: in its ``fingerprint_libraries`` (the semantic chunkers name their model libraries), and only the
#: documents routed to it carry them: installing the ``semantic`` extra re-chunks nothing else.
CHUNKING_LIBRARIES = ("tiktoken", "bpe-openai", "tokenizers", "docling-core", "markdown-it-pyrs", "lxml", "semchunk")


def previous_files(previous: str, folder: str) -> str:
    """The file pattern of a ``--previous`` output's ``folder`` (``chunks`` or ``documents``):
    every data file in it (:data:`~transforms.documents.FOLDER_FILES`: names starting with ``.``
    or ``_`` are skipped), so that the job reads exactly the files the command line's check opened
    and counted (a shard renamed ``*.parquet.old`` was counted but not read: its document was lost)."""
    return f"{previous}/{folder}/{FOLDER_FILES}"


@functools.lru_cache(maxsize=8)
def _library_versions(names: tuple[str, ...]) -> tuple[str, ...]:
    """``name==version`` of each of ``names`` (``name==absent`` if not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in names:
        try:
            found.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            found.append(f"{name}==absent")
    return tuple(found)


_PARTS_ENCODER = json.JSONEncoder(ensure_ascii=False)


def input_fingerprint(
    document: Document,
    *,
    chunker_config_hash: str,
    tokenizer: str,
    max_tokens: int,
    libraries: Sequence[str] = (),
) -> str:
    """sha256 hex of everything but the content that a document's chunks depend on.

    That is the content format, the metadata (as the chunks carry it: compact JSON, sorted keys),
    the routed chunker's ``config_hash``, the tokenizer identity, the job's ``max_tokens`` (the
    validation budget), ``transforms.__version__`` and the versions of the libraries the chunkers
    parse and count with (:data:`CHUNKING_LIBRARIES`, then ``libraries``: the routed chunker's
    ``fingerprint_libraries``): a new release of any of them chunks the documents that depend on
    it once more, since it may cut differently.
    """
    # The JSON of the list of parts ``["rechunk-input/2", transforms.__version__, *library
    # versions, content format, metadata, chunker_config_hash, tokenizer, str(max_tokens)]``:
    # what the job's parts share is encoded once (_fingerprint_frame), the document's own two here.
    head, tail = _fingerprint_frame(
        transforms.__version__,
        _library_versions(CHUNKING_LIBRARIES + tuple(libraries)),
        chunker_config_hash,
        tokenizer,
        max_tokens,
    )
    text = f"{head}{_json_string(document.content_format)}, {_json_string(dumps_metadata(document.metadata))}{tail}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: A string as ``_PARTS_ENCODER`` writes it inside a list (JSON, non-ASCII characters as they are).
_json_string = json.encoder.encode_basestring


@functools.lru_cache(maxsize=64)
def _fingerprint_frame(
    version: str, library_versions: tuple[str, ...], chunker_config_hash: str, tokenizer: str, max_tokens: int
) -> tuple[str, str]:
    """The JSON text of :func:`input_fingerprint`'s list of parts before the document's own two
    (with the separator after it) and after them (with the separator before it and the ``]``)."""
    head = _PARTS_ENCODER.encode(["rechunk-input/2", version, *library_versions])
    tail = _PARTS_ENCODER.encode([chunker_config_hash, tokenizer, str(max_tokens)])
    return head[:-1] + ", ", ", " + tail[1:]


def manifest_row(
    document: Document,
    *,
    chunker: str,
    chunker_config_hash: str,
    tokenizer: str,
    max_tokens: int,
    chunk_count: int,
    document_hash: str | None = None,
    libraries: Sequence[str] = (),
) -> dict[str, Any]:
    """The manifest row (:data:`MANIFEST_SCHEMA`) of a document whose ``chunk_count`` chunks were all accepted.

    ``document_hash`` saves hashing the content again where it is known (its chunks carry it);
    ``libraries`` are the routed chunker's ``fingerprint_libraries`` (:func:`input_fingerprint`).
    """
    return {
        "document_id": document.id,
        "document_hash": document_hash or document.document_hash,
        "input_fingerprint": input_fingerprint(
            document,
            chunker_config_hash=chunker_config_hash,
            tokenizer=tokenizer,
            max_tokens=max_tokens,
            libraries=libraries,
        ),
        "chunker": chunker,
        "chunker_config_hash": chunker_config_hash,
        "tokenizer": tokenizer,
        "chunk_count": chunk_count,
    }


def unchanged_key(row: Mapping[str, Any]) -> int:
    """A 128-bit integer that differs, but for a hash collision, whenever a manifest row's content
    hash or input fingerprint does: a document keeps its previous chunks when its key is the same.

    Args:
        row: A manifest row (``document_hash`` and ``input_fingerprint`` are read).
    """
    text = f"{row['document_hash']}\x00{row['input_fingerprint']}"
    return int.from_bytes(hashlib.sha256(text.encode("ascii")).digest()[:16], "big")


#: A packed manifest entry: the :func:`unchanged_key` (128 bits) and the chunk count (32 bits),
#: big-endian.
_ENTRY = struct.Struct(">16sI")


def pack_entry(key: int, chunk_count: int) -> bytes:
    """A document's manifest entry as 20 bytes (:func:`unpack_entry` reads it back): what a keyed
    join carries per document: 21 bytes encoded by Beam's default coder and a 53-byte object
    decoded, against 37 bytes and 128 (a tuple and two integers) for the pair of integers.

    Args:
        key: The row's :func:`unchanged_key` (0 <= key < 2**128).
        chunk_count: Its chunk count (0 <= chunk_count < 2**32).

    Raises:
        OverflowError, struct.error: A value out of those ranges.
    """
    return _ENTRY.pack(key.to_bytes(16, "big"), chunk_count)


def unpack_entry(entry: bytes) -> tuple[int, int]:
    """``(unchanged_key, chunk_count)`` of a :func:`pack_entry` value.

    Raises:
        struct.error: ``entry`` is not 20 bytes.
    """
    key, chunk_count = _ENTRY.unpack(entry)
    return int.from_bytes(key, "big"), chunk_count


def id_key(document_id: str) -> int:
    """The document id as a 128-bit integer (the first half of its sha256), compact in side inputs.

    Two ids sharing a key (about one chance in 10^22 for ten million ids) could at worst keep a
    changed document's previous chunks; a 64-bit key would make that one in 10^6.
    """
    return int.from_bytes(hashlib.sha256(document_id.encode("utf-8")).digest()[:16], "big")


def stale_chunk_ids(previous: Iterable[tuple[int, str]], current: Iterable[str]) -> list[str]:
    """The previous chunk ids (``(chunk_index, chunk_id)`` pairs) not among ``current``, in index order."""
    keep = set(current)
    return [chunk_id for _, chunk_id in sorted(previous) if chunk_id not in keep]
