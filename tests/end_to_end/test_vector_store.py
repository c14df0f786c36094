"""The job keeps a real vector store (Milvus Lite, PostgreSQL with pgvector) equal to its run.

A first run fills the store; a second run over edited, removed and added documents, with
``--previous``, leaves it holding exactly the chunks of a fresh run of the second input, with
the local model's own vectors, having embedded only chunks the store lacked. A run that fails
while writing, or between its writes and its deletes, or is killed while it syncs, leaves every
chunk of an unchanged document in the store, and its rerun converges.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from pipelines.rechunk import main
from tests.conftest import read_output, write_documents
from transforms.sync import store_fingerprint

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

pytest.importorskip("sentence_transformers", reason="the semantic extra is not installed")


def _words(topic: str, n: int) -> str:
    return " ".join(f"{topic} note {i} says the {topic} step runs after the check." for i in range(n))


def _sections(topics: list[str], n: int = 6) -> str:
    return "".join(f"## {t.title()}\n\n{_words(t, n)}\n\n{_words(t + ' detail', n)}\n\n" for t in topics)


FIRST = [
    ("same", _sections(["install", "configure", "upgrade"]), "markdown"),
    ("edited", _sections(["alpha", "beta", "gamma", "delta"]), "markdown"),
    ("removed", _sections(["retire"]), "markdown"),
    ("plain", _words("plain", 30), "text"),
]
SECOND = [
    FIRST[0],
    ("edited", _sections(["alpha", "inserted", "beta", "gamma", "delta"]), "markdown"),
    FIRST[3],
    ("added", _sections(["fresh", "newer"]), "markdown"),
]


def _config(folder: Path, store: dict[str, Any] | None, name: str = "store") -> Path:
    """A configuration ``folder/NAME.yaml`` embedding with the bundled model into ``store`` (None: no store)."""
    config: dict[str, Any] = {
        "models": {"minilm": {"type": "SentenceTransformerEmbedder", "params": {}}},
        "embedding": {"model": "minilm"},
        "chunkers": {"structure": {"type": "StructureAwareChunker", "params": {"target_tokens": 120}}},
        "default": "structure",
    }
    if store is not None:
        config["vector_store"] = {k: v for k, v in store.items() if v is not None and k != "batch_size"}
    path = folder / (f"{name}.yaml" if store is not None else "plain.yaml")
    path.write_text(yaml.safe_dump(config))
    return path


def _run(tmp_path: Path, docs: list, out: str, config: Path, *more: str) -> int:
    source = write_documents(
        tmp_path / f"{out}.parquet", [dict(zip(("id", "content", "content_format"), d)) for d in docs]
    )
    return main(["--input", str(source), "--output", str(tmp_path / out), "--config", str(config), *more])


def _store_rows(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every row the store holds, by chunk_key: its columns and its vector."""
    if spec["type"] == "pgvector":
        import psycopg

        with psycopg.connect(spec["uri"]) as connection:
            rows = connection.execute(
                f"SELECT chunk_key, chunk_id, document_id, text, embedding_text, metadata::text, embedding::text "
                f"FROM {spec['collection']}"
            ).fetchall()
        names = ("chunk_key", "chunk_id", "document_id", "text", "embedding_text", "metadata", "vector")
        found = {r[0]: dict(zip(names, r)) for r in rows}
        for row in found.values():
            row["vector"] = json.loads(row["vector"])
            row["metadata"] = json.loads(row["metadata"])
        return found
    from pymilvus import MilvusClient

    client = MilvusClient(uri=spec["uri"])
    try:
        client.load_collection(spec["collection"])
        rows = client.query(
            spec["collection"],
            filter='chunk_key != ""',
            output_fields=["chunk_key", "chunk_id", "document_id", "text", "embedding_text", "metadata", "embedding"],
        )
    finally:
        client.close()
    return {r["chunk_key"]: {**r, "vector": list(r["embedding"])} for r in rows}


def _model():
    from sentence_transformers import SentenceTransformer

    from transforms.models.local import bundled_model_path

    return SentenceTransformer(bundled_model_path(), device="cpu")


