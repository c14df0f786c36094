"""UpsertRows and DeleteKeys in DirectRunner pipelines against a Milvus Lite file and a pgvector table."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tests.support.stores import make_rows
from transforms.beam.stores import DeleteKeys, UpsertRows
from transforms.stores import open_store


@pytest.mark.slow
def test_upsert_then_delete_through_beam(store_spec):
    spec = {**store_spec, "batch_size": 64}
    store = open_store(spec)
    try:
        store.prepare(dimension=4, model="m")
        rows = make_rows(300, 4, seed=7)
        with beam.Pipeline() as pipeline:
            counts = pipeline | beam.Create(rows) | UpsertRows(spec)
            assert_that(counts | beam.CombineGlobally(sum), equal_to([300]), label="total")
            if spec["type"] == "pgvector":
                assert_that(counts | beam.Filter(lambda n: not 1 <= n <= 64), equal_to([]), label="batches")
        assert store.count() == 300
        assert set(store.stored(0, 1)) == {(row.chunk_key, row.fingerprint) for row in rows}
        got = store.vectors([rows[0].chunk_key])[rows[0].chunk_key]
        assert got == pytest.approx(rows[0].vector, abs=1e-6)

        gone = [row.chunk_key for row in rows[:100]]
        with beam.Pipeline() as pipeline:
            deleted = pipeline | beam.Create(gone) | DeleteKeys(spec)
            assert_that(deleted | beam.CombineGlobally(sum), equal_to([100]))
        assert store.count() == 200
        assert {key for key, _ in store.stored(0, 1)} == {row.chunk_key for row in rows[100:]}
    finally:
        store.close()


def test_a_bad_spec_fails_when_the_pipeline_is_built():
    with pytest.raises(ValueError, match=r"^vector_store\.collection: "):
        UpsertRows({"type": "milvus", "uri": "a.db", "collection": "bad name"})
    with pytest.raises(ValueError, match=r"^vector_store\.type: "):
        DeleteKeys({"type": "redis", "uri": "a.db", "collection": "c"})
