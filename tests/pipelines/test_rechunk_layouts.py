"""The chunk job's outputs do not depend on the input's layout or the worker count: the same
documents as one row group (cut into ranges of rows), as many small row groups, and as several
files give the same chunks, manifest and dead-letter rows, in one process and with two worker
processes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.io.filesystems import FileSystems

from pipelines.rechunk import main
from tests.conftest import read_output
from transforms.beam.read import _RowGroupRangesDoFn


def _documents() -> list[dict]:
    """80 documents of about 1,000 to 20,000 characters (0.6 MB), with rows each reason code of
    admission catches among them: a null, an invalid UTF-8 and an empty content, bad metadata, a
    duplicated id; the bad ones also in the last rows (the last range of rows, partial)."""
    rng = random.Random(11)
    words = ["alpha", "beta", "gamma", "delta", "chunk", "token", "river", "stone", "light", "x7", "Über"]
    rows: list[dict[str, Any]] = []
    for i in range(80):
        paragraphs = [" ".join(rng.choices(words, k=rng.randint(40, 400))) for _ in range(rng.randint(3, 9))]
        body = "\n\n".join(paragraphs).encode()
        fmt = "markdown" if i % 3 == 0 else "text"
        if fmt == "markdown":
            body = f"# Title {i}\n\n".encode() + body
        rows.append({"doc_id": f"doc-{i:03d}", "text": body, "content_format": fmt, "metadata": json.dumps({"i": i})})
    rows[5]["text"] = None
    rows[41]["text"] = b"bad \xff utf-8"
    rows[78]["text"] = b"   "
    rows[79]["metadata"] = "[not an object"
    rows[77]["doc_id"] = rows[20]["doc_id"]
    return rows


def _table(rows: list[dict]) -> pa.Table:
    texts = [r["text"] for r in rows]
    data = [t or b"" for t in texts]
    offsets = np.cumsum([0] + [len(t) for t in data]).astype(np.int32)
    validity = pa.array([t is not None for t in texts]).buffers()[1]
    text = pa.Array.from_buffers(
        pa.string(), len(rows), [validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(data))]
    )
    return pa.table(
        {
            "doc_id": [r["doc_id"] for r in rows],
            "text": text,
            "content_format": [r["content_format"] for r in rows],
            "metadata": [r["metadata"] for r in rows],
        }
    )


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> dict[str, str]:
    table = _table(_documents())
    root = tmp_path_factory.mktemp("layouts")
    one = root / "one" / "docs.parquet"
    one.parent.mkdir()
    pq.write_table(table, one, row_group_size=len(table), compression="none")
    many = root / "many" / "docs.parquet"
    many.parent.mkdir()
    pq.write_table(table, many, row_group_size=7)
    files = root / "files"
    files.mkdir()
    for k, start in enumerate(range(0, len(table), 30)):
        pq.write_table(table.slice(start, 30), files / f"part-{k}.parquet")
    return {"one": str(one), "many": str(many), "files": f"{files}/"}


def _run(tmp_path: Path, input_path: str, *beam_args: str) -> Path:
    out = tmp_path / "out"
    argv = ["--input", input_path, "--output", str(out), "--column-map", "id=doc_id,content=text"]
    assert main([*argv, "--max-dead-letter-fraction", "1", *beam_args]) == 0
    return out


def _outputs(out: Path) -> dict[str, list]:
    def rows(sub: str) -> list:
        return sorted(json.dumps(row, sort_keys=True, default=repr) for row in read_output(out, sub))

    return {sub: rows(sub) for sub in ("chunks", "documents", "dead_letter")}


def test_the_one_row_group_is_read_as_several_ranges_of_rows(layouts):
    ranges = list(_RowGroupRangesDoFn().process(FileSystems.match([layouts["one"]])[0].metadata_list[0]))
    assert len(ranges) == 3 and [r[4:] for r in ranges] == [(0, 27), (27, 54), (54, 80)]


@pytest.fixture(scope="module")
def in_process(layouts, tmp_path_factory) -> dict[str, dict[str, list]]:
    return {
        name: _outputs(_run(tmp_path_factory.mktemp(name), path, "--direct_running_mode=in_memory"))
        for name, path in layouts.items()
    }


def test_the_same_outputs_whatever_the_layout(in_process):
    one = in_process["one"]
    assert len(one["chunks"]) > 80 and len(one["documents"]) == 74
    reasons = sorted(json.loads(row)["reason"] for row in one["dead_letter"])
    assert reasons == ["duplicate_document_id"] * 2 + ["empty_document", "invalid_content"] + [
        "invalid_metadata",
        "null_content",
    ]
    assert in_process["many"] == one
    assert in_process["files"] == one


@pytest.mark.slow
def test_the_same_outputs_with_two_worker_processes(layouts, in_process, tmp_path):
    two = _run(tmp_path, layouts["one"], "--direct_running_mode=multi_processing", "--direct_num_workers=2")
    assert _outputs(two) == in_process["one"]


def test_a_run_with_previous_keeps_every_document_of_a_one_row_group_input(layouts, tmp_path):
    """With ``--previous``, each range of rows is read with the previous entries of its own rows
    (the join by range): every document of the one row group read in ranges of rows is found
    unchanged, from a previous run on another layout, and the output equals that run's."""
    previous = _run(tmp_path / "previous", layouts["many"], "--direct_running_mode=in_memory")
    out = _run(tmp_path / "again", layouts["one"], "--direct_running_mode=in_memory", "--previous", str(previous))
    report = json.loads((out / "report.json").read_text())
    assert report["documents_skipped_unchanged"] == 74
    assert report["incremental"]["documents_new"] == 0 and report["incremental"]["chunks_deleted"] == 0
    assert _outputs(out) == _outputs(previous)
