"""The job on cluster-shaped runners, offline: Beam's portable job API with separate SDK worker
processes (the path Flink, Spark and Dataflow take), and a Dataflow dry run that builds the job graph.
"""

from __future__ import annotations

import json
import sys

import pytest

from pipelines.rechunk import main
from tests.conftest import REPO, Service, free_ports, read_output, sample_with_dead_letters, venv_env

#: Keys of report.json that differ between two runs of the same input.
RUN_KEYS = ("wall_seconds", "output")


def _outcome(out) -> tuple[list, list, dict]:
    """What must not depend on the runner: chunk ids, dead-letter rows, and the report's figures."""
    chunks = sorted(
        (c["chunk_id"], c["document_id"], c["chunk_index"], c["token_count"]) for c in read_output(out, "chunks")
    )
    dead = sorted(
        (d["document_id"] or "", d["chunk_id"] or "", d["stage"], d["reason"], d["payload"] or "")
        for d in read_output(out, "dead_letter")
    )
    report = json.loads((out / "report.json").read_text())
    return chunks, dead, {k: v for k, v in report.items() if k not in RUN_KEYS}


@pytest.fixture(scope="module")
def portable(tmp_path_factory, request):
    """A local job service and an SDK worker pool, each in its own process group, in a folder of their own.

    Yields ``(job_port, worker_port, worker_pool)``. The worker pool starts each SDK worker as the
    first ``python`` on PATH: this venv's.
    """
    folder = tmp_path_factory.mktemp("portable")
    job_port, worker_port = free_ports(2)
    services: list[Service] = []
    request.addfinalizer(lambda: [s.stop() for s in services])
    services.append(
        Service(
            [sys.executable, "-m", "apache_beam.runners.portability.local_job_service_main", "--port", str(job_port)],
            folder / "job_service.log",
            cwd=folder,
            env=venv_env(),
        )
    )
    services.append(
        Service(
            [sys.executable, "-m", "apache_beam.runners.worker.worker_pool_main", "--service_port", str(worker_port)],
            folder / "worker_pool.log",
            cwd=folder,
            env=venv_env(),
        )
    )
    services[0].wait_for_port(job_port)
    services[1].wait_for_port(worker_port)
    return job_port, worker_port, services[1]


@pytest.mark.slow
def test_portable_runner_with_sdk_workers_matches_the_direct_runner(portable, tmp_path, monkeypatch):
    job_port, worker_port, worker_pool = portable
    docs = sample_with_dead_letters(tmp_path / "in" / "docs.parquet")
    direct = tmp_path / "direct"
    assert main(["--input", str(docs), "--output", str(direct), "--max-dead-letter-fraction", "1"]) == 0
    # Relative paths, from a folder that is not the worker pool's: the workers must still find them.
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "--input",
            "in/*.parquet",
            "--output",
            "portable",
            "--runner=PortableRunner",
            f"--job_endpoint=localhost:{job_port}",
            "--environment_type=EXTERNAL",
            f"--environment_config=localhost:{worker_port}",
            "--max-dead-letter-fraction",
            "1",
        ]
    )
    assert code == 0
    # The bundles ran in an SDK worker process the pool started, not in this one.
    assert "Starting worker with command" in worker_pool.log.read_text()
    chunks, dead, report = _outcome(tmp_path / "portable")
    assert (chunks, dead, report) == _outcome(direct)
    assert len(chunks) == 20 and report["documents_read"] == 13
    assert report["dead_letter_by_reason"] == {
        "duplicate_document_id": 2,
        "empty_document": 1,
        "invalid_docling_json": 1,
        "null_content": 1,
        "unsupported_content_format": 1,
    }
    assert {d[0] for d in dead} == {"dup", "null-content", "blank", "pdf", "bad-docling"}


@pytest.mark.slow
def test_local_paths_reach_workers_absolute(tmp_path, monkeypatch):
    from tokenizers import Tokenizer, models

    from pipelines.paths import worker_path
    from pipelines.rechunk import parse_job

    sample_with_dead_letters(tmp_path / "in" / "docs.parquet")
    (tmp_path / "tok").mkdir()
    Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")).save(str(tmp_path / "tok" / "tokenizer.json"))
    monkeypatch.chdir(tmp_path)
    job = parse_job(["--input", "in/*.parquet", "--output", "out", "--tokenizer", "hf:tok"])
    assert job.spec["tokenizer"] == f"hf:{tmp_path / 'tok'}"  # workers load it again
    assert job.output == "out"  # as given, for the summary and report.json
    assert worker_path(job.input) == f"{tmp_path}/in/*.parquet"
    assert worker_path("gs://bucket/in/*.parquet") == "gs://bucket/in/*.parquet"


@pytest.mark.slow
def test_dataflow_dry_run_builds_the_graph_and_runs_nothing(gcs, tmp_path, capsys):
    from apache_beam.io.filesystems import FileSystems

    docs = gcs.upload(sample_with_dead_letters(tmp_path / "docs.parquet"), "dry/in/docs.parquet")
    output = gcs.url("dry/out")
    code = main(
        [
            "--input",
            docs,
            "--output",
            output,
            "--runner=DataflowRunner",
            "--dry_run=True",
            "--project=rechunk-test",
            "--region=europe-west1",
            f"--temp_location={gcs.url('dry/tmp')}",
            f"--setup_file={REPO / 'setup.py'}",
        ]
    )
    assert code == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        f"rechunk: dry run: DataflowRunner built the job graph; nothing ran and nothing was written to {output}"
    )
    # Nothing staged, written or reported: only the input is in the bucket's dry/ folder.
    assert [m.path for m in FileSystems.match([gcs.url("dry/**")])[0].metadata_list] == [docs]
