"""Differential run of StructureAwareChunker (and HeadingChunker) in two checkouts.

    git worktree add /tmp/rechunk-ref 2a5ddbd          # the checkout to compare with
    python benchmarks/differential/drive.py SEED N_DOCS --ref /tmp/rechunk-ref \
        [--part-chars N] [--configs K] [--size CHARS] [--fixed] [--heading] [--tile-batch N] [--streamed]

Generates N_DOCS hostile documents (``gen.py``: long one-pre-token lines, rare safe cuts, CR and
CRLF, U+2028, NBSP, lone surrogates, huge table cells and code lines, nested lists and quotes,
tiny paragraphs; ``--fixed`` adds named ones) in every content format, K random configurations
each, cl100k_base or UTF-8 bytes, and runs ``harness.py`` in both checkouts (one subprocess
each, the checkout first on ``PYTHONPATH``). ``--part-chars`` sets ``packing.limits.PART_CHARS`` in
both, so a short document is packed a part at a time. ``--window-chars`` sets the Markdown
normalizer's ``WINDOW_CHARS`` (and ``STREAM_WINDOW_CHARS``) in both, so a short document is
parsed a window at a time; ``--huge-blocks`` adds to each Markdown document a list and a table of
hundreds of items and rows (``gen.huge_blocks``). In this checkout only: ``--tile-batch`` sets ``packing.limits.TILE_BATCH`` (a split block's tiles
packed at a time) and ``--streamed`` gives every list, item, table and quote its children as a
``StreamedChildren``, as the Markdown normalizer does for a huge block. Every field of every
chunk and of the packer's chunks is compared; prints the differences and each side's CPU seconds.
"""

from __future__ import annotations

import argparse
import os
import pickle
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import gen

NEW = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REF = None  # --ref
PY = sys.executable
HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness.py")


def configs(rng: random.Random, n: int):
    out = []
    for _ in range(n):
        max_tokens = rng.choice([1, 2, 3, 5, 8, 13, 16, 32, 50, 64, 100, 128, 256, 512])
        p = {"max_tokens": max_tokens}
        if rng.random() < 0.6:
            p["target_tokens"] = rng.randint(1, max_tokens)
        target = p.get("target_tokens", min(400, max_tokens))
        if rng.random() < 0.6:
            p["min_preferred_tokens"] = rng.choice([0, target, rng.randint(0, target)])
        if rng.random() < 0.3 and target > 1:
            p["overlap_tokens"] = rng.randint(1, min(50, target - 1))
        for flag in (
            "merge_small_sections",
            "allow_cross_top_level_merge",
            "preserve_heading_hierarchy",
            "preserve_code_blocks",
            "preserve_table_rows",
            "preserve_list_hierarchy",
            "include_heading_path_in_embedding",
        ):
            if rng.random() < 0.2:
                p[flag] = rng.random() < 0.5
        if rng.random() < 0.1:
            p["oversized_block_policy"] = "reject"
        out.append(p)
    return out


def run(tree: str, spec: dict, tmp: str, tag: str):
    cases_path = os.path.join(tmp, f"cases-{tag}.pkl")
    out_path = os.path.join(tmp, f"out-{tag}-{os.path.basename(tree)}.pkl")
    with open(cases_path, "wb") as f:
        pickle.dump(spec, f)
    env = dict(os.environ, PYTHONPATH=tree)
    return subprocess.Popen([PY, HARNESS, cases_path, out_path], cwd=tree, env=env), out_path


