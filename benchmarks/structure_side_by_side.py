"""A chunker of two checkouts side by side in one process, as ratios of one encode pass.

    git archive main | tar -x -C /tmp/rechunk-main        # the baseline's code
    python benchmarks/structure_side_by_side.py --baseline /tmp/rechunk-main \
        [--input ../shared/data/corpus/docs.parquet] [--max-chars N] [--rounds 3] \
        [--chunker StructureAwareChunker] [--chunker TokenTextSplitter] \
        [--chunker RecursiveCharacterTextSplitter]

``--chunker`` (repeatable; default ``StructureAwareChunker``) picks the rows; the text splitters
run at ``chunk_size`` 512 tokens, no overlap (``RecursiveCharacterTextSplitter`` with
``length="tokens"``), as in ``benchmarks/throughput.py``.

Both checkouts' ``transforms`` packages are imported into this process (each under its own
``sys.modules`` set, swapped in before each row), so every row runs on the same machine state.
Rows are interleaved over ``--rounds`` rounds and each keeps its fastest round, in CPU seconds
(``time.process_time``: a shared, loaded machine slows wall time far more). One core,
cl100k_base, ``max_tokens`` 512, the job's validation with the structure limits of the default
configuration. ``docling`` rows are left out (``benchmarks/throughput.py`` reads the same way).
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _modules() -> list[str]:
    return [k for k in sys.modules if k == "transforms" or k.startswith("transforms.")]


def _load(repo: str) -> dict:
    for k in _modules():
        del sys.modules[k]
    sys.path.insert(0, repo)
    import transforms.chunkers
    import transforms.documents
    import transforms.structure.normalizers.html
    import transforms.structure.normalizers.markdown
    import transforms.structure.normalizers.rst
    import transforms.structure.normalizers.text
    import transforms.tokenizers
    import transforms.validation  # noqa: F401

    loaded = {k: sys.modules[k] for k in _modules()}
    sys.path.remove(repo)
    return loaded


CHUNKERS = {
    "StructureAwareChunker": lambda c, t: c.StructureAwareChunker(tokenizer=t, max_tokens=512),
    "TokenTextSplitter": lambda c, t: c.TokenTextSplitter(tokenizer=t, chunk_size=512, chunk_overlap=0),
    "RecursiveCharacterTextSplitter": lambda c, t: c.RecursiveCharacterTextSplitter(
        tokenizer=t, length="tokens", chunk_size=512, chunk_overlap=0
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="a checkout of the code to compare with (e.g. main)")
    parser.add_argument("--input", default=str(REPO.parent / "shared/data/corpus/docs.parquet"))
    parser.add_argument("--max-chars", type=int, default=None, help="stop loading after this many characters")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunker", action="append", choices=sorted(CHUNKERS), help="rows to measure (repeatable)")
    args = parser.parse_args(argv)
    names = args.chunker or ["StructureAwareChunker"]

    import pyarrow.parquet as pq

    repos = {"baseline": args.baseline, "this checkout": str(REPO)}
    sets = {name: _load(repo) for name, repo in repos.items()}

    def use(name: str) -> dict:
        for k in _modules():
            del sys.modules[k]
        sys.modules.update(sets[name])
        return sets[name]

    rows_in = pq.read_table(args.input, columns=["id", "content", "content_format"]).to_pylist()
    state = {}
    for name in repos:
        m = use(name)
        document_type = m["transforms.documents"].Document
        docs, total = [], 0
        for r in rows_in:
            if r["content"] is None or r["content_format"] == "docling":
                continue
            docs.append(
                document_type(
                    id=r["id"], content=r["content"], content_format=r["content_format"] or "text", metadata={}
                )
            )
            total += len(r["content"])
            if args.max_chars is not None and total >= args.max_chars:
                break
        tokenizer = m["transforms.tokenizers"].TiktokenTokenizer("cl100k_base")
        chunkers = {c: CHUNKERS[c](m["transforms.chunkers"], tokenizer) for c in names}
        state[name] = (docs, tokenizer, chunkers, m["transforms.validation"].validate_chunks)

    def encode() -> int:
        docs, tokenizer, _, _ = state["baseline"]
        return sum(len(tokenizer.encoding.encode_ordinary(d.content)) for d in docs)

    def chunk(name: str, which: str) -> int:
        docs, tokenizer, chunkers, _ = state[name]
        chunker = chunkers[which]
        return sum(len(chunker.chunk(d, tokenizer_identity=tokenizer.identity)) for d in docs)

    def chunk_and_validate(name: str, which: str) -> int:
        docs, tokenizer, chunkers, validate_chunks = state[name]
        chunker, n = chunkers[which], 0
        for d in docs:
            chunks, source = chunker.chunk_with_source(d, tokenizer_identity=tokenizer.identity)
            result = validate_chunks(
                d,
                chunks,
                tokenizer=tokenizer,
                tokenizer_identity=tokenizer.identity,
                max_tokens=512,
                source=source,
                structure_limits={"max_overlap_tokens": 50, "min_preferred_tokens": 100},
            )
            if result.rejected:
                raise AssertionError(f"{name}: {d.id}: {result.rejected[0].reason}")
            n += len(result.accepted)
        return n

    rows = {"encode_ordinary": ("baseline", encode)}
    for which in names:
        for name in repos:
            rows[f"{name}: {which}"] = (name, lambda n=name, w=which: chunk(n, w))
        for name in repos:
            rows[f"{name}: {which} + validation"] = (name, lambda n=name, w=which: chunk_and_validate(n, w))
    best = {k: float("inf") for k in rows}
    outputs = {}
    for _ in range(args.rounds):
        for k, (name, fn) in rows.items():
            use(name)
            gc.collect()
            started = time.process_time()
            outputs[k] = fn()
            best[k] = min(best[k], time.process_time() - started)
    docs = state["baseline"][0]
    megabytes = sum(len(d.content.encode("utf-8", "surrogatepass")) for d in docs) / 1e6
    print(
        f"Input: {args.input} ({len(docs)} documents, {sum(len(d.content) for d in docs):,} characters, "
        f"{megabytes:.1f} MB). Best of {args.rounds} interleaved rounds, CPU seconds. Baseline: {args.baseline}."
    )
    print()
    print("| row | CPU s | MB/s | ratio to encode_ordinary | output |")
    print("|---|---:|---:|---:|---:|")
    for k in rows:
        print(
            f"| {k} | {best[k]:.2f} | {megabytes / best[k]:.2f} | {best['encode_ordinary'] / best[k]:.3f} | "
            f"{outputs[k]:,} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
