"""Rebuild sample/docs.parquet from the shared corpora (maintainers only; the job never needs this).

    python sample/build_sample.py ../shared/data

Picks a few small real documents of each format from corpus/docs_small.parquet and one
DoclingDocument JSON from docling_corpus/, in the job's input schema.
"""

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

PICK = [
    "md/pghtml2md/planner-stats-security.md",
    "md/nodejs/contributing/maintaining/maintaining-single-executable-application-support.md",
    "md/pyhtml2md/library/textwrap.md",
    "txt/metadata/websockets-17.4.dist-info.txt",
    "txt/pyrst/library/linecache.rst.txt",
    "html/pgdoc/geqo-intro.html",
]
DOCLING = "word_sample.docx.json"


def main(shared_data: str) -> None:
    root = Path(shared_data)
    rows = {r["id"]: r for r in pq.read_table(root / "corpus/docs_small.parquet").to_pylist()}
    out = [rows[i] for i in PICK]
    out.append(
        {
            "id": f"docling/{DOCLING}",
            "content": (root / "docling_corpus" / DOCLING).read_text(encoding="utf-8"),
            "content_format": "docling",
            "metadata": json.dumps({"collection": "docling-groundtruth", "path": DOCLING}),
        }
    )
    schema = pa.schema([(c, pa.string()) for c in ("id", "content", "content_format", "metadata")])
    pq.write_table(pa.Table.from_pylist(out, schema=schema), Path(__file__).parent / "docs.parquet", compression="zstd")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data")