def compare(spec, a_path, b_path):
    with open(a_path, "rb") as f:
        a = pickle.load(f)
    with open(b_path, "rb") as f:
        b = pickle.load(f)
    diffs = []
    cpu_new = cpu_ref = 0.0
    by_id = {c[0]: c for c in spec["cases"]}
    for case_id, ra in a.items():
        rb = b[case_id]
        cpu_new += ra[3]
        cpu_ref += rb[3]
        if ra[:3] != rb[:3]:
            diffs.append((case_id, by_id[case_id], ra[:3], rb[:3]))
    return diffs, cpu_new, cpu_ref, a, b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("seed", type=int)
    ap.add_argument("docs", type=int)
    ap.add_argument("--part-chars", type=int, default=None)
    ap.add_argument("--window-chars", type=int, default=None)
    ap.add_argument("--huge-blocks", action="store_true")
    ap.add_argument("--size", type=int, default=400)
    ap.add_argument("--configs", type=int, default=6)
    ap.add_argument("--fixed", action="store_true")
    ap.add_argument("--heading", action="store_true")
    ap.add_argument("--tile-batch", type=int, default=None, help="packing.limits.TILE_BATCH in this checkout")
    ap.add_argument("--streamed", action="store_true", help="stream every block's children in this checkout")
    ap.add_argument("--ref", required=True, help="the checkout to compare with")
    args = ap.parse_args()
    global REF
    REF = os.path.abspath(args.ref)
    rng = random.Random(args.seed)
    cases = []
    docs = []
    if args.fixed:
        docs += [(name, text, fmt) for name, text in gen.FIXED for fmt in ("markdown", "text", "rst")]
    for i in range(args.docs):
        fmt = rng.choice(["markdown", "markdown", "text", "rst", "html"])
        text = gen.document(rng, fmt, rng.choice([10, 50, 200, args.size]))
        if args.huge_blocks and fmt == "markdown":
            text = gen.huge_blocks(rng, text)
        docs.append((f"r{args.seed}-{i}", text, fmt))
    for name, text, fmt in docs:
        for j, params in enumerate(configs(rng, args.configs)):
            tok = rng.choice(["tiktoken:cl100k_base", "utf8-bytes"])
            # tiny budgets on long docs are slow in both trees: keep them on smaller docs
            if params["max_tokens"] < 8 and len(text) > 6000:
                params["max_tokens"] = 64
                params.pop("target_tokens", None)
                params.pop("min_preferred_tokens", None)
                params.pop("overlap_tokens", None)
            cases.append((f"{name}/{fmt}/{j}/{tok}", text, fmt, tok, "structure", params))
        if args.heading:
            cases.append((f"{name}/{fmt}/heading", text, fmt, "utf8-bytes", "heading", {}))
    spec = {"part_chars": args.part_chars, "window_chars": args.window_chars, "cases": cases}
    tmp = tempfile.mkdtemp(prefix="hostile-")
    pa, a_path = run(NEW, {**spec, "tile_batch": args.tile_batch, "streamed": args.streamed}, tmp, "x")
    pb, b_path = run(REF, spec, tmp, "x")
    pa.wait()
    pb.wait()
    diffs, cpu_new, cpu_ref, a, b = compare(spec, a_path, b_path)
    errs = sum(1 for r in a.values() if r[0] == "err")
    print(
        f"seed={args.seed} part_chars={args.part_chars} window_chars={args.window_chars} tile_batch={args.tile_batch} streamed={args.streamed} docs={len(docs)} cases={len(cases)} diffs={len(diffs)} "
        f"errs(both)={errs} cpu new={cpu_new:.1f}s ref={cpu_ref:.1f}s tmp={tmp}"
    )
    for case_id, case, ra, rb in diffs[:10]:
        print(
            "DIFF",
            case_id,
            case[5],
            len(case[1]),
            "new:",
            ra[0],
            (ra[1] if ra[0] == "err" else len(ra[1])),
            "ref:",
            rb[0],
            (rb[1] if rb[0] == "err" else len(rb[1])),
        )
    if diffs:
        with open(os.path.join(tmp, "diffs.pkl"), "wb") as f:
            pickle.dump(diffs, f)
    slow = sorted(((a[c][3], b[c][3], c) for c in a), reverse=True)[:3]
    for t_new, t_ref, c in slow:
        print(f"  slowest new {t_new:.2f}s ref {t_ref:.2f}s {c}")


if __name__ == "__main__":
    main()
