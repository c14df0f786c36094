"""Incremental re-chunking (``--previous``): wall and CPU time against a full run, and equality with it.

    python benchmarks/incremental.py [--input sample/docs.parquet] [--changed 0.10] [--removed 5]
        [--rounds 3] [--workdir DIR] [--out FILE.md]
        [-- any job option, for every run: --direct_running_mode=multi_processing --direct_num_workers=2]

Builds a second version of the input (a Parquet file or folder) in which every document whose
position in id order is a multiple of ``1/changed`` has one sentence appended (10% by default) and
``--removed`` documents (5 by default, spread over the id order) are gone, runs the job once on
the original input (the previous run), then, interleaved over ``--rounds`` rounds in this one
process so that all runs see the same machine: a full run on the second version, the incremental
run on it with ``--previous``, and runs on a one-document file, without and with a one-document
``--previous`` (the runner's fixed start-up, for each graph). Each run is a fresh
``python -m pipelines.rechunk`` process on the DirectRunner (FnApiRunner, in_memory, unless job
options after ``--`` say otherwise), timed from start to exit. Runs write to ``--workdir``
(new or empty; default: a temporary folder, removed afterwards).

Each run's CPU seconds (user + system of the job's process and its children) are recorded beside
its wall time, and the fractions are given by CPU time too: on a shared machine the wall times of
one run vary with the others' load, its CPU time much less.

It then checks that the incremental output equals the full run's: the same chunk rows (every
column), dead-letter rows and manifest rows, as sets; that ``deleted/`` lists, per document, the
previous run's chunk ids the full run no longer has (in chunk order, ``document_removed`` for the
removed documents); and that ``documents_skipped_unchanged`` is the number of unchanged
documents; it exits with a message otherwise. Last, it measures in this process what ``--previous``
checks (page checksums, each kept row's ``chunk_id`` and ``document_hash``, each kept document's
count and indexes) over every row of the previous run's ``chunks/``, against a plain read of those
files, side by side over the rounds. Prints a Markdown table (best round of each) and
writes it to ``--out`` when given. Fractions given: ``(incremental - start-up) / (full -
start-up)`` (the strictest: start-up out of both), the same with the incremental graph's own
one-document start-up, and the target ``incremental <= 0.15 x full + start-up`` read as
``(incremental - incremental start-up) / full``.

    python benchmarks/incremental.py --scale-documents 25000 [--scale 1 2 4 8] [--other-code DIR]
        [--workers-per-factor K] [--vector-store pgvector] [--workdir DIR] [--out FILE.md] [-- job options]

Memory by corpus size instead: for each factor of ``--scale``, ``--scale-documents`` times that
many tiny plain-text documents with distinct ids (generated, the same on every run; one file of
``--scale-documents`` per factor: a corpus grows by files), a first run,
then an incremental run with ``--previous`` on the same documents with every tenth one edited.
Each incremental run is measured as a process (``measurement.measure_process``): wall time, the
job process's peak resident memory (``VmHWM``) and the peaks of its worker processes
(``multi_processing``). With ``--other-code DIR`` (another checkout of rechunk, e.g. the main
branch's) each size's first and incremental runs are made with that code too, one code after the
other (each code's incremental run reads its own first run). The incremental run must skip every
unedited document (its ``documents_skipped_unchanged``), and on the smallest size its chunks must
equal a fresh run's, or the script exits.
With ``--workers-per-factor K`` every run of a size with factor ``f`` has ``K * f`` worker
processes (``multi_processing``): each worker's share of the corpus stays the same while the
corpus grows, so a worker's peak shows what the job holds beyond its share (a side input of the
whole manifest, say), which this runner's whole-partition bundles would otherwise hide. With
``--vector-store pgvector`` every run also syncs a table of its own per size in a local
PostgreSQL that the script starts (the ``store`` extra), with vectors from a local
OpenAI-compatible server (a hashed bag of words, so that the model's cost stays out of the
figures); each store must hold exactly its run's chunks, and the reports' ``embedding`` and
``vector_store`` figures are added.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.measurement import (  # noqa: E402
    SAMPLE,
    header,
    job_command,
    job_options,
    measure_process,
    read_documents,
    shown,
    write_markdown,
)

#: Row groups of the written versions when the input is a folder (a file's own are kept).
ROW_GROUP_ROWS = 256


def _run(args: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the job's process and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    command = [sys.executable, "-m", "pipelines.rechunk", "--max-dead-letter-fraction", "1", *args]
    subprocess.run(command, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _rows(folder: Path) -> list[tuple]:
    table = ds.dataset(str(folder), format="parquet").to_table()
    rows = table.to_pylist()
    return sorted(tuple((k, json.dumps(v, sort_keys=True)) for k, v in sorted(row.items())) for row in rows)


def _expected_deleted(previous: Path, full: Path) -> list[tuple]:
    """``deleted/`` rows as the contract defines them, from the previous run's chunks and the full run's."""
    old = (
        ds.dataset(str(previous / "chunks"), format="parquet")
        .to_table(columns=["document_id", "chunk_index", "chunk_id"])
        .to_pylist()
    )
    new = ds.dataset(str(full / "chunks"), format="parquet").to_table(columns=["document_id", "chunk_id"])
    kept, live = set(new.column("chunk_id").to_pylist()), set(new.column("document_id").to_pylist())
    gone: dict[str, list[tuple[int, str]]] = {}
    for row in old:
        if row["chunk_id"] not in kept:
            gone.setdefault(row["document_id"], []).append((row["chunk_index"], row["chunk_id"]))
    return sorted((doc, [c for _, c in sorted(ids)], doc not in live) for doc, ids in gone.items())


def make_versions(source: Path, workdir: Path, changed: float, removed: int) -> tuple[Path, Path, Path, int, set[str]]:
    """The corpus as given, its second version (edited, with ``removed`` documents gone), a
    one-document file; and how many documents of the second version changed, the removed ids."""
    table = read_documents(source)
    # The versions keep the source file's row groups, as the job reads them.
    row_group_size = ROW_GROUP_ROWS
    if source.is_file():
        metadata = pq.ParquetFile(source).metadata
        row_groups = (metadata.row_group(i).num_rows for i in range(metadata.num_row_groups))
        row_group_size = max(1, max(row_groups, default=1))
    ids = table.column("id").to_pylist()
    contents = table.column("content").to_pylist()
    step = max(1, round(1 / changed))
    order = sorted(range(len(ids)), key=lambda i: ids[i])
    edited = set(order[::step])
    # Removed documents sit half a step after edited ones, so no edited document is removed.
    gone = set(order[step // 2 :: max(1, len(order) // max(1, removed))][:removed]) - edited
    new_contents = [
        c + "\n\nThis paragraph was added for the incremental benchmark.\n" if i in edited else c
        for i, c in enumerate(contents)
    ]
    v1, v2, tiny = workdir / "v1.parquet", workdir / "v2.parquet", workdir / "tiny.parquet"
    pq.write_table(table, v1, row_group_size=row_group_size)
    second = table.set_column(table.schema.get_field_index("content"), "content", pa.array(new_contents, pa.string()))
    second = second.take([i for i in range(len(ids)) if i not in gone])
    pq.write_table(second, v2, row_group_size=row_group_size)
    pq.write_table(table.slice(0, 1), tiny)
    return v1, v2, tiny, len(edited), {ids[i] for i in gone}


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--input", default=str(SAMPLE), help="a Parquet file or folder of documents (default: sample/docs.parquet)"
    )
    parser.add_argument("--changed", type=float, default=0.10, help="fraction of documents edited (default: 0.10)")
    parser.add_argument("--removed", type=int, default=5, help="documents gone from the second version")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", help="folder for the inputs and runs (default: a temporary one, removed)")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    parser.add_argument("--scale-documents", type=int, help="memory by corpus size: tiny documents at scale 1")
    parser.add_argument("--scale", type=int, nargs="+", default=[1, 2, 4, 8], help="the corpus sizes (factors)")
    parser.add_argument("--other-code", help="another checkout of rechunk whose incremental runs are measured too")
    parser.add_argument(
        "--workers-per-factor",
        type=int,
        metavar="K",
        help="with --scale-documents: run every job with K worker processes per factor of --scale "
        "(multi_processing), so that each worker's share of the corpus is the same at every size",
    )
    parser.add_argument(
        "--vector-store",
        choices=("pgvector",),
        help="with --scale-documents: every run also syncs a vector store (a local PostgreSQL with pgvector "
        "that the script starts; vectors from a local OpenAI-compatible server, a hashed bag of words)",
    )
    parser.add_argument(
        "--bounded-bundles",
        type=int,
        metavar="N",
        help="with --scale-documents: measure each incremental run also with every bundle split past N elements "
        "(the FnApiRunner's split managers; give --direct_running_mode=multi_processing --direct_num_workers=1)",
    )
    parser.add_argument(
        "--drop-output-streams",
        action="store_true",
        help="with --bounded-bundles: a third variant that also drops each data output's kept stream after a bundle",
    )
    parser.add_argument(
        "--trace-heap", action="store_true", help="with --bounded-bundles: trace the workers' Python heap (tracemalloc)"
    )
    parser.add_argument("job_options", nargs=argparse.REMAINDER, help="after --: options for every job run")
    return parser.parse_args(argv)


_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def tiny_corpus(n: int, edited: bool, start: int = 0) -> pa.Table:
    """``n`` tiny plain-text documents with distinct ids (``doc-00000000`` ..., from ``start``);
    ``edited``: every tenth one's content changed."""
    numbers = range(start, start + n)
    return pa.table(
        {
            "id": [f"doc-{i:08d}" for i in numbers],
            "content": [
                f"{_WORDS[i % 10]} {_WORDS[i * 7 % 10]} note {i}{' (edited)' if edited and i % 10 == 0 else ''}."
                for i in numbers
            ],
            "content_format": ["text"] * n,
        }
    )


