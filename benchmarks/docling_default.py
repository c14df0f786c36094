"""Chunk sizes of DoclingDocuments under the default configuration and under ``DoclingChunker``.

    python benchmarks/docling_default.py [--input sample/docs.parquet] [--docling-json DIR]
                                         [--max-tokens 512] [--out FILE.md]

Chunks every DoclingDocument of ``--input`` (the rows whose ``content_format`` is ``docling``, of
a Parquet file or folder) and of ``--docling-json`` (a folder of DoclingDocument ``.json`` files)
twice, Beam-free, with the chunker each configuration routes it to: the built-in default
(``StructureAwareChunker``) and ``configs/docling.yaml`` (docling-core's ``HybridChunker``), both
at ``--max-tokens`` of ``cl100k_base``. Per configuration it prints the chunks' sizes in tokens
of ``embedding_text`` (what the job's validation counts against the budget, with the job's
tokenizer): count, min, p50, p95, max, how many are over the budget or under 32 tokens, the
share that carries a page number, and the seconds spent chunking; then the same per document.
``--out`` writes the tables as Markdown.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.measurement import SAMPLE, header, read_documents, shown, write_markdown  # noqa: E402

CONFIGURATIONS = {"default (StructureAwareChunker)": None, "configs/docling.yaml (DoclingChunker)": "docling.yaml"}
SMALL = 32


def _documents(parquet: str | None, folder: str | None) -> list[tuple[str, str]]:
    """``(id, DoclingDocument JSON)`` of every DoclingDocument given, sorted by id."""
    found = []
    if parquet:
        for row in read_documents(parquet, columns=["id", "content", "content_format"]).to_pylist():
            if row["content_format"] == "docling":
                found.append((str(row["id"]), row["content"]))
    if folder:
        for path in sorted(Path(folder).glob("*.json")):
            found.append((path.name, path.read_text(encoding="utf-8")))
    return sorted(found)


def _percentile(values: list[int], share: float) -> int:
    """The nearest-rank percentile of sorted ``values``."""
    import math

    return values[max(0, min(len(values) - 1, math.ceil(len(values) * share) - 1))] if values else 0


def _router(config_file: str | None, max_tokens: int):
    from pipelines.config import load_config, resolve_config
    from transforms.chunkers.registry import build_router
    from transforms.tokenizers import load_tokenizer

    config = load_config(str(REPO / "configs" / config_file) if config_file else None)
    spec = resolve_config(config, tokenizer=None, max_tokens=max_tokens)
    tokenizer = load_tokenizer(spec["tokenizer"])
    return build_router(spec, tokenizer=tokenizer), tokenizer


def measure(documents: list[tuple[str, str]], config_file: str | None, max_tokens: int) -> dict:
    """Chunk ``documents`` with the configuration's router; sizes overall and per document."""
    from transforms.documents import Document

    router, tokenizer = _router(config_file, max_tokens)
    sizes: list[int] = []
    per_document: dict[str, list[int]] = {}
    paged = 0
    seconds = 0.0
    for doc_id, content in documents:
        document = Document(id=doc_id, content=content, content_format="docling")
        name, chunker = router.select(document)
        started = time.perf_counter()
        chunks = chunker.chunk(document, tokenizer_identity=tokenizer.identity)
        seconds += time.perf_counter() - started
        counts = [tokenizer.count(c.embedding_text) for c in chunks]
        per_document[doc_id] = sorted(counts)
        sizes += counts
        paged += sum(c.page_no is not None for c in chunks)
    router.close()
    sizes.sort()
    return {
        "sizes": sizes,
        "per_document": per_document,
        "paged": paged,
        "seconds": seconds,
        "chunker": name,
    }


def _row(label: str, sizes: list[int], max_tokens: int, extra: str = "") -> str:
    if not sizes:
        return f"| {label} | 0 | - | - | - | - | 0 | 0 |{extra}"
    over = sum(s > max_tokens for s in sizes)
    small = sum(s < SMALL for s in sizes)
    return (
        f"| {label} | {len(sizes):,} | {sizes[0]} | {_percentile(sizes, 0.5)} | {_percentile(sizes, 0.95)} | "
        f"{sizes[-1]} | {over} | {small} |{extra}"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the measurement; print the tables (and write them to ``--out``)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--input", default=str(SAMPLE), help="Parquet file or folder (default: sample/docs.parquet)")
    parser.add_argument("--docling-json", help="a folder of DoclingDocument .json files")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--out", help="also write the tables to this Markdown file")
    args = parser.parse_args(argv)
    documents = _documents(args.input, args.docling_json)
    if not documents:
        raise SystemExit("docling_default: no DoclingDocument in the input")
    results = {label: measure(documents, config, args.max_tokens) for label, config in CONFIGURATIONS.items()}
    sources = f"`{shown(args.input)}` (its `docling` rows)" + (
        f" and `{shown(args.docling_json)}` (`.json` files)" if args.docling_json else ""
    )
    lines = header("docling-core", "tiktoken")
    lines += [
        f"{len(documents)} DoclingDocuments from {sources}; budget {args.max_tokens} tokens of "
        f"`cl100k_base`, sizes in tokens of `embedding_text`.",
        "",
        f"| configuration | chunks | min | p50 | p95 | max | over {args.max_tokens} | under {SMALL} | with page_no | chunk s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, result in results.items():
        share = f" {result['paged'] / max(1, len(result['sizes'])):.0%} | {result['seconds']:.2f} |"
        lines.append(_row(label, result["sizes"], args.max_tokens, share))
    lines += ["", "Per document (chunks, p50, max):", ""]
    labels = list(results)
    lines += ["| document | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for doc_id, _ in documents:
        cells = []
        for label in labels:
            sizes = results[label]["per_document"][doc_id]
            cells.append(f"{len(sizes)}, {_percentile(sizes, 0.5)}, {sizes[-1] if sizes else '-'}")
        lines.append(f"| `{doc_id}` | " + " | ".join(cells) + " |")
    write_markdown(args.out, "\n".join(lines))
    print(json.dumps({k: len(v["sizes"]) for k, v in results.items()}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
