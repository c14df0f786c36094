"""Differential fuzzing of streamed top-level blocks and sections against held ones (s11-stream).

    python benchmarks/differential/sections_stream_fuzz.py SEED COUNT [--configs K]

Generates COUNT documents from SEED in Markdown, rST and HTML: ``gen.document``'s hostile blocks
(long lines, CR, U+2028, NBSP, huge cells, nested lists and quotes), each interleaved with
headings of random levels (skipping levels, going back up, runs of headings with nothing between
them, a level-1 heading over many deeper ones), and chunks each with ``StructureAwareChunker``
(``drive.configs``: every flag and budget at random, cl100k_base or UTF-8 bytes) and
``HeadingChunker`` twice: at the default sizes (a short document is parsed whole, its blocks
and sections a tuple) and with every stream forced (Markdown ``WINDOW_CHARS`` /
``STREAM_WINDOW_CHARS`` a few hundred code points, rST ``LARGE_CHARS`` 0 and small pages, HTML
``STREAM_DOCUMENT_CHARS`` 0, ``tree.HELD_SECTION_NODES`` 1 to 5 so that most sections are
read through and then again from their heading, ``packing.limits.SECTION_BATCH`` 1 or 2). Every field
of every chunk (text, ids, offsets, headings, metadata) is compared. Prints the counts and the
first differences; exit status 1 on any.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gen
from drive import configs

from transforms.chunkers import HeadingChunker, StructureAwareChunker
from transforms.documents import Document
from transforms.structure import packing, tree
from transforms.structure.normalizers import html, markdown, rst
from transforms.tokenizers import TiktokenTokenizer, Utf8ByteTokenizer

_TOKENIZERS = (TiktokenTokenizer("cl100k_base"), Utf8ByteTokenizer())


def heading(rng: random.Random, fmt: str, level: int) -> str:
    title = gen.words(rng, rng.randint(0, 4)) or "T"
    if fmt == "markdown":
        return "#" * level + " " + title
    if fmt == "rst":
        char = "=-~^\"'"[level - 1]
        return title + "\n" + char * max(4, len(title))
    return f"<h{level}>{title}</h{level}>"


def document(rng: random.Random, fmt: str) -> str:
    size = rng.choice([10, 50, 200])
    body = gen.document(rng, fmt, size)
    if fmt == "html":
        body = body.replace("<html><body>", "").replace("</body></html>", "")
    cuts = sorted(rng.sample(range(len(body) + 1), min(len(body) + 1, rng.randint(0, 6))))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)])]
    level = 1
    parts = [heading(rng, fmt, 1)] if rng.random() < 0.5 else []
    for piece in pieces:
        for _ in range(rng.choice([1, 1, 2, 5, 20])):
            level = max(1, min(6, level + rng.choice([-2, -1, 0, 1, 1, 2])))
            parts.append(heading(rng, fmt, level))
            if rng.random() < 0.5:
                parts.append(gen.block(rng, fmt, 10))
        parts.append(piece)
    separator = "\n\n" if fmt != "html" else ""
    text = separator.join(parts) + "\n"
    return "<html><body>" + text + "</body></html>" if fmt == "html" and rng.random() < 0.7 else text


def chunks(chunker, document_: Document, tokenizer) -> list:
    try:
        out = chunker.chunk(document_, tokenizer_identity=tokenizer.identity)
    except Exception as err:
        return [("error", type(err).__name__, str(err))]
    return [dict(vars(c)) for c in out]


def forced(rng: random.Random) -> dict:
    return {
        (markdown, "WINDOW_CHARS"): rng.choice([64, 200, 600]),
        (markdown, "STREAM_WINDOW_CHARS"): rng.choice([64, 200]),
        (rst, "LARGE_CHARS"): 0,
        (rst, "PAGE_CHARS"): rng.choice([16, 256]),
        (rst, "PAGE_LINES"): rng.choice([2, 16]),
        (rst, "STREAM_CHARS"): rng.choice([8, 1 << 16]),
        (html, "STREAM_DOCUMENT_CHARS"): 0,
        (html, "STREAM_WINDOW_CHARS"): rng.choice([7, 64, 4096]),
        (tree, "HELD_SECTION_NODES"): rng.randint(1, 5),
        (packing.limits, "SECTION_BATCH"): rng.choice([1, 2]),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("seed", type=int)
    ap.add_argument("count", type=int)
    ap.add_argument("--configs", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cases = differences = 0
    for i in range(args.count):
        fmt = rng.choice(["markdown", "rst", "html"])
        doc = Document(id=f"d{i}", content=document(rng, fmt), content_format=fmt)
        settings = forced(rng)
        runs = []
        for params in configs(rng, args.configs):
            tokenizer = rng.choice(_TOKENIZERS)
            try:
                chunker = StructureAwareChunker(tokenizer=tokenizer, **params)
            except ValueError:
                continue
            runs.append((chunker, tokenizer, params))
        runs.append((HeadingChunker(), _TOKENIZERS[0], "heading"))
        expected = [chunks(c, doc, t) for c, t, _ in runs]
        saved = {key: getattr(*key) for key in settings}
        try:
            for (module, name), value in settings.items():
                setattr(module, name, value)
            got = [chunks(c, doc, t) for c, t, _ in runs]
        finally:
            for (module, name), value in saved.items():
                setattr(module, name, value)
        for (_, _, params), a, b in zip(runs, expected, got):
            cases += 1
            if a != b:
                differences += 1
                if differences <= 5:
                    print(
                        f"DIFF seed={args.seed} doc={i} fmt={fmt} params={params} settings="
                        f"{ {k[1]: v for k, v in settings.items()} }\n{doc.content[:500]!r}"
                    )
    print(f"seed={args.seed} docs={args.count} cases={cases} differences={differences}")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
