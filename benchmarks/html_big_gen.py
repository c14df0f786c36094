"""Big one-block HTML pages for benchmarks/chunker_memory.py (s10-html).

    python benchmarks/html_big_gen.py CHARS OUT_DIR

Writes one-row Parquet files (columns id, content, content_format="html", metadata=None) of about
CHARS characters each: ``html_list`` (one-word ``<li>`` items), ``html_table`` (rows of two
one-digit cells), ``html_paragraphs`` (``<p>`` of ten words). Deterministic (seeded).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pyarrow as pa
import pyarrow.parquet as pq
from memory import repeat_to_size


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    chars, out = int(args[0]), Path(args[1])
    out.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(1)

    def words(k: int) -> str:
        return " ".join("".join(rnd.choice("abcdefghij") for _ in range(rnd.randint(1, 8))) for _ in range(k))

    def fill(head: str, make, tail: str = "") -> str:
        return repeat_to_size(head, lambda _: make(), chars, tail)

    pages = {
        "html_list": fill(
            "<html><head><title>List</title></head><body><ul>\n",
            lambda: f"<li>{words(1)}</li>\n",
            "</ul></body></html>",
        ),
        "html_table": fill(
            "<html><body><table><tr><th>a</th><th>b</th></tr>\n",
            lambda: f"<tr><td>{rnd.randint(0, 9)}</td><td>{rnd.randint(0, 9)}</td></tr>\n",
            "</table></body></html>",
        ),
        "html_paragraphs": fill("<html><body><h1>Paragraphs</h1>\n", lambda: f"<p>{words(10)}</p>\n", "</body></html>"),
    }
    schema = pa.schema([(c, pa.string()) for c in ("id", "content", "content_format", "metadata")])
    for name, content in pages.items():
        columns = {"id": [name], "content": [content], "content_format": ["html"], "metadata": [None]}
        table = pa.table(columns, schema=schema)
        pq.write_table(table, out / f"{name}.parquet")
        print(name, len(content))


if __name__ == "__main__":
    main()
