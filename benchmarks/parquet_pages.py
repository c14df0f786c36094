"""The job's Parquet writer: text columns in plain pages against pyarrow's default dictionary pages.

    python benchmarks/parquet_pages.py CHUNKS_DIR [--rounds 5] [--out benchmarks/results/parquet-pages.md]

``CHUNKS_DIR`` is a job output's ``chunks/`` folder (``rechunk --input ../shared/data/corpus/docs.parquet
--output /tmp/out`` gives ``/tmp/out/chunks``). Its rows are written again, in the same record
batches, to an in-memory file twice over, zstd both times: with pyarrow's default (every column
dictionary-encoded, falling back to plain pages once a dictionary passes 1 MiB) and as the job's
sink writes them (``transforms.beam.PLAIN_PAGE_COLUMNS`` in plain pages, the rest dictionary).
Each file is then read back a row group at a time on one thread, as the job reads. Reports CPU
seconds (best of ``--rounds``, this process only, so a shared machine's load changes them
little) and the file sizes.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transforms.beam import PLAIN_PAGE_COLUMNS


def _best(rounds: int, work) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(rounds):
        started = time.process_time()
        result = work()
        best = min(best, time.process_time() - started)
    return best, result


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chunks_dir")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)

    batches = []
    for path in sorted(Path(args.chunks_dir).glob("*.parquet")):
        file = pq.ParquetFile(path)
        batches += [file.read_row_group(i, use_threads=False) for i in range(file.num_row_groups)]
    schema = batches[0].schema
    dictionary = [
        f"{f.name}.list.item" if pa.types.is_list(f.type) else f.name
        for f in schema
        if f.name not in PLAIN_PAGE_COLUMNS
    ]

    def write(use_dictionary) -> bytes:
        buffer = io.BytesIO()
        with pq.ParquetWriter(
            buffer, schema, compression="zstd", use_dictionary=use_dictionary, use_compliant_nested_type=False
        ) as writer:
            for batch in batches:
                writer.write_table(batch)
        return buffer.getvalue()

    def read(data: bytes) -> int:
        file = pq.ParquetFile(io.BytesIO(data))
        return sum(file.read_row_group(i, use_threads=False).num_rows for i in range(file.num_row_groups))

    rows = []
    for label, use_dictionary in (
        ("pyarrow default (all dictionary)", True),
        ("the job's (text in plain pages)", dictionary),
    ):
        write_s, data = _best(args.rounds, lambda: write(use_dictionary))
        read_s, count = _best(args.rounds, lambda: read(data))
        rows.append({"writer": label, "write_s": write_s, "read_s": read_s, "mb": len(data) / 1e6, "rows": count})

    lines = [
        f"Input: `{args.chunks_dir}`: {rows[0]['rows']:,} rows in {len(batches)} record batches, "
        f"{sum(b.nbytes for b in batches) / 1e6:.0f} MB of Arrow data; best of {args.rounds}, CPU seconds, one thread.",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, pyarrow {pa.__version__}.",
        "",
        "| writer | write CPU s | read CPU s | file MB |",
        "|---|---:|---:|---:|",
        *(f"| {r['writer']} | {r['write_s']:.3f} | {r['read_s']:.3f} | {r['mb']:.1f} |" for r in rows),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return rows


if __name__ == "__main__":
    main()
