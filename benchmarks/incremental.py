"""Incremental re-chunking (``--previous``): wall time against a full run, and equality with it.

    python benchmarks/incremental.py [--input ../shared/data/corpus/docs.parquet] [--changed 0.10]
        [--rounds 3] [--workdir /tmp/rechunk-incremental] [--out benchmarks/results/incremental.md]

Builds a second version of the corpus in which every document whose position in id order is a
multiple of ``1/changed`` has one sentence appended (10% by default), runs the job once on the
original corpus (the previous run), then, interleaved over ``--rounds`` rounds in this one
process so that both see the same machine: a full run on the second version, the incremental
run on it with ``--previous``, and runs on a one-document file, without and with a one-document
``--previous`` (the runner's fixed start-up, for each graph).
Each run is a fresh ``python -m pipelines.rechunk`` process on the DirectRunner (FnApiRunner,
in_memory), timed from start to exit.

Each run's CPU seconds (user + system of the job's process and its children) are recorded beside
its wall time, and the same fraction is given by CPU time: on a shared machine the wall times of
one run vary with the others' load, its CPU time much less.

It then checks that the incremental output equals the full run's: the same chunk rows (every
column), dead-letter rows and manifest rows, as sets; and that ``documents_skipped_unchanged`` is
the number of unchanged documents. Prints a Markdown table (best round of each) and writes it
to ``--out`` when given. The fraction the issue asks for is
``(incremental - start-up) / (full - start-up)``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent


def _run(args: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the job's process and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "pipelines.rechunk", *args], check=True, cwd=REPO,
                   stdout=subprocess.DEVNULL)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _rows(folder: Path) -> list[tuple]:
    table = ds.dataset(str(folder), format="parquet").to_table()
    rows = table.to_pylist()
    return sorted(tuple((k, json.dumps(v, sort_keys=True)) for k, v in sorted(row.items())) for row in rows)


def make_versions(source: Path, workdir: Path, changed: float) -> tuple[Path, Path, Path, int]:
    """The corpus as given, its edited second version, a one-document file; and how many changed."""
    table = pq.read_table(source)
    # The versions keep the source's row groups (docs.parquet: 256 documents each), as the job reads them.
    metadata = pq.ParquetFile(source).metadata
    row_group_size = max(1, max((metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)), default=1))
    ids = table.column("id").to_pylist()
    contents = table.column("content").to_pylist()
    step = max(1, round(1 / changed))
    order = sorted(range(len(ids)), key=lambda i: ids[i])
    edited = set(order[::step])
    new_contents = [
        c + "\n\nThis paragraph was added for the incremental benchmark.\n" if i in edited else c
        for i, c in enumerate(contents)
    ]
    v1, v2, tiny = workdir / "v1.parquet", workdir / "v2.parquet", workdir / "tiny.parquet"
    pq.write_table(table, v1, row_group_size=row_group_size)
    pq.write_table(table.set_column(table.schema.get_field_index("content"), "content",
                                    pa.array(new_contents, pa.string())), v2, row_group_size=row_group_size)
    pq.write_table(table.slice(0, 1), tiny)
    return v1, v2, tiny, len(edited)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default=str(REPO.parent / "shared" / "data" / "corpus" / "docs.parquet"))
    parser.add_argument("--changed", type=float, default=0.10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", default="/tmp/rechunk-incremental")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    v1, v2, tiny, n_changed = make_versions(Path(args.input), workdir, args.changed)
    _run(["--input", str(v1), "--output", str(workdir / "previous")])
    _run(["--input", str(tiny), "--output", str(workdir / "tiny-previous")])

    runs = {
        "full": lambda k: ["--input", str(v2), "--output", str(workdir / f"full{k}")],
        "incremental": lambda k: ["--input", str(v2), "--output", str(workdir / f"inc{k}"),
                                  "--previous", str(workdir / "previous")],
        "start-up": lambda k: ["--input", str(tiny), "--output", str(workdir / f"tiny{k}")],
        "start-up, incremental": lambda k: ["--input", str(tiny), "--output", str(workdir / f"tinyinc{k}"),
                                            "--previous", str(workdir / "tiny-previous")],
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for k in range(args.rounds):
        for name, argv in runs.items():
            wall, seconds = _run(argv(k))
            times[name].append(wall)
            cpu[name].append(seconds)

    full, inc = workdir / "full0", workdir / "inc0"
    for sub in ("chunks", "dead_letter", "documents"):
        if _rows(full / sub) != _rows(inc / sub):
            sys.exit(f"incremental {sub}/ differs from the full run's")
    report = json.loads((inc / "report.json").read_text())
    documents = report["documents_read"]
    if report["documents_skipped_unchanged"] != documents - n_changed:
        sys.exit(f"skipped {report['documents_skipped_unchanged']}, expected {documents - n_changed}")

    best = {name: min(values) for name, values in times.items()}
    fraction = (best["incremental"] - best["start-up"]) / (best["full"] - best["start-up"])
    least = {name: min(values) for name, values in cpu.items()}
    cpu_fraction = (least["incremental"] - least["start-up"]) / (least["full"] - least["start-up"])
    # The incremental graph's own fixed cost (more reads, side inputs and stages), on one document.
    own = (best["incremental"] - best["start-up, incremental"]) / (best["full"] - best["start-up"])
    lines = [
        f"Input: `{args.input}` ({documents} documents), {n_changed} changed "
        f"({n_changed / documents:.1%}); {args.rounds} interleaved rounds, best of each.",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
        "| run | wall s (best) | all rounds | CPU s (least) | all rounds |",
        "|---|---|---|---|---|",
        *(f"| {name} | {best[name]:.1f} | {', '.join(f'{t:.1f}' for t in values)} | "
          f"{least[name]:.1f} | {', '.join(f'{t:.1f}' for t in cpu[name])} |"
          for name, values in times.items()),
        "",
        f"Incremental / full: {best['incremental'] / best['full']:.3f}; without the start-up: "
        f"**{fraction:.3f}**; without the incremental graph's own start-up (one document with "
        f"`--previous`): **{own:.3f}**. Skipped unchanged: {report['documents_skipped_unchanged']}; "
        f"chunks, dead letter and manifest equal the full run's row for row.",
        "",
        f"By CPU seconds (user + system of the job's process; what a shared machine's load changes least): "
        f"incremental without the start-up over full without it: **{cpu_fraction:.3f}**.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
