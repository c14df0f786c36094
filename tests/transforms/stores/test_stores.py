"""Both stores against real servers: Milvus Lite files and PostgreSQL with pgvector (see tests/support/stores.py)."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import time
from dataclasses import replace

import pytest

from tests.support.stores import REPO_ROOT, claim_when_free, make_row, make_rows
from transforms.stores import StoreError, open_store
from transforms.stores.base import shard_prefix

pytestmark = pytest.mark.slow

FLOAT32 = 1e-6  # float32 keeps about 7 significant digits; the test vectors' values are at most 1


@pytest.fixture
def store(store_spec):
    opened = open_store(store_spec)
    yield opened
    opened.close()


def test_prepare_creates_then_accepts_the_same_model_and_refuses_another(store_spec):
    store = open_store(store_spec)
    try:
        store.prepare(dimension=4, model="all-MiniLM-L6-v2@abc")
        assert store.count() == 0
        store.prepare(dimension=4, model="all-MiniLM-L6-v2@abc")
    finally:
        store.close()
    again = open_store(store_spec)
    try:
        again.prepare(dimension=4, model="all-MiniLM-L6-v2@abc")
        with pytest.raises(StoreError) as caught:
            again.prepare(dimension=8, model="all-MiniLM-L6-v2@abc")
        assert "dimension 4" in str(caught.value) and "dimension 8" in str(caught.value)
        assert not caught.value.transient
        with pytest.raises(StoreError) as caught:
            again.prepare(dimension=4, model="bge-small@def")
        assert "all-MiniLM-L6-v2@abc" in str(caught.value) and "bge-small@def" in str(caught.value)
    finally:
        again.close()


def test_stored_lists_every_row_once_in_its_shard(store):
    store.prepare(dimension=3, model="m")
    rows = make_rows(300, 3, seed=1)
    store.upsert(rows)
    store.page_size = 7  # many pages per shard
    expected = {(row.chunk_key, row.fingerprint) for row in rows}
    for shards in (1, 16, 256):
        seen = []
        for shard in range(shards):
            pairs = list(store.stored(shard, shards))
            assert all(key.startswith(shard_prefix(shard, shards)) for key, _ in pairs)
            seen += pairs
        assert len(seen) == len(expected)
        assert set(seen) == expected
    assert store.count() == 300


def test_upsert_of_an_existing_key_replaces_the_row(store):
    store.prepare(dimension=3, model="m")
    first = make_row("a", (1.0, 0.0, 0.0))
    other = make_row("b", (0.0, 1.0, 0.0))
    store.upsert([first, other])
    changed = replace(first, text="edited", fingerprint="f" * 64, vector=(0.0, 0.0, 1.0))
    store.upsert([changed])
    assert store.count() == 2
    assert set(store.stored(0, 1)) == {(changed.chunk_key, "f" * 64), (other.chunk_key, other.fingerprint)}
    assert store.vectors([first.chunk_key])[first.chunk_key] == pytest.approx((0.0, 0.0, 1.0))


def test_vectors_returns_what_was_written(store):
    store.prepare(dimension=5, model="m")
    rows = make_rows(20, 5, seed=2)
    store.upsert(rows)
    missing = make_row("never written", None).chunk_key
    got = store.vectors([row.chunk_key for row in rows[:12]] + [missing])
    assert set(got) == {row.chunk_key for row in rows[:12]}
    for row in rows[:12]:
        assert got[row.chunk_key] == pytest.approx(row.vector, abs=FLOAT32)
    assert store.vectors([]) == {}


def test_delete_removes_exactly_those_keys(store):
    store.prepare(dimension=2, model="m")
    rows = make_rows(40, 2, seed=3)
    store.upsert(rows)
    gone = [row.chunk_key for row in rows[::3]]
    store.delete(gone + [make_row("never written", None).chunk_key])
    kept = {(row.chunk_key, row.fingerprint) for row in rows if row.chunk_key not in set(gone)}
    assert set(store.stored(0, 1)) == kept
    assert store.count() == len(kept) == 26
    store.delete([])
    assert store.count() == 26


def test_search_finds_the_nearest_row(store):
    store.prepare(dimension=3, model="m")
    x, y, z = make_row("x", (1.0, 0.0, 0.0)), make_row("y", (0.0, 1.0, 0.0)), make_row("z", (0.0, 0.0, 1.0))
    store.upsert([x, y, z])
    # Cosine distance to (0.1, 1, 0.3): y 0.04, z 0.71, x 0.91.
    assert store.search((0.1, 1.0, 0.3), 3) == [y.chunk_key, z.chunk_key, x.chunk_key]
    rows = make_rows(200, 3, seed=4)
    store.upsert(rows)
    for row in rows[:5]:
        assert store.search(row.vector, 1) == [row.chunk_key]


def test_rows_that_do_not_fit_are_refused(store):
    store.prepare(dimension=3, model="m")
    with pytest.raises(StoreError, match="4 dimensions"):
        store.upsert([make_row("a", (1.0, 0.0, 0.0, 0.0))])
    with pytest.raises(StoreError, match="no vector"):
        store.upsert([make_row("a", None)])
    with pytest.raises(StoreError, match="nan"):
        store.upsert([make_row("a", (1.0, math.nan, 0.0))])
    assert store.count() == 0


def test_writing_before_prepare_is_refused(store):
    with pytest.raises(StoreError, match="prepare it first"):
        store.upsert([make_row("a", (1.0, 0.0, 0.0))])


def test_a_collection_without_rechunks_columns_is_refused(store_spec):
    if store_spec["type"] == "pgvector":
        import psycopg

        with psycopg.connect(store_spec["uri"], autocommit=True) as connection:
            connection.execute(f"CREATE TABLE {store_spec['collection']} (id integer PRIMARY KEY, body text)")
    else:
        from pymilvus import MilvusClient

        from transforms.stores.milvus import client_uri

        client = MilvusClient(client_uri(store_spec["uri"]))
        client.create_collection(store_spec["collection"], dimension=3)
        client.close()
    store = open_store(store_spec)
    try:
        with pytest.raises(StoreError, match="without rechunk's"):
            store.prepare(dimension=3, model="m")
    finally:
        store.close()


def test_a_failed_pgvector_batch_leaves_none_of_its_rows(pgvector_spec):
    store = open_store({**pgvector_spec, "batch_size": 10})
    try:
        store.prepare(dimension=2, model="m")
        rows = make_rows(25, 2, seed=5)
        bad = replace(rows[14], metadata='{"unclosed": ')  # the second batch's fifth row
        with pytest.raises(StoreError, match="upsert failed") as caught:
            store.upsert(rows[:14] + [bad] + rows[15:])
        assert not caught.value.transient
        assert {key for key, _ in store.stored(0, 1)} == {row.chunk_key for row in rows[:10]}
    finally:
        store.close()


def test_pgvector_tables_whose_names_share_their_first_50_characters_are_both_prepared(pgvector_spec):
    stem = pgvector_spec["collection"] + "_" * (51 - len(pgvector_spec["collection"]))
    stores = [open_store({**pgvector_spec, "collection": stem + suffix}) for suffix in ("one", "two")]
    try:
        for store in stores:
            store.prepare(dimension=2, model="m")  # each with its own HNSW index
            store.upsert(make_rows(3, 2, seed=1))
            assert store.search((1.0, 0.0), 3) and store.count() == 3
    finally:
        for store in stores:
            store.close()


def test_milvus_lite_file_is_one_process_at_a_time(milvus_spec):
    store = open_store(milvus_spec)
    store.prepare(dimension=2, model="m")
    store.upsert([make_row("a", (1.0, 0.0))])
    probe = textwrap.dedent(
        f"""
        import logging, sys
        logging.disable(logging.CRITICAL)
        from transforms.stores import StoreError, open_store
        try:
            store = open_store({milvus_spec!r})
        except StoreError as error:
            print("refused:", error)
            sys.exit(0)
        print("opened, rows:", store.count())
        store.close()
        """
    )

    def other_process() -> str:
        done = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=REPO_ROOT,
            env={"PYTHONPATH": str(REPO_ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip()

    try:
        assert (
            other_process()
            == f"refused: milvus:{milvus_spec['uri']}#chunks: open in another process (Milvus Lite allows one process per file)"
        )
    finally:
        store.close()
    assert other_process() == "opened, rows: 1"


def test_a_pgvector_table_is_claimed_by_one_sync_at_a_time(pgvector_spec):
    first, second = open_store(pgvector_spec), open_store(pgvector_spec)
    other_table = open_store({**pgvector_spec, "collection": pgvector_spec["collection"] + "_other"})
    try:
        first.claim_sync()
        with pytest.raises(StoreError, match="another sync of this table is running"):
            second.claim_sync()
        other_table.claim_sync()  # another table is another claim
        first.close()
        second.claim_sync()  # the claim ends with its connection
    finally:
        for store in (first, second, other_table):
            store.close()


def test_a_closed_syncs_claim_on_a_pgvector_table_is_free_for_the_next_sync_at_once(pgvector_spec):
    first, second = open_store(pgvector_spec), open_store(pgvector_spec)
    try:
        first.claim_sync()
        # A server process that takes its time to end (it drops its temporary tables first): the
        # claim must not wait for that.
        first._open().execute(
            "DO $$BEGIN FOR i IN 1..1000 LOOP EXECUTE format('CREATE TEMP TABLE t%s (x int)', i); END LOOP; END$$"
        )
        first.close()
        second.claim_sync()  # right away, with no wait
    finally:
        first.close()
        second.close()


def test_a_syncs_claim_on_a_pgvector_table_outlasts_the_servers_idle_session_timeout(pgvector_spec):
    # A server ending sessions idle for 200 ms (here through the URI's options, as a role's or a
    # database's setting would); a sync waits longer than that while it embeds.
    spec = {**pgvector_spec, "uri": pgvector_spec["uri"] + "&options=-c%20idle_session_timeout%3D200"}
    launcher, writer, other = (open_store(spec) for _ in range(3))
    try:
        launcher.prepare(dimension=2, model="m")
        claim = launcher.claim_sync()
        writer.write_for(claim)
        time.sleep(0.6)  # embedding
        writer.upsert(make_rows(2, 2, seed=1))  # the claim still holds
        with pytest.raises(StoreError, match="another sync of this table is running"):
            other.claim_sync()
        assert launcher.count() == 2
    finally:
        for store in (launcher, writer, other):
            store.close()


def test_a_syncs_writers_write_nothing_once_its_claim_on_a_pgvector_table_ends(pgvector_spec):
    launcher, writer, later = (open_store(pgvector_spec) for _ in range(3))
    try:
        launcher.prepare(dimension=2, model="m")
        claim = launcher.claim_sync()
        writer.write_for(claim)
        writer.upsert(make_rows(2, 2, seed=1))  # the claim holds: written
        writer.delete([make_rows(1, 2, seed=1)[0].chunk_key])
        assert launcher.count() == 1
        launcher.close()  # the launching process gone
        with pytest.raises(StoreError, match="claim on the table has ended") as ended:
            writer.upsert(make_rows(3, 2, seed=2, prefix="late"))
        assert not ended.value.transient
        assert later.claim_sync() != claim  # the next sync's claim is its own
        with pytest.raises(StoreError, match="claim on the table has ended"):
            writer.delete([key for key, _ in later.stored(0, 1)])
        assert later.count() == 1  # neither the late upsert nor the late delete touched the table
    finally:
        for store in (launcher, writer, later):
            store.close()


def test_a_pgvector_claim_is_one_per_table_whatever_search_path_reaches_it(pgvector_spec):
    import psycopg

    table = pgvector_spec["collection"]
    first, second, empty = (f"{table}_{name}" for name in ("first", "second", "empty"))
    with psycopg.connect(pgvector_spec["uri"], autocommit=True) as connection:
        for schema in (first, second, empty):
            connection.execute(f"CREATE SCHEMA {schema}")

    def through(*path: str) -> dict:
        return {
            **pgvector_spec,
            "uri": pgvector_spec["uri"] + "&options=-csearch_path%3D" + ",".join([*path, "public"]),
        }

    in_first, in_second, first_again = (
        open_store(spec) for spec in (through(first), through(second), through(empty, first))
    )
    try:
        for store in (in_first, in_second):
            store.prepare(dimension=2, model="m")  # a table of the same name in each schema
        in_first.claim_sync()
        in_second.claim_sync()  # another schema's table is another claim
        with pytest.raises(StoreError, match="another sync of this table is running"):
            first_again.claim_sync()  # the first schema's table, reached through another search_path
    finally:
        for store in (in_first, in_second, first_again):
            store.close()


def test_a_killed_syncs_claim_on_a_pgvector_table_is_released(pgvector_spec):
    holder = textwrap.dedent(
        f"""
        import sys, time
        from transforms.stores import open_store
        store = open_store({pgvector_spec!r})
        store.claim_sync()
        print("claimed", flush=True)
        time.sleep(600)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", holder],
        cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    store = open_store(pgvector_spec)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "claimed"
        with pytest.raises(StoreError, match="another sync"):
            store.claim_sync()
        process.kill()
        process.wait(timeout=30)
        claim_when_free(store)
    finally:
        process.kill()
        store.close()


def test_a_refused_pgvector_write_names_the_cause_without_quoting_the_row(pgvector_spec):
    import psycopg

    store = open_store(pgvector_spec)
    try:
        store.prepare(dimension=2, model="m")
        with psycopg.connect(pgvector_spec["uri"], autocommit=True) as connection:
            connection.execute(
                f"ALTER TABLE \"{pgvector_spec['collection']}\" ADD CONSTRAINT no_rows CHECK (document_id = 'none')"
            )
        with pytest.raises(StoreError) as caught:
            store.upsert([make_row("a", (1.0, 0.0), text="private words of a document")])
        message = str(caught.value)
        assert "violates check constraint" in message and "no_rows" in message
        assert "private words" not in message  # PostgreSQL's DETAIL quotes the failing row
    finally:
        store.close()
