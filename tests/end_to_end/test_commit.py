"""Whole runs and the commit protocol: two runs into one output, and ``gs://`` outputs.

The GCS emulator the tests use (``gcp-storage-emulator``) ignores ``ifGenerationMatch``: there
two lock creates both succeed, as they do not on Cloud Storage. The gs:// tests here check what
holds regardless: a lock of a running run refuses a second run, and a run whose lock another
writer replaced is not committed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from pipelines import commit, storage
from pipelines.rechunk import main
from tests.conftest import REPO, venv_env
from transforms.beam.write import RUN_ID_KEY

SAMPLE = REPO / "sample" / "docs.parquet"


def _rechunk(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pipelines.rechunk", *args],
        cwd=REPO,
        env=env or venv_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_two_runs_into_one_output_commit_one_and_refuse_the_other(tmp_path):
    """Started together, one ``in_memory`` and one ``multi_processing``: exactly one exits 0 with
    an output that ``rechunk check`` passes, every data file its own; the other exits 2 with one
    line and leaves that output as the first wrote it."""
    out = tmp_path / "out"
    runs = [
        _rechunk("--input", str(SAMPLE), "--output", str(out), "--direct_running_mode", "in_memory"),
        _rechunk(
            "--input",
            str(SAMPLE),
            "--output",
            str(out),
            "--direct_running_mode",
            "multi_processing",
            "--direct_num_workers",
            "2",
        ),
    ]
    outcomes = [(run.wait(timeout=300), *run.communicate()) for run in runs]
    codes = sorted(code for code, _, _ in outcomes)
    assert codes == [0, 2], outcomes
    ((_, _, refused),) = [o for o in outcomes if o[0] == 2]
    lines = refused.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rechunk: error: --output {out}: "), lines
    assert any(m in lines[0] for m in ("another run is writing there", "already holds files", "holds a finished run"))
    assert commit.unfinished_reason(str(out)) is None and not (out / commit.LOCK_NAME).exists()
    marker = json.loads((out / commit.MARKER_NAME).read_text())
    for name in marker["files"]:
        assert pq.ParquetFile(out / name).metadata.metadata[RUN_ID_KEY].decode() == marker["run_id"]
    check = subprocess.run(
        [sys.executable, "-m", "pipelines.rechunk", "check", "--input", str(SAMPLE), "--output", str(out)],
        cwd=REPO,
        env=venv_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def _gs_read(path: str) -> bytes | None:
    return storage.read_bytes(path)


@pytest.mark.slow
def test_a_gs_run_commits_and_releases_its_lock(gcs):
    source = gcs.upload(SAMPLE, "commit/in/docs.parquet")
    output = gcs.url("commit/out")
    assert main(["--input", source, "--output", output]) == 0
    assert _gs_read(f"{output}/{commit.LOCK_NAME}") is None
    assert commit.unfinished_reason(output) is None
    marker = json.loads(_gs_read(f"{output}/{commit.MARKER_NAME}"))
    assert set(marker["files"]) == {
        "chunks/chunks-00000-of-00001.parquet",
        "dead_letter/admission-00000-of-00001.parquet",
        "dead_letter/dead_letter-00000-of-00001.parquet",
        "documents/documents-00000-of-00001.parquet",
    }
    assert marker["files"]["chunks/chunks-00000-of-00001.parquet"]["rows"] == 20


@pytest.mark.slow
def test_a_gs_output_a_running_run_holds_is_refused(gcs, capsys):
    source = gcs.upload(SAMPLE, "held/in/docs.parquet")
    output = gcs.url("held/out")
    held = commit.LockInfo("other", socket.gethostname(), os.getpid(), "t")
    storage.write_whole(f"{output}/{commit.LOCK_NAME}", held.to_bytes())
    assert main(["--input", source, "--output", output]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{output}/{commit.LOCK_NAME}: run other" in err[0], err
    assert commit.read_lock(output) == held


@pytest.mark.slow
def test_a_gs_run_whose_lock_another_writer_took_is_not_committed(gcs, capsys, monkeypatch):
    """Another run's lock written over this run's (the emulator's create does not refuse it): the
    run ends with exit 1, one line, and no report.json nor _SUCCESS; the other lock stays."""
    import pipelines.rechunk as rechunk

    source = gcs.upload(SAMPLE, "taken/in/docs.parquet")
    output = gcs.url("taken/out")
    other = commit.LockInfo("other", "another-host", 1, "t")
    build_report = rechunk.build_report

    def taken(*args, **kwargs):
        storage.write_whole(f"{output}/{commit.LOCK_NAME}", other.to_bytes())
        return build_report(*args, **kwargs)

    monkeypatch.setattr(rechunk, "build_report", taken)
    assert main(["--input", source, "--output", output]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is no longer this run's" in err[0] and "nothing committed" in err[0], err
    assert _gs_read(f"{output}/report.json") is None and _gs_read(f"{output}/{commit.MARKER_NAME}") is None
    assert commit.read_lock(output) == other
