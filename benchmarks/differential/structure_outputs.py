"""Differential check of ``StructureAwareChunker``'s outputs between two checkouts.

    python benchmarks/differential/structure_outputs.py --out A.json [--input sample/docs.parquet ...]
    python benchmarks/differential/structure_outputs.py --compare A.json B.json

Run the first form with each checkout's own copy of this script (it imports the checkout it lies
in; copy it into the other one if that has none), then compare the two files. For
every document of each ``--input`` Parquet file (columns ``id``, ``content``, ``content_format``,
``metadata``) and each of three configurations (the job's 512-token default; greedy cuts with
overlap; tight budgets that split most blocks, on every ``--every``-th document), it writes one
sha256 over everything the document gives: every field of every chunk, the chunks validation
accepts (with their recounted ``token_count``), its dead-letter rows, the structure validation,
or the ``ChunkingError`` reason and detail. ``cl100k_base`` counts. ``--compare`` prints the keys
(``input|configuration|document id``) whose digests differ or are missing; exit status 1 on any.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "default": {"max_tokens": 512},
    "greedy_overlap": {"max_tokens": 400, "target_tokens": 300, "overlap_tokens": 30, "cuts": "greedy"},
    "tight": {"max_tokens": 64, "target_tokens": 48, "min_preferred_tokens": 20},
}


def _digests(inputs: list[str], every: int) -> dict[str, str]:
    import pyarrow.parquet as pq

    from transforms.chunkers import StructureAwareChunker
    from transforms.chunkers.base import ChunkingError
    from transforms.documents import Document
    from transforms.tokenizers import load_tokenizer
    from transforms.validation import validate_chunks

    tokenizer = load_tokenizer("tiktoken:cl100k_base")
    identity = tokenizer.identity
    out: dict[str, str] = {}
    for path in inputs:
        rows = pq.read_table(path).to_pylist()
        for name, params in CONFIGURATIONS.items():
            chunker = StructureAwareChunker(tokenizer=tokenizer, **params)
            limits = {
                "max_overlap_tokens": chunker.max_overlap_tokens,
                "min_preferred_tokens": chunker.min_preferred_tokens,
            }
            for row in rows if name == "default" else rows[::every]:
                metadata = row.get("metadata")
                metadata = json.loads(metadata) if isinstance(metadata, str) else (metadata or {})
                document = Document(row["id"], row["content"], row["content_format"] or "text", metadata)
                digest = hashlib.sha256()

                def add(value: object, digest=digest) -> None:
                    digest.update(repr(value).encode("utf-8", "surrogatepass"))

                try:
                    chunks, source = chunker.chunk_with_source(document, tokenizer_identity=identity)
                except ChunkingError as err:
                    add(("error", err.reason, err.detail))
                else:
                    for chunk in chunks:
                        add(sorted(vars(chunk).items()))
                    result = validate_chunks(
                        document,
                        chunks,
                        tokenizer=tokenizer,
                        tokenizer_identity=identity,
                        max_tokens=chunker.max_tokens,
                        source=None if source is document.content else source,
                        structure_limits=limits,
                    )
                    for chunk in result.accepted:
                        add(sorted(vars(chunk).items()))
                    for row_out in result.rejected:
                        add(row_out)
                    add(result.structure)
                out[f"{os.path.basename(path)}|{name}|{document.id}"] = digest.hexdigest()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", action="append", help="a Parquet file of documents (repeatable)")
    parser.add_argument("--every", type=int, default=7, help="the non-default configurations take every N-th document")
    parser.add_argument("--out", help="write the digests here (JSON)")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two digest files")
    args = parser.parse_args(argv)
    if args.compare:
        with open(args.compare[0]) as fa, open(args.compare[1]) as fb:
            a, b = json.load(fa), json.load(fb)
        differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        for key in differ[:50]:
            print("differs:", key)
        print(f"{len(a)} and {len(b)} digests, {len(differ)} differ")
        return 1 if differ else 0
    if not args.out:
        parser.error("--out or --compare is needed")
    if args.every < 1:
        parser.error(f"--every must be at least 1, got {args.every}")
    digests = _digests(args.input or [os.path.join(REPO, "sample", "docs.parquet")], args.every)
    with open(args.out, "w") as f:
        json.dump(digests, f, indent=0, sort_keys=True)
    print(f"{len(digests)} digests (document x configuration) written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