def _assert_store_is(spec: dict[str, Any], chunks: list[dict[str, Any]], model) -> None:
    """The store holds exactly ``chunks``: their columns, and the model's vector of each embedded text."""
    stored = _store_rows(spec)
    assert sorted(stored) == sorted(c["chunk_key"] for c in chunks)
    for chunk in chunks:
        row = stored[chunk["chunk_key"]]
        for column in ("chunk_id", "document_id", "text", "embedding_text"):
            assert row[column] == chunk[column], column
        assert row["metadata"] == json.loads(chunk["metadata"])
    texts = [c["embedding_text"] for c in chunks]
    expected = model.encode(texts, convert_to_numpy=True)
    got = np.array([stored[c["chunk_key"]]["vector"] for c in chunks], dtype=np.float32)
    assert np.allclose(got, expected, atol=1e-5)


@pytest.fixture(scope="module")
def model():
    return _model()


@pytest.mark.parametrize("kind", ["milvus", "pgvector"])
def test_a_nightly_run_leaves_the_store_equal_to_a_fresh_run(kind, request, tmp_path, model):
    spec = request.getfixturevalue(f"{kind}_spec")
    config = _config(tmp_path, spec)
    assert _run(tmp_path, FIRST, "first", config) == 0
    first = read_output(tmp_path / "first", "chunks")
    _assert_store_is(spec, first, model)
    report = json.loads((tmp_path / "first" / "report.json").read_text())
    assert report["embedding"]["chunks_embedded"] == len(first) and report["embedding"]["chunks_reused"] == 0
    assert report["vector_store"] | {"store": None} == {
        "type": kind,
        "store": None,
        "synced": True,
        "upserted": len(first),
        "updated": 0,
        "deleted": 0,
        "rows_after": len(first),
    }

    assert _run(tmp_path, SECOND, "second", config, "--previous", str(tmp_path / "first")) == 0
    assert _run(tmp_path, SECOND, "fresh", _config(tmp_path, None)) == 0
    second, fresh = read_output(tmp_path / "second", "chunks"), read_output(tmp_path / "fresh", "chunks")
    assert sorted(store_fingerprint(c) for c in second) == sorted(store_fingerprint(c) for c in fresh)
    _assert_store_is(spec, fresh, model)

    before = {c["chunk_key"]: c for c in first}
    after = {c["chunk_key"]: c for c in fresh}
    new, gone = set(after) - set(before), set(before) - set(after)
    moved = {k for k in set(after) & set(before) if store_fingerprint(after[k]) != store_fingerprint(before[k])}
    report = json.loads((tmp_path / "second" / "report.json").read_text())
    assert report["embedding"]["chunks_embedded"] == len(new) > 0
    assert report["embedding"]["chunks_reused"] == len(after) - len(new)
    assert (report["vector_store"]["upserted"], report["vector_store"]["updated"]) == (len(new), len(moved))
    assert report["vector_store"]["deleted"] == len(gone) > 0
    assert report["vector_store"]["rows_after"] == len(after)
    # The inserted section re-embeds its own chunks, not the whole edited document.
    edited = [c for c in fresh if c["document_id"] == "edited"]
    assert 0 < len({c["chunk_key"] for c in edited} & new) < len(edited)
    assert {c["document_id"] for c in before.values() if c["chunk_key"] in gone} >= {"removed"}


def test_every_stored_chunk_fits_the_models_window_in_its_own_tokenizer(milvus_spec, tmp_path, model):
    long = [("long", _words("window", 400), "text"), ("doc", _sections(["a", "b"], 40), "markdown")]
    assert _run(tmp_path, long, "run", _config(tmp_path, milvus_spec)) == 0
    stored = _store_rows(milvus_spec)
    assert len(stored) > 10
    window = model.max_seq_length
    for row in stored.values():
        ids = model.tokenizer(row["embedding_text"], truncation=False)["input_ids"]
        assert len(ids) <= window, (len(ids), window)


