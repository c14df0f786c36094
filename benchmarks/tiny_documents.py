"""Per-document overhead: the job's documents a second on tiny documents, and where the time goes.

    python benchmarks/tiny_documents.py [--documents 200000] [--rounds 2] [--workdir DIR] [--out FILE.md]
        [-- any job option, for every run: --direct_running_mode=multi_processing --direct_num_workers=2]

Writes ``--documents`` tiny plain-text documents (a few words each, about 7 tokens of
``cl100k_base``; one row group per 100,000) and a one-document file, then, interleaved over
``--rounds`` rounds in this one process: the job on the tiny documents, the job on the one
document (the runner's fixed start-up), and in this process the plain calls the job makes per
document, without Beam: admission (``row_to_document``) and chunking with validation
(``DocumentChunking.outcomes``) over the first 50,000 documents. Each run is a fresh
``python -m pipelines.rechunk`` process (DirectRunner, in_memory, unless job options after ``--``
say otherwise); its CPU seconds are recorded beside its wall time. Runs write to ``--workdir``
(default: a temporary folder, removed afterwards).

Figures (best round of each): documents a second end to end (wall), beyond the start-up (wall
and CPU: ``documents / (run - one-document run)``), and the microseconds a document spends in
each plain call against the job's CPU time per document; the rest is the runner, the read and
the writers. The target is 10,000 documents a second in one worker beyond the start-up.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.measurement import header, job_command, job_options, measure_process, write_markdown  # noqa: E402

#: Documents of the in-process plain-call rows (at most).
PLAIN_DOCUMENTS = 50_000
_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def tiny_documents(n: int) -> pa.Table:
    """``n`` plain-text documents of four words and a number (ids ``doc-00000000`` ...)."""
    return pa.table(
        {
            "id": [f"doc-{i:08d}" for i in range(n)],
            "content": [f"{_WORDS[i % 10]} {_WORDS[i * 7 % 10]} note {i}." for i in range(n)],
            "content_format": ["text"] * n,
        }
    )


def plain_calls(path: Path) -> dict[str, float]:
    """Microseconds a document in admission and in chunking with validation, called directly."""
    from pipelines.config import load_config, resolve_config
    from transforms.admission import row_to_document
    from transforms.beam.chunk import shared_tokenizer
    from transforms.chunkers.registry import build_router
    from transforms.documents import Document
    from transforms.outcomes import DocumentChunking

    spec = resolve_config(load_config(None), tokenizer=None, max_tokens=None)
    tokenizer = shared_tokenizer(spec["tokenizer"])
    chunking = DocumentChunking(
        build_router(spec, tokenizer=tokenizer), tokenizer=tokenizer, max_tokens=spec["max_tokens"]
    )
    rows = pq.read_table(path).slice(0, PLAIN_DOCUMENTS).to_pylist()
    started = time.process_time()
    documents = [row_to_document(row, {}, tokenizer.identity) for row in rows]
    admitted = time.process_time()
    outcomes = 0
    for document in documents:
        assert isinstance(document, Document)
        for _ in chunking.outcomes(document, tokenizer.identity):
            outcomes += 1
    done = time.process_time()
    chunking.close()
    assert outcomes == 2 * len(rows), "each tiny document gives one chunk row and a summary"
    return {
        "admission": 1e6 * (admitted - started) / len(rows),
        "chunking": 1e6 * (done - admitted) / len(rows),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", help="where inputs and outputs go (default: a temporary folder, removed)")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    parser.add_argument("job", nargs=argparse.REMAINDER, help="-- job options for every run")
    args = parser.parse_args(argv)
    if args.documents < 1 or args.rounds < 1:
        parser.error("--documents and --rounds must be at least 1")
    extra = job_options(args.job)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="rechunk-tiny-"))
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        many, one = workdir / "tiny.parquet", workdir / "one.parquet"
        pq.write_table(tiny_documents(args.documents), many, row_group_size=100_000)
        pq.write_table(tiny_documents(1), one)
        best: dict[str, dict] = {}
        plain: dict[str, float] = {}
        for round_no in range(args.rounds):
            for name, path in (("tiny", many), ("start-up", one)):
                out = workdir / f"out-{name}-{round_no}"
                run = measure_process(
                    job_command("--input", str(path), "--output", str(out), "--progress-seconds", "0", *extra), out
                )
                if run["exit"] != 0:
                    raise SystemExit(f"tiny_documents: the {name} run exited {run['exit']}")
                if name == "tiny" and run.get("chunks_written") != args.documents:
                    raise SystemExit(f"tiny_documents: {run.get('chunks_written')} chunks, not {args.documents}")
                if name not in best or run["seconds"] < best[name]["seconds"]:
                    best[name] = run
                shutil.rmtree(out, ignore_errors=True)
            calls = plain_calls(many)
            plain = {k: min(v, plain.get(k, v)) for k, v in calls.items()}
        write_markdown(args.out, _table(args.documents, best, plain, extra))
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _rate(n: int, seconds: float) -> str:
    """``n`` a second, or ``n/a`` when the run took no longer than the start-up (a few documents
    on a noisy machine)."""
    return f"{n / seconds:,.0f}" if seconds > 0 else "n/a"


def _table(n: int, best: dict[str, dict], plain: dict[str, float], extra: list[str]) -> str:
    tiny, start = best["tiny"], best["start-up"]
    wall, cpu = tiny["seconds"] - start["seconds"], tiny["cpu_total"] - start["cpu_total"]
    per_document = 1e6 * cpu / n if cpu > 0 else float("nan")
    rest = per_document - plain["admission"] - plain["chunking"]
    lines = [
        *header("apache-beam", "pyarrow", "tiktoken"),
        f"Input: {n:,} tiny plain-text documents (about 7 tokens each); job options: "
        f"{' '.join(extra) or 'none (in_memory)'}.",
        "",
        "| run | wall s | CPU s | documents / s (wall) |",
        "|---|---:|---:|---:|",
        f"| {n:,} tiny documents | {tiny['seconds']:.1f} | {tiny['cpu_total']:.1f} | {n / tiny['seconds']:,.0f} |",
        f"| one document (start-up) | {start['seconds']:.1f} | {start['cpu_total']:.1f} | |",
        f"| beyond the start-up | {wall:.1f} | {cpu:.1f} | {_rate(n, wall)} ({_rate(n, cpu)} a CPU second) |",
        "",
        "| per document, beyond the start-up | µs (CPU) | share |",
        "|---|---:|---:|",
        f"| the job | {per_document:.0f} | 100% |",
        f"| admission (row_to_document) | {plain['admission']:.0f} | {plain['admission'] / per_document:.0%} |",
        f"| chunking and validation (DocumentChunking) | {plain['chunking']:.0f} | "
        f"{plain['chunking'] / per_document:.0%} |",
        f"| the rest: runner, read, writers | {rest:.0f} | {rest / per_document:.0%} |",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
