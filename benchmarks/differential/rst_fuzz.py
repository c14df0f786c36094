"""Differential check of the reStructuredText normalizer's paged and streamed reading.

    python benchmarks/differential/rst_fuzz.py [--reference CHECKOUT] [--seed 1]
        [--generated 300] [--mutated 200] [--corpus sample/docs.parquet]
        [--chunks-every 1] [--out FAILS.jsonl] [--input BIG.parquet ...]

The reference is ``transforms/structure/normalizers/rst.py`` of the checkout ``--reference``
(default: this one, loaded a second time, so that documents under ``LARGE_CHARS`` take the
whole scan there; another checkout, e.g. one made with ``git worktree add``, compares two
versions). For each document (every ``rst`` document of the corpus,
``--generated`` documents made from a seed: titles with and without overlines, short underlines,
transitions, literal blocks after ``::``, code and other directives with bodies, nested bullet,
enumerated and definition lists, grid tables with row spans and simple tables, block quotes,
tabs, CRLF and lone CR line breaks, nesting deeper than 60, huge items, lists and tables; and
``--mutated`` corpus documents with lines deleted, duplicated, indented, dedented or swapped,
line breaks changed, and generated pieces spliced in) and for each of several settings of
``LARGE_CHARS`` / ``PAGE_LINES`` / ``PAGE_CHARS`` / ``STREAM_CHARS`` (tiny ones that page and
stream everything, and the defaults), it compares the whole ``NormalizedDocument`` (text,
diagnostics and every block with all its fields and its children recursively, streamed children
iterated twice) and, for every ``--chunks-every``-th document, every field of every chunk
``StructureAwareChunker`` makes with each normalizer (cl100k_base; three configurations, small
budgets so huge blocks are split). Each ``--input`` file's first document (e.g.
``rst_big_blocks.py``'s) is compared the same way under the default settings only (and its
chunks with ``max_tokens`` 512 only). Prints the counts; a difference or exception is printed
and written to ``--out``; exit status 1 on any.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
from benchmarks.differential.reference import load_normalizer  # noqa: E402
from transforms.structure.normalizers import rst  # noqa: E402
from transforms.structure.tree import StreamedChildren  # noqa: E402

#: (LARGE_CHARS, PAGE_LINES, PAGE_CHARS, STREAM_CHARS) settings the branch runs with; the first
#: pages every document one line a page and streams every container.
SETTINGS = [
    (0, 1, 1, 0),
    (0, 2, 30, 5),
    (0, 3, 1, 40),
    (0, 7, 100, 300),
    (0, 64, 20, 2000),
    (0, 1000, 1000, 0),
    (rst.LARGE_CHARS, rst.PAGE_LINES, rst.PAGE_CHARS, rst.STREAM_CHARS),
]
NAMES = ("LARGE_CHARS", "PAGE_LINES", "PAGE_CHARS", "STREAM_CHARS")


def shallow(n) -> tuple:
    return (n.kind, n.start, n.end, n.level, n.title, n.language, n.fence, n.header_rows, n.page_no, bool(n.children))


#: The settings chunks are compared with (every normalizer comparison runs all of SETTINGS).
CHUNK_SETTINGS = [SETTINGS[0], SETTINGS[2], SETTINGS[-1]]


def deep(nodes) -> tuple:
    """Every field of every node, recursively; streamed children are iterated a second time and
    compared one level deep (a deep second walk would double at every streamed level)."""
    out = []
    for n in nodes:
        children = deep(n.children)
        if type(n.children) is StreamedChildren and tuple(shallow(c) for c in n.children) != tuple(
            c[:9] + (bool(c[9]),) for c in children
        ):
            raise AssertionError(f"streamed children of {n.kind} [{n.start}, {n.end}) differ between iterations")
        out.append(shallow(n)[:9] + (children,))
    return tuple(out)


def streamed_count(nodes) -> int:
    return sum((type(n.children) is StreamedChildren) + streamed_count(n.children) for n in nodes)


# -- generated documents ---------------------------------------------------------------------

WORDS = [
    "alpha",
    "beta",
    "x",
    "é😀",
    "``code``",
    "*em*",
    "a::",
    "1.",
    "-",
    "+",
    "=",
    "|",
    "::",
    "\t",
    "日本語",
    "\u00a0",
    "",
]
ADORN = "=-~^\"'`#*+:._"


def words(r: random.Random, k: int | None = None) -> str:
    return " ".join(r.choice(WORDS) for _ in range(k if k is not None else r.randint(1, 5)))


def title(r: random.Random) -> list[str]:
    text = words(r, r.randint(1, 4)) or "T"
    ch = r.choice(ADORN)
    width = len(text) + r.choice([0, 0, 0, 2, -1, -3]) if r.random() < 0.9 else r.randint(1, 6)
    line = ch * max(width, 1)
    if r.random() < 0.3:
        return [
            line,
            (" " if r.random() < 0.3 else "") + text,
            line if r.random() < 0.9 else r.choice(ADORN) * len(line),
        ]
    return [text, line]


def item_lines(r: random.Random, indent: str, depth: int) -> list[str]:
    marker = r.choice(["- ", "* ", "+ ", "• ", "1. ", "#. ", "a) ", "(iv) ", "A. ", "10. ", "-\t", "-"])
    out = [indent + marker + words(r)]
    pad = indent + " " * len(marker.expandtabs(8))
    for _ in range(r.choice([0, 0, 1, 2, 3])):
        k = r.random()
        if k < 0.3:
            out.append(pad + words(r))
        elif k < 0.45:
            out.append("")
        elif k < 0.65 and depth < 4:
            out += [""] + item_lines(r, pad, depth + 1)
        elif k < 0.75:
            out += ["", pad + "code::", "", pad + "    literal", ""]
        elif k < 0.85:
            out.append(indent + words(r))  # dedented: ends the item
        else:
            out.append(pad + "  " + words(r))
    return out


def piece(r: random.Random, depth: int = 0) -> list[str]:
    k = r.randrange(17)
    if k == 0:
        return title(r)
    if k == 1:
        return [r.choice(ADORN) * r.randint(3, 8)]
    if k == 2:
        return [words(r) + "::", ""] + ["    " + words(r) for _ in range(r.randint(1, 3))]
    if k == 3:
        lang = r.choice(["", " python", " c"])
        return [
            r.choice([".. code-block::", ".. code::", ".. sourcecode::"]) + lang,
            "   :linenos:",
            "",
            "   x = 1",
            "",
            "   y = 2",
        ]
    if k == 4:
        return [
            r.choice(
                [
                    ".. note::",
                    ".. function:: f(x)",
                    ".. _target:",
                    ".. [1] foot",
                    ".. |s| image:: a.png",
                    "..",
                    ".. comment",
                ]
            ),
            "   " + words(r),
            "",
            "   - " + words(r),
        ]
    if k == 5:
        lines = []
        for _ in range(r.randint(1, 6)):
            lines += item_lines(r, "", 0)
            if r.random() < 0.5:
                lines.append("")
        return lines
    if k == 6:
        lines = []
        for _ in range(r.randint(1, 4)):
            lines += [words(r, 1) or "term", "    " + words(r)]
            if r.random() < 0.3:
                lines += ["", "    - " + words(r)]
            if r.random() < 0.5:
                lines.append("")
        return lines
    if k == 7:
        header = r.random() < 0.6
        lines = ["+-----+-----+", "| a   | b   |"]
        lines.append("+=====+=====+" if header else "+-----+-----+")
        for _ in range(r.randint(0, 5)):
            if r.random() < 0.2:  # a row span
                lines += ["| x   | y   |", "+-----+     |", "| z   |     |"]
            else:
                lines.append(f"| {r.randint(0, 9)}   | {r.choice(['u', '', 'é'])}   |")
            lines.append("+-----+-----+" if r.random() < 0.9 else "| no  | end |")
        return lines
    if k == 8:
        lines = ["=====  =====", "a      b"]
        if r.random() < 0.6:
            lines.append("=====  =====")
        for _ in range(r.randint(0, 5)):
            lines.append(
                r.choice([f"{r.randint(0, 9)}      x", "       cont", "-----  -----", "", "y      " + words(r)])
            )
        if r.random() < 0.9:
            lines.append("=====  =====")
        return lines
    if k == 9:
        return ["   " + words(r) for _ in range(r.randint(1, 4))] + (
            ["", "      " + words(r)] if r.random() < 0.5 else []
        )
    if k == 10:
        return ["\t" + words(r), " \t" + words(r), "\t\t- " + words(r)]
    if k == 11:
        n = r.choice([61, 62, 70, 30])
        return (
            [" " * (2 * i) + "- " + words(r, 1) + "\n" for i in range(n)]
            if r.random() < 0.5
            else ["   " * i + words(r, 1) + "\n" for i in range(n)]
        )
    if k == 12:  # a huge item / list / table
        kind = r.randrange(4)
        n = r.randint(50, 400)
        if kind == 0:
            return ["- top"] + ["  - " + words(r, 1) for _ in range(n)]
        if kind == 1:
            return [r.choice(["- ", "#. "]) + words(r, 2) + ("\n" if r.random() < 0.3 else "") for _ in range(n)]
        if kind == 2:
            return ["+---+---+", "| a | b |", "+===+===+"] + [f"| {i % 10} | x |\n+---+---+" for i in range(n)]
        return ["===  ===", "a    b", "===  ==="] + [f"{i % 10}    y" for i in range(n)] + ["===  ==="]
    if k == 13:
        return ["| " + words(r) for _ in range(r.randint(1, 4))]
    if k == 14:
        return [words(r) for _ in range(r.randint(1, 4))]
    if k == 15:
        return ["   " + line for line in piece(r, depth + 1)] if depth < 3 else [words(r)]
    return [""] * r.randint(1, 3)


def generate(r: random.Random) -> str:
    lines: list[str] = []
    for _ in range(r.randint(1, 14)):
        lines += piece(r)
        if r.random() < 0.75:
            lines.append("")
    return join(r, lines)


def join(r: random.Random, lines: list[str]) -> str:
    text = "\n".join(lines)
    mode = r.random()
    if mode < 0.15:
        text = text.replace("\n", "\r\n")
    elif mode < 0.25:
        text = text.replace("\n", "\r")
    elif mode < 0.35:
        text = "".join(
            ch + (r.choice(["\r\n", "\r", "\n"]) if ch == "\n" else "")
            if ch != "\n"
            else r.choice(["\r\n", "\r", "\n"])
            for ch in text
        )
    if r.random() < 0.5:
        text += r.choice(["\n", "\n\n", "\r\n", "   \n"])
    return text


def mutate(r: random.Random, text: str) -> str:
    lines = text.split("\n")
    for _ in range(r.randint(1, 8)):
        if not lines:
            break
        i = r.randrange(len(lines))
        op = r.randrange(7)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            lines[i] = "   " + lines[i]
        elif op == 3:
            lines[i] = lines[i].lstrip()
        elif op == 4:
            j = r.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 5:
            lines[i:i] = piece(r)
        else:
            lines.insert(i, "")
    return join(r, lines)


# -- comparison ------------------------------------------------------------------------------


def normalized(normalize, text):
    doc = normalize(text)
    return doc.text == text, doc.diagnostics, deep(doc.blocks), doc


def chunk_fields(chunker, text):
    from transforms.documents import Document

    chunks = chunker.chunk(
        Document(id="d", content=text, content_format="rst"), tokenizer_identity="tiktoken:cl100k_base"
    )
    return [dataclasses.asdict(c) for c in chunks]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", default=REPO, help="the checkout whose normalizer is the reference")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--generated", type=int, default=300)
    parser.add_argument("--mutated", type=int, default=200)
    parser.add_argument(
        "--corpus",
        default=os.path.join(REPO, "sample", "docs.parquet"),
        help="a Parquet file of documents; its documents of the format are cases too ('' for none)",
    )
    parser.add_argument("--chunks-every", type=int, default=1, help="compare chunks for every n-th document (0: never)")
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        help="a Parquet file whose first document is compared under the default settings (repeatable)",
    )
    args = parser.parse_args(argv)
    reference = load_normalizer(args.reference, "rst")

    import pyarrow.parquet as pq

    from transforms.chunkers import StructureAwareChunker
    from transforms.structure.normalizers import NormalizerRegistry
    from transforms.tokenizers import load_tokenizer

    r = random.Random(args.seed)
    corpus = [
        row["content"]
        for row in pq.read_table(args.corpus, columns=["content", "content_format"]).to_pylist()
        if row["content_format"] == "rst"
    ]
    documents = [("corpus", t) for t in corpus]
    documents += [("generated", generate(r)) for _ in range(args.generated)]
    documents += [("mutated", mutate(r, r.choice(corpus))) for _ in range(args.mutated)]
    documents += [("input", pq.read_table(path, columns=["content"]).column(0)[0].as_py()) for path in args.input]

    tokenizer = load_tokenizer("tiktoken:cl100k_base")
    configs = [
        dict(max_tokens=512),
        dict(max_tokens=48, target_tokens=40, min_preferred_tokens=10),
        dict(max_tokens=120, overlap_tokens=20, preserve_list_hierarchy=True),
    ]

    def chunkers(normalize):
        registry = NormalizerRegistry({"rst": normalize})
        return [StructureAwareChunker(tokenizer=tokenizer, normalizers=registry, **c) for c in configs]

    reference_chunkers = chunkers(reference.normalize_rst)
    branch_chunkers = chunkers(rst.normalize_rst)
    defaults = tuple(getattr(rst, name) for name in NAMES)
    counts = {
        "documents": 0,
        "normalizer comparisons": 0,
        "chunk comparisons": 0,
        "streamed blocks": 0,
        "differences": 0,
    }
    by_kind: dict[str, int] = {}
    fails = []
    for n, (kind, text) in enumerate(documents):
        if n % 100 == 0:
            print(f"{n} documents done, {counts['differences']} differences", flush=True)
        by_kind[kind] = by_kind.get(kind, 0) + 1
        counts["documents"] += 1
        expected = normalized(reference.normalize_rst, text)[:3]
        big = kind == "input"
        want_chunks = None
        if big:
            want_chunks = [chunk_fields(reference_chunkers[0], text)]
        elif args.chunks_every and n % args.chunks_every == 0:
            want_chunks = [chunk_fields(c, text) for c in reference_chunkers]
        for setting in SETTINGS[-1:] if big else SETTINGS:
            for name, value in zip(NAMES, setting):
                setattr(rst, name, value)
            try:
                got = normalized(rst.normalize_rst, text)
                counts["normalizer comparisons"] += 1
                counts["streamed blocks"] += streamed_count(got[3].blocks)
                problem = None if got[:3] == expected else "blocks or diagnostics differ"
                if problem is None and want_chunks is not None and (big or setting in CHUNK_SETTINGS):
                    for c, want in zip(branch_chunkers, want_chunks):
                        counts["chunk comparisons"] += 1
                        if chunk_fields(c, text) != want:
                            problem = f"chunks differ ({configs[branch_chunkers.index(c)]})"
                            break
            except Exception:
                problem = traceback.format_exc()
            finally:
                for name, value in zip(NAMES, defaults):
                    setattr(rst, name, value)
            if problem is not None:
                counts["differences"] += 1
                print(f"DIFFERENCE: {kind} document {n} with {setting}: {problem}", flush=True)
                fails.append({"kind": kind, "setting": setting, "problem": problem, "text": text})
    print(json.dumps({**counts, **{f"{k} documents": v for k, v in by_kind.items()}, "seed": args.seed}))
    if args.out and fails:
        with open(args.out, "w") as out:
            for fail in fails:
                out.write(json.dumps(fail) + "\n")
    return 1 if fails else 0


if __name__ == "__main__":
    raise SystemExit(main())
