"""Chunker throughput as a ratio of one plain ``encode_ordinary`` pass over the same documents.

Every row is measured in the same process and the rows are interleaved over ``--rounds`` rounds
(the machine is shared and noisy, so only ratios measured side by side mean anything); each row
keeps its fastest round. One core, cl100k_base, the chunkers at the job's defaults
(``max_tokens`` 512).

    python benchmarks/throughput.py [--input ../shared/data/corpus/docs.parquet] [--rounds 3]
                                    [--max-chars N] [--out benchmarks/results/throughput.md]

Rows:

* ``encode_ordinary`` -- tiktoken over each document's content: the limit.
* ``StructureAwareChunker`` -- ``chunk()`` of every document (normalize, pack, build chunks).
* ``StructureAwareChunker + validation`` -- the same, then the job's validation of the
  document's chunks (a second full count, coverage and span checks).

Documents whose format the chunker does not take (``docling``) are left out of every row.
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _load(path: str, max_chars: int | None):
    import pyarrow.parquet as pq

    from transforms.documents import Document

    table = pq.read_table(path, columns=["id", "content", "content_format"])
    documents, total = [], 0
    for row in table.to_pylist():
        if row["content"] is None or row["content_format"] == "docling":
            continue
        documents.append(Document(id=row["id"], content=row["content"], content_format=row["content_format"] or "text", metadata={}))
        total += len(row["content"])
        if max_chars is not None and total >= max_chars:
            break
    return documents


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", default=str(REPO.parent / "shared/data/corpus/docs.parquet"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-chars", type=int, default=None, help="stop loading after this many characters")
    parser.add_argument("--out", default=None, help="also write the table (Markdown) here")
    args = parser.parse_args(argv)

    from transforms.chunkers import StructureAwareChunker
    from transforms.tokenizers import TiktokenTokenizer
    from transforms.validation import validate_chunks

    documents = _load(args.input, args.max_chars)
    tokenizer = TiktokenTokenizer("cl100k_base")
    encoding = tokenizer.encoding
    chunker = StructureAwareChunker(tokenizer=tokenizer, max_tokens=512)
    identity = tokenizer.identity
    characters = sum(len(d.content) for d in documents)
    megabytes = sum(len(d.content.encode("utf-8", "surrogatepass")) for d in documents) / 1e6

    def encode() -> int:
        return sum(len(encoding.encode_ordinary(d.content)) for d in documents)

    def chunk() -> int:
        return sum(len(chunker.chunk(d, tokenizer_identity=identity)) for d in documents)

    def chunk_and_validate() -> int:
        n = 0
        for d in documents:
            chunks, source = chunker.chunk_with_source(d, tokenizer_identity=identity)
            result = validate_chunks(d, chunks, tokenizer=tokenizer, tokenizer_identity=identity, max_tokens=512,
                                     source=source, structure_limits={"max_overlap_tokens": 50, "min_preferred_tokens": 100})
            if result.rejected:
                raise AssertionError(f"{d.id}: {result.rejected[0].reason}: {result.rejected[0].detail}")
            n += len(result.accepted)
        return n

    rows = {
        "encode_ordinary": encode,
        "StructureAwareChunker": chunk,
        "StructureAwareChunker + validation": chunk_and_validate,
    }
    best = {name: float("inf") for name in rows}
    outputs = {}
    for _ in range(args.rounds):
        for name, fn in rows.items():
            gc.collect()
            started = time.perf_counter()
            outputs[name] = fn()
            best[name] = min(best[name], time.perf_counter() - started)

    base = best["encode_ordinary"]
    lines = [
        f"Input: {args.input} ({len(documents)} documents, {characters:,} characters, {megabytes:.1f} MB UTF-8; "
        f"docling rows left out). Best of {args.rounds} interleaved rounds, one core.",
        f"Python {platform.python_version()}, {platform.machine()}, "
        f"tiktoken {__import__('tiktoken').__version__}.",
        "",
        "| row | seconds | MB/s | ratio to encode_ordinary | output |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in rows:
        unit = "tokens" if name == "encode_ordinary" else "chunks"
        lines.append(
            f"| {name} | {best[name]:.2f} | {megabytes / best[name]:.2f} | {base / best[name]:.2f} | "
            f"{outputs[name]:,} {unit} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