def _pg(spec: dict[str, Any], statement: str) -> None:
    import psycopg

    with psycopg.connect(spec["uri"], autocommit=True) as connection:
        connection.execute(statement)


def test_a_run_failing_before_its_deletes_keeps_every_chunk_and_its_rerun_converges(pgvector_spec, tmp_path, model):
    spec = pgvector_spec
    config = _config(tmp_path, spec)
    assert _run(tmp_path, FIRST, "first", config) == 0
    first = read_output(tmp_path / "first", "chunks")
    # Writes succeed, deletes fail: a role that may insert and update but not delete.
    role = f"writer_{spec['collection']}"
    _pg(spec, f"CREATE ROLE {role} LOGIN")
    _pg(spec, f"GRANT SELECT, INSERT, UPDATE ON {spec['collection']} TO {role}")
    _pg(spec, f"GRANT USAGE, CREATE ON SCHEMA public TO {role}")
    as_writer = {**spec, "uri": spec["uri"].replace("postgres:@", f"{role}:@", 1)}
    assert (
        _run(tmp_path, SECOND, "failed", _config(tmp_path, as_writer, "writer"), "--previous", str(tmp_path / "first"))
        == 1
    )
    assert not (tmp_path / "failed" / "_SUCCESS").exists()
    stored = _store_rows(spec)
    assert {c["chunk_key"] for c in first} <= set(stored)  # nothing deleted: every previous chunk is there
    # The rerun, allowed to delete, converges to a fresh run of the second input.
    assert _run(tmp_path, SECOND, "rerun", config, "--previous", str(tmp_path / "first")) == 0
    assert _run(tmp_path, SECOND, "fresh", _config(tmp_path, None)) == 0
    _assert_store_is(spec, read_output(tmp_path / "fresh", "chunks"), model)
    report = json.loads((tmp_path / "rerun" / "report.json").read_text())
    assert report["embedding"]["chunks_embedded"] == 0  # the failed run wrote them all


def test_a_run_failing_while_it_writes_deletes_nothing(pgvector_spec, tmp_path, model, capsys):
    spec = pgvector_spec
    config = _config(tmp_path, spec)
    assert _run(tmp_path, FIRST, "first", config) == 0
    first = read_output(tmp_path / "first", "chunks")
    _pg(spec, f"ALTER TABLE {spec['collection']} ADD CONSTRAINT no_added CHECK (document_id <> 'added')")
    capsys.readouterr()
    assert _run(tmp_path, SECOND, "failed", config, "--previous", str(tmp_path / "first")) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    # The cause, not the start of a worker's traceback.
    assert last.startswith("rechunk: error: vector store sync failed: ") and "no_added" in last, last
    assert {c["chunk_key"] for c in first} <= set(_store_rows(spec))
    _pg(spec, f"ALTER TABLE {spec['collection']} DROP CONSTRAINT no_added")
    assert _run(tmp_path, SECOND, "rerun", config, "--previous", str(tmp_path / "first")) == 0
    assert _run(tmp_path, SECOND, "fresh", _config(tmp_path, None)) == 0
    _assert_store_is(spec, read_output(tmp_path / "fresh", "chunks"), model)


def test_a_run_syncing_a_table_another_sync_holds_is_refused_before_it_chunks(pgvector_spec, tmp_path, model, capsys):
    from transforms.stores import open_store

    config = _config(tmp_path, pgvector_spec)
    assert _run(tmp_path, FIRST, "first", config) == 0
    before = _store_rows(pgvector_spec)
    holder = open_store(pgvector_spec)
    try:
        holder.claim_sync()  # another sync of this table, still running
        capsys.readouterr()
        # Refused before its pipeline starts: an option error, and no output made.
        assert _run(tmp_path, SECOND, "refused", config, "--previous", str(tmp_path / "first")) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "another sync of this table is running" in err[0], err
        assert not (tmp_path / "refused").exists()
        assert _store_rows(pgvector_spec) == before
    finally:
        holder.close()
    assert _run(tmp_path, SECOND, "rerun", config, "--previous", str(tmp_path / "first")) == 0
    assert _run(tmp_path, SECOND, "fresh", _config(tmp_path, None)) == 0
    _assert_store_is(pgvector_spec, read_output(tmp_path / "fresh", "chunks"), model)


