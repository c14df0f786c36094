"""A nightly sync of a vector store: what an incremental run embeds and costs against a full one.

    python benchmarks/vector_store.py --input docs.parquet [--store milvus|pgvector] [--limit N]
        [--edited 0.10] [--removed 0.01] [--added 0.01] [--seed 0] [--out FILE.md]

Makes the second version of the input as ``benchmarks/edit_locality.py`` does (seeded: a tenth
of the documents edited by one paragraph, a hundredth removed, a hundredth added), then runs the
job, each run a process of its own, with the bundled all-MiniLM-L6-v2 and a fresh store (Milvus
Lite, or a local PostgreSQL with pgvector):

1. *first*: the first version into an empty store (every chunk embedded);
2. *incremental*: the second version with ``--previous`` the first run, into that store;
3. *full*: the second version, no ``--previous``, into another empty store (what a nightly run
   without incremental sync costs).

The table gives, per run, the wall and CPU seconds and the report's ``embedding`` and
``vector_store`` counts; then the chunks the incremental run embedded against the second
version's chunks whose ``chunk_key`` the first run did not have (they must be equal), against
what a store keyed on ``chunk_id`` would have embedded, and against the whole corpus; and the
incremental sync's wall time as a fraction of the full one's. Needs the ``semantic`` and
``store`` extras.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.edit_locality import make_versions  # noqa: E402
from benchmarks.measurement import (  # noqa: E402
    SAMPLE,
    header,
    job_command,
    measure_process,
    read_documents,
    shown,
    write_markdown,
)


def _config(folder: Path, store: dict[str, Any]) -> Path:
    import yaml

    path = folder / f"{store['collection']}.yaml"
    config = {
        "models": {"minilm": {"type": "SentenceTransformerEmbedder", "params": {}}},
        "embedding": {"model": "minilm"},
        "vector_store": store,
        "chunkers": {"structure": {"type": "StructureAwareChunker", "params": {}}},
        "default": "structure",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def _write(rows: list[tuple[str, str, str]], path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = list(zip(*rows)) if rows else [(), (), ()]
    table = pa.table(
        {name: pa.array(list(col), pa.string()) for name, col in zip(("id", "content", "content_format"), columns)}
    )
    pq.write_table(table, path, row_group_size=64)
    return path


def _keys(output: Path, column: str) -> set[str]:
    import pyarrow.dataset as ds

    return set(ds.dataset(str(output / "chunks"), format="parquet").to_table(columns=[column]).column(0).to_pylist())


def _stores(kind: str, folder: Path) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """Two empty stores of ``kind`` (the incremental pair's and the full run's), and a stop function."""
    if kind == "milvus":
        return (
            {"type": "milvus", "uri": str(folder / "nightly.db"), "collection": "nightly"},
            {"type": "milvus", "uri": str(folder / "full.db"), "collection": "full"},
            lambda: None,
        )
    server = folder / "postgres"
    uri = subprocess.run(
        [sys.executable, str(REPO / "examples" / "local_postgres.py"), "start", str(server)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    stop = [sys.executable, str(REPO / "examples" / "local_postgres.py"), "stop", str(server)]
    return (
        {"type": "pgvector", "uri": uri, "collection": "nightly"},
        {"type": "pgvector", "uri": uri, "collection": "full"},
        lambda: subprocess.run(stop, check=False),
    )


def _run(name: str, source: Path, output: Path, config: Path, *more: str) -> dict[str, Any]:
    argv = job_command("--input", str(source), "--output", str(output), "--config", str(config), *more)
    measured = measure_process(argv, output)
    if measured["exit"] != 0:
        raise SystemExit(f"the {name} run exited with status {measured['exit']}")
    report = json.loads((output / "report.json").read_text())
    return {"name": name, **measured, "report": report}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", default=str(SAMPLE))
    parser.add_argument("--store", choices=("milvus", "pgvector"), default="milvus")
    parser.add_argument("--limit", type=int, default=None, help="only the first N documents")
    parser.add_argument("--edited", type=float, default=0.10)
    parser.add_argument("--removed", type=float, default=0.01)
    parser.add_argument("--added", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    table = read_documents(args.input, columns=["id", "content", "content_format"])
    rows = [(str(i), c, f or "text") for i, c, f in zip(*(table.column(n).to_pylist() for n in table.column_names))]
    rows = [r for r in rows if r[1] and r[2] != "docling"][: args.limit]
    versions = make_versions(rows, args.edited, args.removed, args.added, args.seed)
    with tempfile.TemporaryDirectory(prefix="rechunk-sync-") as scratch:
        folder = Path(scratch)
        first_in, second_in = (
            _write(versions.first, folder / "v1.parquet"),
            _write(versions.second, folder / "v2.parquet"),
        )
        nightly, full, stop = _stores(args.store, folder)
        try:
            runs = [
                _run("first", first_in, folder / "first", _config(folder, nightly)),
                _run(
                    "incremental",
                    second_in,
                    folder / "second",
                    _config(folder, nightly),
                    "--previous",
                    str(folder / "first"),
                ),
                _run("full", second_in, folder / "full", _config(folder, full)),
            ]
        finally:
            stop()
        by_key = len(_keys(folder / "second", "chunk_key") - _keys(folder / "first", "chunk_key"))
        by_id = len(_keys(folder / "second", "chunk_id") - _keys(folder / "first", "chunk_id"))
        corpus = len(_keys(folder / "second", "chunk_key"))
    text = _table(runs, by_key, by_id, corpus, versions, args)
    print(text)
    write_markdown(args.out, text)
    return 0


def _table(runs: list[dict[str, Any]], by_key: int, by_id: int, corpus: int, versions, args) -> str:
    lines = [
        *header("apache-beam", "sentence-transformers", "torch", "pymilvus", "milvus-lite", "psycopg"),
        "",
        f"Input: {shown(args.input)}, {len(versions.first):,} documents; second version: "
        f"{len(versions.edits):,} edited by one paragraph, {len(versions.removed):,} removed, "
        f"{len(versions.added):,} added (seed {args.seed}). Store: {args.store}. Model: all-MiniLM-L6-v2 "
        "(its tokenizer, 256 tokens), StructureAwareChunker.",
        "",
        "| run | wall s | CPU s | chunks | embedded | reused | upserted | updated | deleted | rows after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        report, embedding, store = run["report"], run["report"]["embedding"], run["report"]["vector_store"]
        lines.append(
            f"| {run['name']} | {run['seconds']:.1f} | {run['cpu_total']:.1f} | {report['chunks_written']:,} | "
            f"{embedding['chunks_embedded']:,} | {embedding['chunks_reused']:,} | {store['upserted']:,} | "
            f"{store['updated']:,} | {store['deleted']:,} | {store['rows_after']:,} |"
        )
    embedded = runs[1]["report"]["embedding"]["chunks_embedded"]
    lines += [
        "",
        f"- Embedded by the incremental run: {embedded:,}; chunks whose `chunk_key` is new: {by_key:,} "
        f"({'equal' if embedded == by_key else 'NOT equal'}); a store keyed on `chunk_id` would embed {by_id:,} "
        f"({by_id / max(embedded, 1):.2f}x); the whole corpus is {corpus:,} ({corpus / max(embedded, 1):.1f}x).",
        f"- Incremental sync wall time / full: {runs[1]['seconds'] / runs[2]['seconds']:.2f}; "
        f"CPU: {runs[1]['cpu_total'] / runs[2]['cpu_total']:.2f}.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
