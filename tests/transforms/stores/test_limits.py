"""What each store can hold of one chunk (``transforms.stores.limits``), the rule behind ``exceeds_store_limit``."""

from __future__ import annotations

import json

from transforms.stores.limits import MILVUS_JSON_BYTES, MILVUS_VARCHAR_BYTES, store_limit_problem

COLUMNS = {"document_id": "d", "chunk_id": "i", "text": "t", "embedding_text": "e", "metadata": "{}"}


def test_milvus_counts_bytes_of_utf8_not_characters():
    fits = "é" * (MILVUS_VARCHAR_BYTES // 2)  # 65,534 bytes
    assert store_limit_problem("milvus", **{**COLUMNS, "text": fits}) is None
    over = fits + "é"
    assert store_limit_problem("milvus", **{**COLUMNS, "text": over}) == (
        "text is 65,536 bytes of UTF-8, over Milvus's VARCHAR limit of 65,535"
    )
    metadata = json.dumps({"k": "x" * MILVUS_JSON_BYTES})
    assert "metadata is" in (store_limit_problem("milvus", **{**COLUMNS, "metadata": metadata}) or "")


def test_pgvector_refuses_nul_in_text_and_in_json_but_not_a_written_backslash_u():
    assert "embedding_text holds a NUL" in (
        store_limit_problem("pgvector", **{**COLUMNS, "embedding_text": "a\x00b"}) or ""
    )
    escaped = json.dumps({"k": "a\x00b"})  # '{"k": "a\\u0000b"}'
    assert store_limit_problem("pgvector", **{**COLUMNS, "metadata": escaped}) == (
        "metadata holds a NUL character, which PostgreSQL jsonb cannot hold"
    )
    written = json.dumps({"k": "a\\u0000b"})  # the six characters \u0000 as text
    assert store_limit_problem("pgvector", **{**COLUMNS, "metadata": written}) is None


def test_no_store_and_the_other_store_hold_anything():
    odd = {**COLUMNS, "text": "a\x00" + "é" * MILVUS_VARCHAR_BYTES}
    assert store_limit_problem(None, **odd) is None
    assert store_limit_problem("milvus", **{**COLUMNS, "text": "a\x00b"}) is None
    assert store_limit_problem("pgvector", **{**COLUMNS, "text": "é" * MILVUS_VARCHAR_BYTES}) is None