def _write_corpus(folder: Path, files: int, per_file: int, edited: bool) -> str:
    """``files`` files of ``per_file`` tiny documents each in ``folder``; the job's ``--input`` for them."""
    folder.mkdir(parents=True)
    for k in range(files):
        table = tiny_corpus(per_file, edited, start=k * per_file)
        pq.write_table(table, folder / f"part-{k:03d}.parquet", row_group_size=10_000)
    return f"{folder}/"


def _factor_options(args: argparse.Namespace, factor: int, options: list[str]) -> list[str]:
    """The job options of one size: ``options``, and with ``--workers-per-factor`` that many
    worker processes per factor (``multi_processing``)."""
    if not args.workers_per_factor:
        return options
    workers = args.workers_per_factor * factor
    return [*options, "--direct_running_mode=multi_processing", f"--direct_num_workers={workers}"]


class _Sync:
    """With ``--vector-store``: a local PostgreSQL with pgvector and a local OpenAI-compatible
    embeddings server, both started here, and a configuration per run that syncs a table of
    that server; without it, nothing (``options`` gives no ``--config``)."""

    def __init__(self, kind: str | None, workdir: Path) -> None:
        self.kind, self.workdir = kind, workdir
        self.uri = ""
        self.server: Any = None

    def __enter__(self) -> _Sync:
        if self.kind:
            from tests.support.openai_server import FakeOpenAIServer

            self.uri = subprocess.run(
                [sys.executable, str(REPO / "examples" / "local_postgres.py"), "start", str(self.workdir / "postgres")],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            self.server = FakeOpenAIServer().start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.stop()
        if self.uri:
            stop = [
                sys.executable,
                str(REPO / "examples" / "local_postgres.py"),
                "stop",
                str(self.workdir / "postgres"),
            ]
            subprocess.run(stop, check=False, capture_output=True)

    def options(self, table: str) -> list[str]:
        """``--config`` of a configuration that embeds with the local server and syncs ``table``."""
        if not self.kind:
            return []
        import yaml

        self.server.reset()  # the server's record of requests would grow with every run
        config = {
            "models": {"bag": {"type": "OpenAIEmbedder", "params": {"base_url": self.server.base_url, "model": "bag"}}},
            "embedding": {"model": "bag"},
            "vector_store": {"type": self.kind, "uri": self.uri, "collection": table},
            "chunkers": {"structure": {"type": "StructureAwareChunker", "params": {}}},
            "default": "structure",
        }
        path = self.workdir / f"{table}.yaml"
        path.write_text(yaml.safe_dump(config))
        return ["--config", str(path)]

    def check(self, label: str, report: dict) -> None:
        """Exit unless the run's store holds exactly its chunks (the report's figures)."""
        if self.kind and report["vector_store"]["rows_after"] != report["chunks_written"]:
            sys.exit(f"{label}: the store holds {report['vector_store']['rows_after']} rows, not the run's chunks")


def memory_by_size(args: argparse.Namespace, workdir: Path, options: list[str]) -> list[str]:
    """The ``--scale-documents`` table: each size's incremental run, by code (see the docstring)."""
    with _Sync(args.vector_store, workdir) as sync:
        return _memory_by_size(args, workdir, options, sync)


def _memory_by_size(args: argparse.Namespace, workdir: Path, options: list[str], sync: _Sync) -> list[str]:
    codes = {"this code": REPO} | ({"other code": Path(args.other_code).resolve()} if args.other_code else {})
    variants = _variants(args, workdir)
    rows = []
    for factor in args.scale:
        n = args.scale_documents * factor
        size_options = _factor_options(args, factor, options)
        # A corpus grows by files (and so by row-group ranges): one file of --scale-documents per factor.
        v1 = _write_corpus(workdir / f"v1-{factor}", factor, args.scale_documents, edited=False)
        v2 = _write_corpus(workdir / f"v2-{factor}", factor, args.scale_documents, edited=True)
        for code_label, code in codes.items():
            # Each code makes its own first run: a code whose engine version differs would re-chunk
            # every document of another code's previous output.
            previous = workdir / f"previous-{factor}-{code_label.replace(' ', '-')}"
            table = f"chunks_{factor}_{code_label.replace(' ', '_')}"
            first_argv = job_command("--input", v1, "--output", str(previous), *size_options, *sync.options(table))
            first = measure_process(first_argv, previous, cwd=code)
            if first["exit"] != 0:
                sys.exit(f"{code_label}: the first run on {n} documents exited {first['exit']}")
            for variant, environment in variants.items():
                label = f"{code_label}, {variant}" if variant else code_label
                out = workdir / f"inc-{factor}-{label.replace(' ', '-').replace(',', '')}"
                argv = job_command(
                    "--input",
                    v2,
                    "--output",
                    str(out),
                    "--previous",
                    str(previous),
                    *size_options,
                    *sync.options(table),
                )
                run = _measure_hooked(argv, out, code, environment, workdir / "hook-log")
                report = json.loads((out / "report.json").read_text()) if run["exit"] == 0 else {}
                if report.get("documents_skipped_unchanged") != n - (n + 9) // 10:
                    sys.exit(f"{label}: {n} documents, skipped {report.get('documents_skipped_unchanged')}")
                sync.check(label, report)
                if sync.kind:
                    run["synced"] = {**report["embedding"], **report["vector_store"]}
                if factor == min(args.scale) or args.bounded_bundles:
                    fresh_options = [*size_options, *sync.options(f"fresh_{factor}")]
                    if _rows(out / "chunks") != _rows_of_fresh(v2, workdir, factor, fresh_options, code):
                        sys.exit(f"{label}: the incremental chunks differ from a fresh run's")
                rows.append((factor, n, label, first, run))
                shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(previous, ignore_errors=True)
        for folder in ("v1", "v2", "fresh"):
            shutil.rmtree(workdir / f"{folder}-{factor}", ignore_errors=True)
    workers = (
        f"{args.workers_per_factor} worker process{'es' if args.workers_per_factor > 1 else ''} per factor "
        "(multi_processing), so each worker's share of the corpus is the same at every size"
        if args.workers_per_factor
        else "the job options below"
    )
    lines = [
        f"Incremental runs by corpus size: {args.scale_documents:,} tiny documents times "
        f"{', '.join(str(f) for f in args.scale)} (one file of {args.scale_documents:,} per factor, row groups of "
        f"10,000), every tenth edited; {workers}; {'other ' if args.workers_per_factor else ''}job options: "
        f"{' '.join(options) or ('none' if args.workers_per_factor else 'none (in_memory)')}. "
        "Peak: `VmHWM` of the job process and of its "
        "worker processes (multi_processing): the largest and the median over the workers"
        + (" (the chunk pipeline's and the sync pipeline's: each starts its own)." if sync.kind else "."),
        "",
        "| documents | code | worker processes | incremental wall s | incremental CPU s | job process peak MiB "
        "| largest worker peak MiB | median worker peak MiB "
        "| first run (full): job process peak MiB | first run: largest worker peak MiB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for _, n, label, first, run in rows:
        each = run["workers_high_water_each_mib"]
        median = each[len(each) // 2] if each else 0.0
        lines.append(
            f"| {n:,} | {label} | {len(each)} | {run['seconds']:.1f} | {run['cpu_total']:.1f} | "
            f"{run['high_water_mib']:.0f} | {run['workers_high_water_mib']:.0f} | {median:.0f} | "
            f"{first['high_water_mib']:.0f} | {first['workers_high_water_mib']:.0f} |"
        )
    lines += _slope_lines(rows)
    if sync.kind:
        lines += _sync_lines(args.vector_store, rows)
    if args.bounded_bundles:
        lines += _bundle_lines(rows)
    lines += [
        "",
        "Checked: every incremental run skipped exactly the unedited documents, and its chunks equal a fresh "
        f"run's on {'every size' if args.bounded_bundles else 'the smallest size'}"
        + ("; each store held exactly its run's chunks." if sync.kind else "."),
    ]
    return lines


def _sync_lines(kind: str, rows: list[tuple]) -> list[str]:
    """The incremental runs' store figures (the report's ``embedding`` and ``vector_store``)."""
    lines = [
        "",
        f"Each run also synced a {kind} table (its own per size) with vectors from a local OpenAI-compatible "
        "server; the incremental runs' reports:",
        "",
        "| documents | code | embedded | reused | upserted | updated | deleted | rows after |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for _, n, label, _, run in rows:
        s = run["synced"]
        lines.append(
            f"| {n:,} | {label} | {s['chunks_embedded']:,} | {s['chunks_reused']:,} | {s['upserted']:,} | "
            f"{s['updated']:,} | {s['deleted']:,} | {s['rows_after']:,} |"
        )
    return lines


def _slope_lines(rows: list[tuple]) -> list[str]:
    """Per code: the largest worker peak (or the job process's, without workers) at the smallest
    and the largest size, their ratio and the growth per corpus document."""
    lines = [
        "",
        "Growth from the smallest size to the largest (a few MiB either way is noise: peaks of one size vary "
        "between runs and workers):",
        "",
        "| code | peak measured | smallest size MiB | largest size MiB | largest / smallest | B per document |",
    ]
    lines.append("|---|---|---:|---:|---:|---:|")
    for label in dict.fromkeys(label for _, _, label, _, _ in rows):
        mine = sorted(((n, run) for _, n, code, _, run in rows if code == label), key=lambda pair: pair[0])
        (n0, small), (n1, large) = mine[0], mine[-1]
        key, name = (
            ("workers_high_water_mib", "largest worker")
            if large["workers_high_water_mib"]
            else ("high_water_mib", "job process")
        )
        growth = (large[key] - small[key]) * 2**20 / (n1 - n0) if n1 > n0 else 0.0
        lines.append(
            f"| {label} | {name} | {small[key]:.0f} | {large[key]:.0f} | {large[key] / small[key]:.2f} | "
            f"{growth:,.0f} |"
        )
    return lines


def _variants(args: argparse.Namespace, workdir: Path) -> dict[str, dict[str, str]]:
    """The incremental run's variants: a label and the environment of its job (``_HOOK``'s)."""
    if not args.bounded_bundles:
        return {"": {}}
    site = workdir / "hook"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_HOOK)
    common = {"PYTHONPATH": str(site), "RECHUNK_BENCH_TRACE": "1" if args.trace_heap else "0"}
    bounded = {**common, "RECHUNK_BENCH_BUNDLE": str(args.bounded_bundles)}
    variants = {
        "whole partitions": common,
        f"bundles of {args.bounded_bundles:,}": bounded,
    }
    if args.drop_output_streams:
        variants[f"bundles of {args.bounded_bundles:,}, streams dropped"] = {
            **bounded,
            "RECHUNK_BENCH_DROP_STREAMS": "1",
        }
    return variants


def _measure_hooked(argv: list[str], out: Path, code: Path, environment: dict[str, str], log: Path) -> dict:
    """``measure_process`` with ``environment`` set for the job (and its workers); with the hook,
    its logs summed up: ``bundles``, ``split``, ``largest_bundle`` (elements the worker processed
    in one bundle), ``glibc_last_mib`` (the largest over the workers of glibc's bytes in use after
    their last bundle), ``traced_last_mib`` and ``traced_peak_mib`` (the Python heap after the last
    bundle, and its largest peak within one bundle)."""
    if not environment:
        return measure_process(argv, out, cwd=code)
    shutil.rmtree(log, ignore_errors=True)
    log.mkdir()
    saved = {key: os.environ.get(key) for key in [*environment, "RECHUNK_BENCH_LOG"]}
    os.environ.update(environment, RECHUNK_BENCH_LOG=str(log))
    try:
        run = measure_process(argv, out, cwd=code)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    splits = [json.loads(line) for path in log.glob("splits-*.jsonl") for line in path.read_text().splitlines()]
    workers = [[json.loads(line) for line in path.read_text().splitlines()] for path in log.glob("bundles-*.jsonl")]
    workers = [bundles for bundles in workers if bundles]
    mib = 2**20
    run.update(
        bundles=sum(len(bundles) for bundles in workers),
        split=sum(1 for s in splits if s["primary"] < s["elements"]),
        largest_bundle=max((s["primary"] for s in splits), default=0),
        glibc_last_mib=max((bundles[-1]["glibc"] / mib for bundles in workers), default=0.0),
        traced_last_mib=max((bundles[-1].get("traced", 0) / mib for bundles in workers), default=0.0),
        traced_peak_mib=max((b.get("traced_peak", 0) / mib for bundles in workers for b in bundles), default=0.0),
    )
    return run


def _bundle_lines(rows: list[tuple]) -> list[str]:
    """The hooked runs' bundles and a worker's bytes in use, and each variant's slope."""
    lines = [
        "",
        "Bundles and a worker's bytes in use (the hook's logs): bundles processed, bundles split, the largest "
        "bundle (elements), glibc's bytes in use after the worker's last bundle, the traced Python heap after "
        "it and its largest peak within one bundle (with `--trace-heap`).",
        "",
        "| documents | variant | bundles | split | largest bundle | glibc in use MiB | Python heap MiB | "
        "Python peak MiB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for _, n, label, _, run in rows:
        lines.append(
            f"| {n:,} | {label} | {run.get('bundles', 0)} | {run.get('split', 0)} | {run.get('largest_bundle', 0):,} | "
            f"{run.get('glibc_last_mib', 0):.0f} | {run.get('traced_last_mib', 0):.1f} | "
            f"{run.get('traced_peak_mib', 0):.1f} |"
        )
    lines += ["", "| variant | worker peak, smallest to largest | B/doc | largest / smallest |", "|---|---|---:|---:|"]
    for label in dict.fromkeys(label for _, _, label, _, _ in rows):
        mine = [
            (n, run["workers_high_water_mib"] or run["high_water_mib"]) for _, n, lab, _, run in rows if lab == label
        ]
        (n0, p0), (n1, p1) = mine[0], mine[-1]
        slope = (p1 - p0) * 2**20 / max(n1 - n0, 1)
        lines.append(f"| {label} | {p0:.0f} to {p1:.0f} MiB | {slope:,.0f} | {p1 / p0:.2f} |")
    return lines


#: The ``sitecustomize`` that ``--bounded-bundles`` writes into the work folder and puts first on the
#: job's ``PYTHONPATH`` (a measurement harness: it changes Beam's behaviour in the measured
#: processes only, never the shipped job). Runner side: it registers, through the FnApiRunner's
#: ``split_manager`` facility, a split manager for every transform of the pipeline, which asks the
#: worker to split each bundle of more than ``RECHUNK_BENCH_BUNDLE`` elements after about that
#: many (the runner then sends the rest as further bundles, each split again), and records the
#: splits. Worker side (the SDK harness, wherever it runs): after each bundle it appends the
#: process's ``VmRSS``, ``VmHWM``, glibc's bytes in use (``mallinfo2``: ``uordblks + hblkhd``) and,
#: with ``RECHUNK_BENCH_TRACE``, the traced Python heap and its peak within the bundle, to a log;
#: with ``RECHUNK_BENCH_DROP_STREAMS`` it first drops each data output's kept output stream.
_HOOK = r'''
import contextlib, ctypes, json, os, time

_BUNDLE = int(os.environ.get("RECHUNK_BENCH_BUNDLE", "0"))
_LOG = os.environ["RECHUNK_BENCH_LOG"]
_DROP = os.environ.get("RECHUNK_BENCH_DROP_STREAMS") == "1"
_TRACE = os.environ.get("RECHUNK_BENCH_TRACE") == "1"
_WAIT, _PATIENCE = 0.1, 5.0


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _glibc_in_use():
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _Mallinfo2
        info = libc.mallinfo2()
        return info.uordblks + info.hblkhd
    except (OSError, AttributeError):
        return 0


def _manager(name):
    """A split manager for a stage holding transform ``name``: split past ``_BUNDLE`` elements.

    The runner pushes the bundle, calls this before it sends the input, and asks for each split
    after sending it; a split the worker cannot place yet (its bundle not started) comes back
    empty, after the runner's own retries (0.35 s). So it first waits ``_WAIT`` s (the worker
    meanwhile starts the bundle and waits for the input), and asks again while the answer is
    empty, for up to ``_PATIENCE`` s (a bundle that ended before the split is left whole)."""

    def bounded(num_elements):
        result = None
        if num_elements > _BUNDLE:
            time.sleep(_WAIT)
            deadline = time.monotonic() + _PATIENCE
            while result is None and time.monotonic() < deadline:
                result = yield _BUNDLE / num_elements
        primary = num_elements
        if result is not None and result.channel_splits:
            primary = min(s.first_residual_element for s in result.channel_splits)
        with open(os.path.join(_LOG, "splits-%d.jsonl" % os.getpid()), "a") as out:
            out.write(json.dumps({"stage": name, "elements": num_elements, "primary": primary}) + "\n")

    return bounded


if _BUNDLE:
    from apache_beam.runners.portability.fn_api_runner import fn_runner

    _run_via_runner_api = fn_runner.FnApiRunner.run_via_runner_api

    def run_via_runner_api(self, pipeline_proto, options):
        with contextlib.ExitStack() as stack:
            names = {t.unique_name for t in pipeline_proto.components.transforms.values()}
            for name in sorted(names):
                stack.enter_context(fn_runner.split_manager(name, _manager(name)))
            return _run_via_runner_api(self, pipeline_proto, options)

    fn_runner.FnApiRunner.run_via_runner_api = run_via_runner_api

from apache_beam.runners.worker import bundle_processor

_process_bundle = bundle_processor.BundleProcessor.process_bundle


def process_bundle(self, *args, **kwargs):
    if _TRACE:
        import tracemalloc
        if not tracemalloc.is_tracing():
            tracemalloc.start()
        tracemalloc.reset_peak()
    try:
        return _process_bundle(self, *args, **kwargs)
    finally:
        if _DROP:
            for op in self.ops.values():
                if isinstance(op, bundle_processor.DataOutputOperation):
                    op.output_stream = None
        names = [t.unique_name for t in self.process_bundle_descriptor.transforms.values()]
        row = {"stage": max(names, default=""), "rss": _status("VmRSS"), "hwm": _status("VmHWM")}
        row["glibc"] = _glibc_in_use()
        if _TRACE:
            import tracemalloc
            row["traced"], row["traced_peak"] = tracemalloc.get_traced_memory()
        with open(os.path.join(_LOG, "bundles-%d.jsonl" % os.getpid()), "a") as out:
            out.write(json.dumps(row) + "\n")


bundle_processor.BundleProcessor.process_bundle = process_bundle
'''

_FRESH: dict[tuple[str, str], list[tuple]] = {}


def _rows_of_fresh(v2: str, workdir: Path, factor: int, options: list[str], code: Path = REPO) -> list[tuple]:
    """The chunk rows of a fresh run of ``code`` on ``v2`` (run once per size and code)."""
    key = (str(Path(v2).resolve()), str(code))  # the corpus itself: another call's size 1 is another corpus
    if key not in _FRESH:
        out = workdir / f"fresh-{factor}"
        shutil.rmtree(out, ignore_errors=True)
        measure_process(job_command("--input", v2, "--output", str(out), *options), out, cwd=code)
        _FRESH.clear()
        _FRESH[key] = _rows(out / "chunks")
    return _FRESH[key]


def _timed_runs(workdir: Path, v2: Path, tiny: Path, rounds: int, options: list[str]) -> dict[str, list[tuple]]:
    """Each run's (wall, CPU) seconds per round, the runs interleaved."""
    runs = {
        "full": lambda k: ["--input", str(v2), "--output", str(workdir / f"full{k}")],
        "incremental": lambda k: [
            *("--input", str(v2), "--output", str(workdir / f"inc{k}")),
            *("--previous", str(workdir / "previous")),
        ],
        "start-up": lambda k: ["--input", str(tiny), "--output", str(workdir / f"tiny{k}")],
        "start-up, incremental": lambda k: [
            *("--input", str(tiny), "--output", str(workdir / f"tinyinc{k}")),
            *("--previous", str(workdir / "tiny-previous")),
        ],
    }
    figures: dict[str, list[tuple]] = {name: [] for name in runs}
    for k in range(rounds):
        for name, argv in runs.items():
            figures[name].append(_run([*argv(k), *options]))
    return figures


def _check_equal(workdir: Path, n_changed: int, removed_ids: set[str]) -> tuple[dict, list[tuple]]:
    """Exit unless the first incremental run equals the first full run; its report and ``deleted/`` rows."""
    full, inc = workdir / "full0", workdir / "inc0"
    for sub in ("chunks", "dead_letter", "documents"):
        if _rows(full / sub) != _rows(inc / sub):
            sys.exit(f"incremental {sub}/ differs from the full run's")
    deleted = sorted(
        (r["document_id"], r["chunk_ids"], r["document_removed"])
        for r in ds.dataset(str(inc / "deleted"), format="parquet").to_table().to_pylist()
    )
    if deleted != _expected_deleted(workdir / "previous", full):
        sys.exit("incremental deleted/ differs from the previous run's chunks the full run no longer has")
    # Every document gone from the input is listed as removed (so is one dead-lettered only in the new run).
    if not removed_ids <= {doc for doc, _, removed in deleted if removed}:
        sys.exit(f"deleted/ does not mark every removed document: {sorted(removed_ids)}")
    report = json.loads((inc / "report.json").read_text())
    documents = report["documents_read"]
    if report["documents_skipped_unchanged"] != documents - n_changed:
        sys.exit(f"skipped {report['documents_skipped_unchanged']}, expected {documents - n_changed}")
    return report, deleted


def _check_costs(previous: Path, rounds: int) -> dict[str, float]:
    """Seconds (best of ``rounds``, in this process) of what ``--previous`` checks, over every row of
    the previous run's ``chunks/`` taken as kept: reading the files plainly, reading them with
    page checksum verification, then ``kept_chunk_problem`` (each row's ``chunk_id`` recomputed,
    its ``document_hash`` matched) and the per-document counts and index digests; and the rows."""
    from transforms.integrity import digest_key, index_set_digest, kept_chunk_problem

    files = sorted((previous / "chunks").glob("*.parquet"))

    def read(verify: bool) -> list[pa.Table]:
        tables = []
        for path in files:
            with pq.ParquetFile(path, page_checksum_verification=verify) as parquet:
                tables += [parquet.read_row_group(i) for i in range(parquet.metadata.num_row_groups)]
        return tables

    def check(tables: list[pa.Table]) -> None:
        for table in tables:
            hashes = {
                d: digest_key(h)
                for d, h in zip(*(table.column(c).to_pylist() for c in ("document_id", "document_hash")))
            }
            if kept_chunk_problem(table, hashes) is not None:
                sys.exit("a row of the previous run's chunks/ fails kept_chunk_problem")
            found: dict[str, list[int]] = {}
            for d, i in zip(table.column("document_id").to_pylist(), table.column("chunk_index").to_pylist()):
                found.setdefault(d, []).append(i)
            for indexes in found.values():
                index_set_digest(indexes)

    best = {"read": float("inf"), "read, checksums verified": float("inf"), "row checks": float("inf")}
    tables = read(False)
    for _ in range(rounds):
        for name in best:
            started = time.perf_counter()
            if name == "row checks":
                check(tables)
            else:
                tables = read(name != "read")
            best[name] = min(best[name], time.perf_counter() - started)
    best["rows"] = float(sum(t.num_rows for t in tables))
    return best


def _fractions(figures: dict[str, list[tuple]]) -> dict[str, float]:
    best = {name: min(wall for wall, _ in values) for name, values in figures.items()}
    least = {name: min(cpu for _, cpu in values) for name, values in figures.items()}
    return {
        "plain": best["incremental"] / best["full"],
        "strict": (best["incremental"] - best["start-up"]) / (best["full"] - best["start-up"]),
        # the incremental graph's own fixed cost (more reads, side inputs and stages), on one document
        "own": (best["incremental"] - best["start-up, incremental"]) / (best["full"] - best["start-up"]),
        # the target: incremental <= 0.15 x full + the incremental graph's fixed start-up
        "target": (best["incremental"] - best["start-up, incremental"]) / best["full"],
        "cpu": (least["incremental"] - least["start-up"]) / (least["full"] - least["start-up"]),
    }


def _costs_lines(costs: dict[str, float], incremental_cpu: float) -> list[str]:
    """The checks' table: each step's seconds, per million rows, and as a fraction of the read."""
    rows, read = costs["rows"], costs["read"]
    lines = [
        f"What `--previous` checks, over all {int(rows):,} rows of the previous run's `chunks/` taken as kept "
        "(in this process, best round; the incremental run checks only its kept documents' rows):",
        "",
        "| step | s | s per million rows | / plain read |",
        "|---|---|---|---|",
    ]
    for name in ("read", "read, checksums verified", "row checks"):
        seconds = costs[name]
        lines.append(f"| {name} | {seconds:.3f} | {seconds / max(rows, 1) * 1e6:.2f} | {seconds / read:.2f} |")
    checks = costs["row checks"] + costs["read, checksums verified"] - read
    lines += [
        "",
        f"The checks (checksums and row checks) over every previous row: {checks:.3f} s, "
        f"**{checks / max(incremental_cpu, 1e-9):.1%}** of the incremental run's CPU seconds.",
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark; print the table (and write it to ``--out``); exit with a message on a difference."""
    args = _parse_args(argv)
    options = job_options(args.job_options)
    if args.workers_per_factor is not None:
        if args.workers_per_factor < 1:
            sys.exit("--workers-per-factor: a number of worker processes of at least 1")
        if args.bounded_bundles or any(
            o.startswith(("--direct_num_workers", "--direct_running_mode")) for o in options
        ):
            sys.exit("--workers-per-factor sets the worker processes: give neither --bounded-bundles nor the job's own")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="rechunk-incremental-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if any(workdir.iterdir()):
        sys.exit(f"--workdir {workdir} is not empty")
    if args.scale_documents:
        try:
            lines = [*header("apache-beam", "pyarrow"), *memory_by_size(args, workdir, options)]
        finally:
            if not args.workdir:
                shutil.rmtree(workdir, ignore_errors=True)
        write_markdown(args.out, "\n".join(lines))
        return
    try:
        v1, v2, tiny, n_changed, removed_ids = make_versions(Path(args.input), workdir, args.changed, args.removed)
        _run(["--input", str(v1), "--output", str(workdir / "previous"), *options])
        _run(["--input", str(tiny), "--output", str(workdir / "tiny-previous"), *options])
        figures = _timed_runs(workdir, v2, tiny, args.rounds, options)
        report, deleted = _check_equal(workdir, n_changed, removed_ids)
        costs = _check_costs(workdir / "previous", args.rounds)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    f = _fractions(figures)
    documents = report["documents_read"]
    lines = header("apache-beam", "pyarrow")
    lines += [
        f"Input: `{shown(args.input)}` ({documents} documents), {n_changed} changed "
        f"({n_changed / documents:.1%}), {len(removed_ids)} removed; {args.rounds} interleaved rounds, best of each; "
        f"job options: {' '.join(options) or 'none (in_memory)'}.",
        "",
        "| run | wall s (best) | all rounds | CPU s (least) | all rounds |",
        "|---|---|---|---|---|",
        *(
            f"| {name} | {min(w for w, _ in values):.1f} | {', '.join(f'{w:.1f}' for w, _ in values)} | "
            f"{min(c for _, c in values):.1f} | {', '.join(f'{c:.1f}' for _, c in values)} |"
            for name, values in figures.items()
        ),
        "",
        f"Incremental / full: {f['plain']:.3f}; without the start-up: **{f['strict']:.3f}**; without the "
        f"incremental graph's own start-up (one document with `--previous`): **{f['own']:.3f}**. "
        f"Skipped unchanged: {report['documents_skipped_unchanged']}; chunks, dead letter and manifest equal "
        f"the full run's row for row; `deleted/` lists the {len(deleted)} documents whose previous chunk ids "
        f"the full run no longer has ({sum(r for _, _, r in deleted)} with no chunk left).",
        "",
        "Against the target (incremental <= 0.15 x full + the incremental graph's fixed start-up on one "
        f"document): (incremental - that start-up) / full = **{f['target']:.3f}**.",
        "",
        "By CPU seconds (user + system of the job's process; what a shared machine's load changes least): "
        f"incremental without the start-up over full without it: **{f['cpu']:.3f}**.",
        "",
        *_costs_lines(costs, min(c for _, c in figures["incremental"])),
    ]
    write_markdown(args.out, "\n".join(lines))


if __name__ == "__main__":
    main()
