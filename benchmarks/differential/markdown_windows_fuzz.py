"""Hostile differential fuzzing of the Markdown normalizer's windows (s9-hostile).

    python benchmarks/differential/markdown_windows_fuzz.py SEED COUNT [--out FAILS.jsonl] [--minimize]

Generates COUNT documents from SEED (lists whose bullet, delimiter and start number change, loose
and tight lists, lazy lines, items holding fences with "- " and "|" lines, HTML, tables and
setext underlines, empty and tab items, tables with ragged rows, delimiter-like body lines and
header counts that do not match, tables right after tables, front matter, CR / CRLF / lone CR /
U+2028 / NUL / lone surrogates / emoji, no final line break) and compares, for each, every block
and descendant with all its fields (streamed children iterated twice) of one whole parse with
the parse in windows of random small WINDOW_CHARS / STREAM_WINDOW_CHARS (and WINDOW_LINES, WINDOW_CELLS);
it also generates lines opening many containers and wide tables over short rows.
A mismatch or exception is written to FAILS.jsonl; ``--minimize`` then shrinks each to the fewest
lines that still fail and prints it. No output but the count means no failure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from transforms.structure.normalizers import markdown
from transforms.structure.normalizers.markdown import normalize_markdown
from transforms.structure.tree import check_blocks


def deep(doc):
    def one(n):
        return (
            n.kind,
            n.start,
            n.end,
            n.level,
            n.title,
            n.language,
            n.fence,
            n.header_rows,
            tuple(one(c) for c in n.children),
        )

    return tuple(one(b) for b in doc.blocks)


BR = ["\n"] * 6 + ["\r\n", "\r", "\u2028\n"]
WORDS = [
    "a",
    "é😀",
    "x | y",
    "",
    " ",
    "\t",
    "`c|d`",
    "\x00",
    "\ud800",
    "😀😀",
    "# h",
    "- not",
    "1. n",
    "[ref]: /u",
    "===",
    "---",
    "<div>",
    "\\|",
    "|",
]


def w(r):
    return r.choice(WORDS)


def item(r, marker):
    if r.random() < 0.3:
        ind = " " * (len(marker.expandtabs()) if not marker.endswith("\t") else 2)
        return [
            r.choice(
                [
                    marker.rstrip() + "\n" + ind + "b \t",
                    marker + "```\n" + ind + "x\n\n" + ind + "```",
                    marker.rstrip(),
                    marker + "<div>\n" + ind + "</div>",
                    marker + "a  ",
                    marker.rstrip() + "\n" + ind + "b\t\t",
                    marker + "    code \t",
                ]
            )
        ]
    lines = [marker + w(r)]
    for _ in range(r.choice([0, 0, 0, 1, 2, 3])):
        lines.append(
            r.choice(
                [
                    "  cont",
                    "lazy " + w(r),
                    "",
                    "  - nested",
                    "    - deep",
                    "   1. n",
                    "  ",
                    "      code",
                    "  > q",
                    "\t- t",
                    "  ```\n  - x\n  | a | b |\n  ```",
                    "===",
                    "---",
                    "  | a | b |\n  |---|---|\n  | 1 | 2 |",
                    "  <div>\n  - html\n  </div>",
                    "  [r]: /url",
                    "  1) other",
                    "  ---",
                    "  ===",
                    "  |---|---|",
                    "  <!-- c\n\n- in comment -->",
                    "      - code",
                    "  ~~~\n- unclosed",
                ]
            )
        )
    return lines


FM = 0.1


def gen(r):
    out = []
    if r.random() < FM:
        out.append("---\ntitle: x\n---")
    for _ in range(r.randint(1, 6)):
        k = r.random()
        if k < 0.45:
            kind = r.random()
            if kind < 0.5:
                ms = r.sample(["- ", "* ", "+ ", "-\t", "- [ ] ", "-"], r.randint(1, 2))
                mk = lambda i: r.choice(ms) if r.random() < 0.03 else ms[0]
            else:
                st0 = r.choice([0, 1, 2, 7, 99, 123456789])
                ds = r.sample([". ", ") "], r.randint(1, 2))
                mk = lambda i: f"{st0 + i}{ds[0] if r.random() > 0.03 else ds[-1]}"
            n = r.randint(1, 120)
            loose_at = r.random() < 0.5
            for i in range(n):
                out.extend(item(r, mk(i)))
                if loose_at and r.random() < 0.05:
                    out.append("")
        elif k < 0.86 and r.random() < 0.3:  # dense lines: many nested containers, or a wide table
            if r.random() < 0.5:
                for _ in range(r.randint(1, 40)):
                    out.append(
                        "".join(r.choice(["- ", "* ", "1. ", "> ", "2) ", "-\t"]) for _ in range(r.randint(6, 30)))
                        + w(r)
                    )
            else:
                cols = r.randint(5, 40)
                out.append("|" + " h |" * cols)
                out.append("|" + "|".join(r.choice(["---", ":-:", " - "]) for _ in range(cols)) + "|")
                for _ in range(r.randint(0, 80)):
                    out.append(r.choice(["| 1 |", "x", "| a | b | c |", "> | q", "- | x", "|" * r.randint(1, 50)]))
        elif k < 0.8:
            cols = r.randint(1, 4)
            hcols = cols if r.random() < 0.85 else cols + r.choice([-1, 1])
            out.append("|" + " h |" * max(hcols, 1) if r.random() < 0.8 else " | ".join(["h"] * max(hcols, 1)))
            out.append(
                "|"
                + r.choice(["---", ":-:", "--:", " - "]) * 0
                + "|".join(r.choice(["---", ":-:", "--:", " - "]) for _ in range(cols))
                + "|"
            )
            for _ in range(r.randint(0, 150)):
                out.append(
                    r.choice(
                        [
                            "| 1 | 2 |",
                            "|---|---|",
                            "| --- |",
                            "x",
                            "|",
                            "a|b",
                            "| é😀 | ☕ |",
                            "  | two |",
                            "\\|",
                            "| `a|b` |",
                            "\x0c",
                            "===",
                            "---",
                            "- | x",
                            "> | q",
                            "    | ind",
                            "| <div> |",
                            "1. | n",
                            "```",
                            "| 😀" * 5,
                            "\t|\t",
                        ]
                    )
                )
                if r.random() < 0.02:
                    out.append("")
            if r.random() < 0.3:  # directly another table
                out.append("| z |\n|---|\n| 9 |")
        else:
            out.append(
                r.choice(
                    [
                        "para\n2. x\n3. y",
                        "para\n1. x",
                        "para\n- x",
                        "para\n| a |\n|---|\n| 1 |",
                        "| a |\n|---|\n===",
                        "| a |\n|---|\n---",
                        "- a\n---",
                        "- a\n===",
                        "1. a\n\n\n2. b",
                        "-\n\n  x",
                        "- a\n\n\n- b",
                        "> - a\n> - b\n- c",
                        "> | a |\n> |---|\n> | 1 |",
                        "- > a\n  > b\n- c",
                        "* * *",
                        "- - - x",
                        "1. - 2. x",
                        "-\t\tx",
                        "- ```\n  - a\n- b",
                        "  - a\n - b\n- c",
                        "para " + w(r),
                        "# Head",
                        "Setext\n===",
                        "> quote\nlazy",
                        "```\n- a\n```",
                        "<div>\n- x\n</div>",
                        "    code",
                        "***",
                        "[ref]: /url 'title'",
                        "",
                        "",
                        "\x00",
                        "\u2028",
                        "para\n---",
                    ]
                )
            )
        if r.random() < 0.5:
            out.append("")
    text = ""
    for line in out:
        text += line + r.choice(BR)
    if r.random() < 0.3:
        text = text.rstrip("\r\n\u2028")
    return text


def windowed(text, wc, sc, wl=None, cells=None):
    saved = (markdown.WINDOW_CHARS, markdown.STREAM_WINDOW_CHARS, markdown.WINDOW_LINES, markdown.WINDOW_CELLS)
    markdown.WINDOW_CHARS, markdown.STREAM_WINDOW_CHARS = wc, sc
    if wl:
        markdown.WINDOW_LINES = wl
    if cells:
        markdown.WINDOW_CELLS = cells
    try:
        doc = normalize_markdown(text)
        d = deep(doc)
        assert deep(doc) == d, "second iteration differs"
        check_blocks(doc)
        return d
    finally:
        markdown.WINDOW_CHARS, markdown.STREAM_WINDOW_CHARS, markdown.WINDOW_LINES, markdown.WINDOW_CELLS = saved


def fails(text: str, wc: int, sc: int, wl: int | None, cells: int | None = None) -> bool:
    try:
        return windowed(text, wc, sc, wl, cells) != deep(normalize_markdown(text))
    except Exception:
        return True


def minimize(text: str, wc: int, sc: int, wl: int | None, cells: int | None = None) -> str:
    lines = re.split(r"(?<=\n)", text)
    chunk = len(lines) // 2
    while chunk >= 1:
        i = 0
        while i < len(lines):
            candidate = lines[:i] + lines[i + chunk :]
            if candidate and fails("".join(candidate), wc, sc, wl, cells):
                lines = candidate
            else:
                i += chunk
        chunk //= 2
    return "".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("seed", type=int)
    ap.add_argument("count", type=int)
    ap.add_argument("--out", default="markdown_windows_fails.jsonl")
    ap.add_argument("--minimize", action="store_true")
    args = ap.parse_args()
    found = []
    for s in range(args.seed, args.seed + args.count):
        r = random.Random(s)
        text = gen(r)
        for wc, sc, wl, cells in (
            (r.randint(10, 200), r.randint(8, 300), None, None),
            (r.randint(30, 400), r.randint(30, 400), r.randint(1, 30), None),
            (r.randint(200, 2000), r.randint(100, 800), r.randint(5, 60), r.randint(4, 120)),
        ):
            try:
                ok = windowed(text, wc, sc, wl, cells) == deep(normalize_markdown(text))
                err = None
            except Exception:
                ok, err = False, traceback.format_exc()[-600:]
            if not ok:
                found.append({"seed": s, "wc": wc, "sc": sc, "wl": wl, "cells": cells, "err": err, "text": text})
                break
    if found:
        with open(args.out, "a") as f:
            for case in found:
                f.write(json.dumps(case) + "\n")
    print(
        f"seeds {args.seed}..{args.seed + args.count - 1}: {len(found)} failing"
        + (f" (in {args.out})" if found else "")
    )
    if args.minimize:
        for case in found:
            print(
                case["seed"],
                case["wc"],
                case["sc"],
                case["wl"],
                case["cells"],
                repr(minimize(case["text"], case["wc"], case["sc"], case["wl"], case["cells"])),
            )


if __name__ == "__main__":
    main()
