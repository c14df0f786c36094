"""CPU time of the reStructuredText normalizer against another checkout's, interleaved.

    git worktree add /tmp/rechunk-ref 4250e8b
    python benchmarks/rst_normalizer_speed.py --baseline /tmp/rechunk-ref [--corpus docs.parquet]
        [--input BIG.parquet ...] [--rounds 5]

Normalizes every ``rst`` document of ``--corpus`` (and the first row of each ``--input``, as its
own set) with the baseline's normalizer and this checkout's, alternating, ``--rounds`` times in one
process; prints the best round's CPU seconds of each and the ratio this checkout / baseline. Streamed
children are walked once after normalizing (what the packer does), so their second scan counts.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
from benchmarks.differential.reference import load_normalizer  # noqa: E402
from transforms.structure.normalizers import rst  # noqa: E402


def walk(nodes) -> int:
    return sum(1 + walk(n.children) for n in nodes)


def run(normalize, texts) -> float:
    gc.collect()
    start = time.process_time()
    for text in texts:
        walk(normalize(text).blocks)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    import pyarrow.parquet as pq

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="the checkout to compare with")
    parser.add_argument("--corpus", default=os.path.join(REPO, "..", "shared", "data", "corpus", "docs.parquet"))
    parser.add_argument("--input", action="append", default=[], help="a one-document Parquet file (repeatable)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    baseline = load_normalizer(args.baseline, "rst")
    sets = {
        "corpus rst": [
            row["content"]
            for row in pq.read_table(args.corpus, columns=["content", "content_format"]).to_pylist()
            if row["content_format"] == "rst"
        ]
    }
    for path in args.input:
        sets[os.path.basename(path)] = [pq.read_table(path, columns=["content"]).column(0)[0].as_py()]
    for name, texts in sets.items():
        best = {"baseline": float("inf"), "this": float("inf")}
        for _ in range(args.rounds):
            best["baseline"] = min(best["baseline"], run(baseline.normalize_rst, texts))
            best["this"] = min(best["this"], run(rst.normalize_rst, texts))
        chars = sum(map(len, texts))
        print(
            f"{name}: {len(texts)} documents, {chars:,} characters: baseline {best['baseline']:.3f} s, "
            f"this checkout {best['this']:.3f} s, ratio {best['this'] / best['baseline']:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
