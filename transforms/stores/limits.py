"""What a store can hold of one chunk: the rule the validation step applies when a store is configured.

Beam-free, and free of the stores' client libraries. Milvus keeps each text column as a
``VARCHAR`` of at most 65,535 bytes of UTF-8 and the metadata as a ``JSON`` value of at most
65,536 bytes (its defaults); PostgreSQL's ``text`` and ``jsonb`` hold no NUL character (nor a
``\\u0000`` escape inside JSON). A chunk outside those limits is dead-lettered as
``exceeds_store_limit`` instead of failing the store's writes for the whole run.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MILVUS_JSON_BYTES", "MILVUS_VARCHAR_BYTES", "store_limit_problem"]

#: Milvus's largest VARCHAR value, in bytes of UTF-8.
MILVUS_VARCHAR_BYTES = 65_535
#: Milvus's largest JSON value (its ``proxy.maxJSONFieldLength`` default), in bytes.
MILVUS_JSON_BYTES = 65_536


def store_limit_problem(
    store_type: str | None, *, document_id: str, chunk_id: str, text: str, embedding_text: str, metadata: str
) -> str | None:
    """Why the store ``store_type`` cannot hold a chunk, as one sentence, or ``None`` when it can.

    Args:
        store_type: ``"milvus"``, ``"pgvector"``, or ``None`` (no store: always ``None``).
        document_id, chunk_id, text, embedding_text: The chunk's columns as written.
        metadata: The chunk's metadata as its JSON text.
    """
    columns = {"document_id": document_id, "chunk_id": chunk_id, "text": text, "embedding_text": embedding_text}
    if store_type == "milvus":
        for name, value in columns.items():
            size = len(value.encode("utf-8", "surrogatepass"))
            if size > MILVUS_VARCHAR_BYTES:
                return f"{name} is {size:,} bytes of UTF-8, over Milvus's VARCHAR limit of {MILVUS_VARCHAR_BYTES:,}"
        size = len(metadata.encode("utf-8", "surrogatepass"))
        if size > MILVUS_JSON_BYTES:
            return f"metadata is {size:,} bytes of JSON, over Milvus's JSON limit of {MILVUS_JSON_BYTES:,}"
    elif store_type == "pgvector":
        for name, value in columns.items():
            if "\x00" in value:
                return f"{name} holds a NUL character, which PostgreSQL text cannot hold"
        if "\x00" in metadata or ("\\u0000" in metadata and _holds_nul(_parsed(metadata))):
            return "metadata holds a NUL character, which PostgreSQL jsonb cannot hold"
    return None


def _parsed(text: str) -> Any:
    """``text`` parsed as JSON; ``None`` when it is not JSON (the store says so on its own)."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def _holds_nul(value: Any) -> bool:
    """Whether a JSON value holds NUL in any of its strings or keys."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any("\x00" in key or _holds_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False
