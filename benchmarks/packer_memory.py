"""Peak memory of the packer alone on one huge table or list of short rows (Linux).

    git worktree add /tmp/rechunk-main main          # a checkout to compare with
    python benchmarks/packer_memory.py --kind table --rows 1000000 [--repo /tmp/rechunk-main]

Builds a Markdown text of one table (a header, its delimiter line, then ``--rows`` rows such as
``| 4711 |``, about 8 code points each), one list (``- 4711``) or one fenced code block
(``x = 4711``; its lines are found in the text, it has no children), and one block node over it whose
children are made by a generator, as the Markdown normalizer gives a huge block: a
``StreamedChildren`` where the checkout has one (the packer reads them as a stream), else a
``LazyChildren`` (built whole on first use, as before). The text and the tokenizer are made
first; then the kernel's high-water mark of this process is reset (``/proc/self/clear_refs``) and
the document is packed with ``Packer.stream`` (cl100k_base, ``max_tokens`` 512, the chunker's
defaults, the cycle collector paused as the chunker does), each chunk dropped as it comes. Prints MiB over that start, and bytes per character.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from chunker_memory import _status  # noqa: E402  (MiB of a /proc/self/status line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=("table", "list", "code"), default="table")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repo", default=str(REPO), help="the checkout whose code runs (default: this one)")
    args = parser.parse_args(argv)
    sys.path.insert(0, args.repo)
    from transforms.structure import packing, tree
    from transforms.structure.packing import Packer
    from transforms.structure.tree import Node, NormalizedDocument
    from transforms.tokenizers import load_tokenizer

    if args.kind == "code":
        head = "```\n"
        rows = [f"x = {i % 10000}\n" for i in range(args.rows)] + ["```\n"]
    elif args.kind == "table":
        head = "| n |\n|---|\n"
        rows = [f"| {i % 100000} |\n" for i in range(args.rows)]
    else:
        head = ""
        rows = [f"- {i % 1000000}\n" for i in range(args.rows)]
    text = head + "".join(rows)
    del rows
    child_kind = "table_row" if args.kind == "table" else "list_item"

    def make():
        if head:
            yield Node(child_kind, 0, head.index("\n"))  # the header row (its delimiter line follows)
        position = len(head)
        find = text.find
        while position < len(text):
            end = find("\n", position)
            yield Node(child_kind, position, end, level=1 if args.kind == "list" else 0)
            position = end + 1

    streamed = hasattr(packing.Lines, "iter_tiles")  # this checkout's packer reads children as a stream
    children = tree.StreamedChildren(make) if streamed else tree.LazyChildren(make)
    if args.kind == "code":  # no children: the packer finds its lines in the text
        streamed, children = hasattr(packing.Lines, "stable_after"), ()
    block = Node(
        args.kind,
        0,
        len(text) - 1,
        children,
        header_rows=1 if args.kind == "table" else 0,
        level=1,
        fence="```" if args.kind == "code" else "",
    )
    normalized = NormalizedDocument(text=text, blocks=(block,), content_format="markdown")
    tokenizer = load_tokenizer("tiktoken:cl100k_base")
    tokenizer.count("warm up")
    packer = Packer(tokenizer=tokenizer, target_tokens=400, max_tokens=512, min_preferred_tokens=100)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    base = _status("VmRSS")
    gc.disable()  # as the chunker packs (``_cycle_collector_paused``)
    t0 = time.process_time()
    chunks = 0
    for _ in packer.stream(normalized):
        chunks += 1
    cpu = time.process_time() - t0
    peak = _status("VmHWM") - base
    print(
        f"{args.kind} of {args.rows:,} rows, {len(text):,} characters, {'lines' if args.kind == 'code' else 'children'} "
        f"{'read as a stream' if streamed else 'held whole'}, code from {args.repo}: {chunks:,} chunks, "
        f"peak +{peak:.0f} MiB ({peak * 2**20 / len(text):.1f} bytes/char), {cpu:.1f} s CPU"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