def test_a_run_claims_its_table_before_its_pipeline_starts_and_frees_it_at_the_end(pgvector_spec, tmp_path):
    from pipelines.rechunk import parse_job
    from transforms.stores import StoreError, open_store

    source = write_documents(tmp_path / "in.parquet", [{"id": "a", "content": "Some text.", "content_format": "text"}])
    config = _config(tmp_path, pgvector_spec)
    job = parse_job(["--input", str(source), "--output", str(tmp_path / "out"), "--config", str(config)])
    other = open_store(pgvector_spec)
    try:
        assert job.claimed_store is not None
        with pytest.raises(StoreError, match="another sync of this table is running"):
            other.claim_sync()  # held from the checks on, through the chunking
        job.claimed_store.store.close()
        other.claim_sync()  # and free once the run lets it go
    finally:
        other.close()
        job.claimed_store.store.close()


def _unanswered_endpoint_config(folder: Path, store: dict[str, Any]) -> Path:
    """A configuration embedding with an OpenAI-compatible endpoint nobody listens on (port 1)."""
    config = {
        "models": {
            "remote": {
                "type": "OpenAIEmbedder",
                "params": {"base_url": "http://127.0.0.1:1/v1", "model": "m", "retries": 0, "timeout_seconds": 5},
            }
        },
        "embedding": {"model": "remote"},
        "vector_store": {k: v for k, v in store.items() if v is not None and k != "batch_size"},
        "chunkers": {"structure": {"type": "StructureAwareChunker", "params": {}}},
        "default": "structure",
    }
    path = folder / "remote.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_an_embedding_endpoint_that_does_not_answer_is_an_option_error_before_any_chunking(
    milvus_spec, tmp_path, capsys
):
    capsys.readouterr()
    assert _run(tmp_path, FIRST, "run", _unanswered_endpoint_config(tmp_path, milvus_spec)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rechunk: error: embedding model 'remote':"), err
    assert "connection failed" in err[0]
    assert not (tmp_path / "run").exists()


def test_an_embedding_endpoint_that_stops_answering_before_the_sync_fails_the_run_in_one_line(
    milvus_spec, tmp_path, capsys, monkeypatch
):
    import pipelines.sync

    monkeypatch.setattr(pipelines.sync, "check_embedding", lambda spec: None)  # it answered then
    capsys.readouterr()
    assert _run(tmp_path, FIRST, "run", _unanswered_endpoint_config(tmp_path, milvus_spec)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rechunk: error: embedding model 'remote':"), err
    assert not (tmp_path / "run" / "_SUCCESS").exists()


def test_chunks_changed_under_the_sync_fail_it_before_any_delete(milvus_spec, tmp_path, monkeypatch, capsys):
    import pyarrow.parquet as pq

    import pipelines.sync

    config = _config(tmp_path, milvus_spec)
    assert _run(tmp_path, FIRST, "first", config) == 0
    before = _store_rows(milvus_spec)
    sync = pipelines.sync._run_sync

    def half_the_chunks_gone(output, *args):
        # Another process rewrites the run's verified chunk files between the check and the sync.
        for path in sorted(Path(output, "chunks").glob("*.parquet")):
            table = pq.read_table(path)
            pq.write_table(table.slice(0, table.num_rows // 2), path)
        return sync(output, *args)

    monkeypatch.setattr(pipelines.sync, "_run_sync", half_the_chunks_gone)
    capsys.readouterr()
    assert _run(tmp_path, FIRST, "changed", config) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "changed while it synced" in err[0], err
    assert not (tmp_path / "changed" / "_SUCCESS").exists()
    assert set(_store_rows(milvus_spec)) == set(before)  # every chunk still there: nothing deleted


def test_a_run_killed_while_it_syncs_keeps_every_chunk_and_its_rerun_converges(pgvector_spec, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO
    from tests.support.openai_server import FakeOpenAIServer
    from tests.support.stores import claim_when_free
    from transforms.stores import open_store

    server = FakeOpenAIServer().start()
    try:
        config = {
            "models": {
                "remote": {
                    "type": "OpenAIEmbedder",
                    "params": {"base_url": server.base_url, "model": "m", "batch_size": 1, "concurrency": 1},
                }
            },
            "embedding": {"model": "remote"},
            "vector_store": {k: v for k, v in pgvector_spec.items() if v is not None and k != "batch_size"},
            "chunkers": {"structure": {"type": "StructureAwareChunker", "params": {"target_tokens": 120}}},
            "default": "structure",
        }
        path = tmp_path / "remote.yaml"
        path.write_text(yaml.safe_dump(config))
        assert _run(tmp_path, FIRST, "first", path) == 0
        first = read_output(tmp_path / "first", "chunks")
        # The second run: its dimension probes answer, its first embedding of a chunk hangs.
        server.reset()
        server.embedding_faults = ["answer", "answer", ("sleep", 300)]
        source = write_documents(
            tmp_path / "second.parquet", [dict(zip(("id", "content", "content_format"), d)) for d in SECOND]
        )
        argv = ["--input", str(source), "--output", str(tmp_path / "killed"), "--config", str(path)]
        job = subprocess.Popen(
            [sys.executable, "-m", "pipelines.rechunk", *argv, "--previous", str(tmp_path / "first")],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 240
            while len([r for r in server.requests if r[0].endswith("/embeddings")]) < 3:
                assert job.poll() is None, "the run ended before it embedded"
                assert time.monotonic() < deadline, "the run never reached its embedding"
                time.sleep(0.2)
            job.send_signal(signal.SIGKILL)  # killed in the middle of its sync, before its deletes
            job.wait(timeout=60)
        finally:
            job.kill()
        assert not (tmp_path / "killed" / "_SUCCESS").exists()
        assert {c["chunk_key"] for c in first} <= set(_store_rows(pgvector_spec))  # nothing deleted
        waiting = open_store(pgvector_spec)
        try:
            claim_when_free(waiting)  # the server ends the killed run's session
        finally:
            waiting.close()
        server.reset()
        assert _run(tmp_path, SECOND, "rerun", path, "--previous", str(tmp_path / "first")) == 0
        plain = tmp_path / "plain-remote.yaml"
        plain.write_text(yaml.safe_dump({k: v for k, v in config.items() if k != "vector_store"}))
        assert _run(tmp_path, SECOND, "fresh", plain) == 0
    finally:
        server.stop()
    stored = _store_rows(pgvector_spec)
    rerun = read_output(tmp_path / "rerun", "chunks")
    assert sorted(stored) == sorted(c["chunk_key"] for c in rerun)
    assert sorted(c["chunk_key"] for c in rerun) == sorted(
        c["chunk_key"] for c in read_output(tmp_path / "fresh", "chunks")
    )


def test_a_run_over_the_dead_letter_threshold_leaves_the_store_as_it_was(milvus_spec, tmp_path, capsys):
    config = _config(tmp_path, milvus_spec)
    assert _run(tmp_path, FIRST, "first", config) == 0
    before = _store_rows(milvus_spec)
    broken = [(doc_id, "", fmt) for doc_id, _, fmt in FIRST]  # every document empty: dead-lettered
    assert _run(tmp_path, broken, "broken", config) == 3
    assert _store_rows(milvus_spec).keys() == before.keys()
    report = json.loads((tmp_path / "broken" / "report.json").read_text())
    assert report["vector_store"]["synced"] is False and report["vector_store"]["deleted"] == 0
    assert "left as it was" in capsys.readouterr().out


def test_a_store_made_for_another_model_is_refused(milvus_spec, tmp_path, capsys):
    from transforms.stores import open_store

    store = open_store(milvus_spec)
    try:
        store.prepare(dimension=384, model="another-model")
    finally:
        store.close()
    assert _run(tmp_path, FIRST, "run", _config(tmp_path, milvus_spec)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "another-model" in err[0], err
    assert not (tmp_path / "run" / "_SUCCESS").exists()


def _insert_by_hand(spec: dict[str, Any], keys: list[str]) -> None:
    """Rows no run wrote: keys of any shape, a vector of the model's size."""
    from transforms.stores import StoreRow, open_store

    store = open_store(spec)
    try:
        store.upsert([StoreRow(k, "id", "hand", "t", "t", "{}", "f", tuple([0.1] * 384)) for k in keys])
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["milvus", "pgvector"])
def test_rows_of_keys_no_run_wrote_are_deleted_whatever_their_first_character(kind, request, tmp_path):
    spec = request.getfixturevalue(f"{kind}_spec")
    config = _config(tmp_path, spec)
    assert _run(tmp_path, FIRST, "first", config) == 0
    _insert_by_hand(spec, ["manual-row", "ZZZZ", "g" * 64, "~tilde", "A" * 64, "abc"])
    assert _run(tmp_path, FIRST, "again", config) == 0
    chunks = read_output(tmp_path / "again", "chunks")
    assert sorted(_store_rows(spec)) == sorted(c["chunk_key"] for c in chunks)
    report = json.loads((tmp_path / "again" / "report.json").read_text())
    assert report["vector_store"]["deleted"] == 6 and report["embedding"]["chunks_embedded"] == 0


def test_a_run_over_the_threshold_into_a_store_not_made_yet_is_committed_with_status_3(milvus_spec, tmp_path):
    broken = [(doc_id, "", fmt) for doc_id, _, fmt in FIRST]
    assert _run(tmp_path, broken, "broken", _config(tmp_path, milvus_spec)) == 3
    assert (tmp_path / "broken" / "_SUCCESS").exists()
    report = json.loads((tmp_path / "broken" / "report.json").read_text())
    assert report["vector_store"]["synced"] is False and report["vector_store"]["rows_after"] is None


@pytest.mark.parametrize(
    ("kind", "content", "problem"),
    [
        ("milvus", "word" * 20_000, "over Milvus's VARCHAR limit"),
        ("pgvector", "Some text\x00with a NUL.", "NUL character"),
    ],
)
def test_a_chunk_the_store_cannot_hold_is_dead_lettered(kind, content, problem, request, tmp_path):
    spec = request.getfixturevalue(f"{kind}_spec")
    docs = [*FIRST, ("odd", content, "text")]
    assert _run(tmp_path, docs, "run", _config(tmp_path, spec), "--max-dead-letter-fraction", "1") == 0
    dead = [r for r in read_output(tmp_path / "run", "dead_letter") if r["document_id"] == "odd"]
    assert dead and {r["reason"] for r in dead} == {"exceeds_store_limit"} and problem in dead[0]["detail"]
    chunks = read_output(tmp_path / "run", "chunks")
    assert sorted(_store_rows(spec)) == sorted(c["chunk_key"] for c in chunks)


def test_an_unreachable_store_is_an_option_error_before_any_chunking(pgvector_spec, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("RECHUNK_TEST_UNSET", raising=False)
    spec = {**pgvector_spec, "password_env": "RECHUNK_TEST_UNSET"}
    assert _run(tmp_path, FIRST, "run", _config(tmp_path, spec)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "RECHUNK_TEST_UNSET" in err[0], err
    assert not (tmp_path / "run" / "chunks").exists()


def test_a_pgvector_table_whose_vectors_may_be_null_is_refused(pgvector_spec, tmp_path, capsys):
    config = _config(tmp_path, pgvector_spec)
    assert _run(tmp_path, FIRST, "first", config) == 0
    _pg(pgvector_spec, f"ALTER TABLE {pgvector_spec['collection']} ALTER COLUMN embedding DROP NOT NULL")
    capsys.readouterr()
    assert _run(tmp_path, FIRST, "again", config) == 1
    assert "not vector(384) NOT NULL" in capsys.readouterr().err
