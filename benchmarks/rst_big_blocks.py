"""Write one-row Parquet files of huge reStructuredText documents, one huge block of a kind each.

    python benchmarks/rst_big_blocks.py --chars 5000000 --out DIR [--only list_short]

Each file ``NAME.parquet`` has the columns ``id``, ``content``, ``content_format`` (``rst``) and
``metadata`` (null); the document is about ``--chars`` code points (whole lines, seeded: the same
files every run). Kinds: a bullet list of one-word items, a nested enumerated list, a grid table
and a simple table of short rows, line blocks (read as one paragraph), many short paragraphs
under a few titles, a huge block quote, a huge definition list and paragraphs of one long line
(about 2,000 code points) each.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.memory import repeat_to_size


def documents(chars: int) -> dict[str, Callable[[], str]]:
    """Each kind's name and a function making its document of about ``chars`` code points."""
    rnd = random.Random(1)

    def words(k: int) -> str:
        return " ".join("".join(rnd.choice("abcdefghij") for _ in range(rnd.randint(1, 8))) for _ in range(k))

    def fill(head: str, make, tail: str = "") -> str:
        return repeat_to_size(head, lambda _: make(), chars, tail)

    return {
        "list_short": lambda: fill("", lambda: f"- {words(1)}\n"),
        "enum_nested": lambda: fill("", lambda: f"#. {words(5)}\n\n   - {words(3)}\n   - {words(2)}\n\n"),
        "grid_table": lambda: fill(
            "+---+---+\n| a | b |\n+===+===+\n", lambda: f"| {rnd.randint(0, 9)} | {rnd.randint(0, 9)} |\n+---+---+\n"
        ),
        "simple_table": lambda: fill(
            "===  ===\na    b\n===  ===\n", lambda: f"{rnd.randint(0, 9)}    {rnd.randint(0, 9)}\n", "===  ===\n"
        ),
        "line_blocks": lambda: fill("", lambda: f"| {words(3)}\n"),
        "paragraphs": lambda: fill(
            "Title\n=====\n\n", lambda: f"{words(3)}\n{'-' * 20}\n\n" if rnd.random() < 0.01 else f"{words(4)}\n\n"
        ),
        "quote": lambda: fill(
            "Intro::\n\nText.\n\n", lambda: f"   {words(6)}\n" + ("\n" if rnd.random() < 0.3 else "")
        ),
        "definitions": lambda: fill("", lambda: f"{words(1)}\n   {words(5)}\n"),
        "long_lines": lambda: fill("", lambda: f"{words(400)}\n\n"),
    }


def main(argv: list[str] | None = None) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=5_000_000, help="code points per document (about)")
    parser.add_argument("--out", required=True, help="directory for NAME.parquet files")
    parser.add_argument("--only", action="append", help="kind to write (repeatable; default all)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([(c, pa.string()) for c in ("id", "content", "content_format", "metadata")])
    for name, make in documents(args.chars).items():
        if args.only and name not in args.only:
            continue
        text = make()
        table = pa.table(
            {"id": [name], "content": [text], "content_format": ["rst"], "metadata": [None]}, schema=schema
        )
        pq.write_table(table, out / f"{name}.parquet")
        print(f"{name}: {len(text):,} characters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
