"""The vector_store spec check, the URI's password hidden, shard prefixes and the store errors: no store needed."""

from __future__ import annotations

import pytest

from transforms.stores import STORE_TYPES, StoreError, check_store_spec, describe_spec, open_store
from transforms.stores.base import hide_password, one_line, shard_prefix

MILVUS = {"type": "milvus", "uri": "out/vectors.db", "collection": "chunks"}
PG = {"type": "pgvector", "uri": "postgresql://rag@db.example/rag", "collection": "chunks"}


def test_a_minimal_spec_gets_its_defaults():
    assert check_store_spec(MILVUS) == {**MILVUS, "password_env": None, "batch_size": 256}
    assert check_store_spec({**PG, "password_env": "PG_PASS", "batch_size": 1}) == {
        **PG,
        "password_env": "PG_PASS",
        "batch_size": 1,
    }
    assert STORE_TYPES == ("milvus", "pgvector")


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({**MILVUS, "dimension": 4}, "dimension"),
        ({"uri": "a.db", "collection": "c"}, "type"),
        ({**MILVUS, "type": "qdrant"}, "type"),
        ({**MILVUS, "type": ["milvus"]}, "type"),
        ({"type": "milvus", "collection": "c"}, "uri"),
        ({**MILVUS, "uri": ""}, "uri"),
        ({**MILVUS, "uri": " out/vectors.db"}, "uri"),
        ({**MILVUS, "uri": "out/vectors"}, "uri"),
        ({**MILVUS, "uri": "ftp://host/x"}, "uri"),
        ({**MILVUS, "uri": "https://user:secret@host:19530"}, "uri"),
        ({**PG, "uri": "mysql://host/db"}, "uri"),
        ({**PG, "uri": "out/vectors.db"}, "uri"),
        ({"type": "milvus", "uri": "a.db"}, "collection"),
        ({**MILVUS, "collection": "9chunks"}, "collection"),
        ({**MILVUS, "collection": "chunks; DROP TABLE x"}, "collection"),
        ({**MILVUS, "collection": "a" * 64}, "collection"),
        ({**MILVUS, "collection": "public.chunks"}, "collection"),
        ({**PG, "password_env": "PG-PASS"}, "password_env"),
        ({**PG, "password_env": "hunter2 value"}, "password_env"),
        ({**PG, "password_env": 5}, "password_env"),
        ({**MILVUS, "batch_size": 0}, "batch_size"),
        ({**MILVUS, "batch_size": 100_001}, "batch_size"),
        ({**MILVUS, "batch_size": True}, "batch_size"),
        ({**MILVUS, "batch_size": "256"}, "batch_size"),
    ],
)
def test_a_bad_spec_is_refused_naming_the_field(spec, field):
    with pytest.raises(ValueError) as caught:
        check_store_spec(spec)
    assert str(caught.value).startswith(f"vector_store.{field}: ")
    assert "\n" not in str(caught.value)


def test_a_spec_that_is_not_a_mapping_is_refused():
    with pytest.raises(ValueError, match=r"^vector_store: "):
        check_store_spec(["milvus"])


def test_a_milvus_uri_with_credentials_is_refused_without_showing_them():
    with pytest.raises(ValueError) as caught:
        check_store_spec({**MILVUS, "uri": "https://root:s3cret@host:19530"})
    assert "s3cret" not in str(caught.value)


def test_longest_identifier_is_accepted():
    assert check_store_spec({**MILVUS, "collection": "_" + "a" * 62})["collection"] == "_" + "a" * 62


def test_described_hides_the_password():
    spec = check_store_spec({**PG, "uri": "postgresql://rag:s3cret@db.example:5432/rag?sslmode=require"})
    assert describe_spec(spec) == "pgvector:postgresql://rag:***@db.example:5432/rag?sslmode=require#chunks"
    spec = check_store_spec({**PG, "uri": "postgresql:///rag?host=/run/pg&password=s3cret&user=rag"})
    assert describe_spec(spec) == "pgvector:postgresql:///rag?host=/run/pg&password=***&user=rag#chunks"
    assert describe_spec(check_store_spec(MILVUS)) == "milvus:out/vectors.db#chunks"
    assert hide_password("postgresql://rag@db/rag") == "postgresql://rag@db/rag"
    assert hide_password("postgresql://rag:@db/rag") == "postgresql://rag:@db/rag"


def test_a_failed_connection_never_shows_the_password():
    pytest.importorskip("psycopg")
    spec = {**PG, "uri": "postgresql://rag:s3cret@127.0.0.1:1/rag?connect_timeout=2"}
    with pytest.raises(StoreError) as caught:
        open_store(spec)
    message = str(caught.value)
    assert message.startswith("pgvector:postgresql://rag:***@127.0.0.1:1/rag")
    assert "s3cret" not in message and "\n" not in message
    assert caught.value.transient


def test_an_unset_password_variable_is_a_store_error(monkeypatch):
    pytest.importorskip("psycopg")
    monkeypatch.delenv("RECHUNK_TEST_UNSET_PASSWORD", raising=False)
    with pytest.raises(StoreError, match="RECHUNK_TEST_UNSET_PASSWORD is not set"):
        open_store({**PG, "password_env": "RECHUNK_TEST_UNSET_PASSWORD"})


@pytest.mark.parametrize(
    ("shard", "shards", "prefix"),
    [(0, 1, ""), (0, 16, "0"), (10, 16, "a"), (15, 16, "f"), (0, 256, "00"), (171, 256, "ab"), (255, 256, "ff")],
)
def test_shard_prefix(shard, shards, prefix):
    assert shard_prefix(shard, shards) == prefix


@pytest.mark.parametrize(("shard", "shards"), [(0, 2), (16, 16), (-1, 16), (1, 1), (256, 256), (True, 16)])
def test_a_bad_shard_is_refused(shard, shards):
    with pytest.raises(ValueError):
        shard_prefix(shard, shards)


def test_store_error_is_one_line():
    error = StoreError("connect failed:\n  FATAL:\tno", transient=True)
    assert str(error) == "connect failed: FATAL: no"
    assert error.transient
    assert not StoreError("x").transient
    assert one_line("a" * 500, 10) == "a" * 9 + "…"
