"""One sha256 over every column of a run's chunks, to show two runs wrote the same chunks.

    python benchmarks/chunks_sha256.py OUTPUT_DIR [OUTPUT_DIR ...]

Reads every Parquet file under ``OUTPUT_DIR/chunks/`` (all columns), sorts the rows by
``chunk_id`` and hashes each row as a JSON list of its values in column-name order (UTF-8,
rows separated by a NUL byte). File names, row order and row groups do not change the hash; any
value of any column does. Prints ``rows, columns: sha256`` per folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path


def chunks_sha256(output: str | Path) -> tuple[int, list[str], str]:
    """``(rows, column names, sha256 hex)`` of ``output``'s ``chunks/`` (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted(Path(output, "chunks").rglob("*.parquet"))
    tables = [pq.read_table(f) for f in files]
    tables = [t for t in tables if t.num_rows] or tables
    if not tables:
        return 0, [], hashlib.sha256().hexdigest()
    table = pa.concat_tables(tables, promote_options="default")
    columns = sorted(table.column_names)
    rows = table.select(columns).to_pylist()
    rows.sort(key=lambda r: r["chunk_id"])
    digest = hashlib.sha256()
    for row in rows:
        digest.update(
            json.dumps([row[c] for c in columns], sort_keys=True, default=str, ensure_ascii=False).encode(
                "utf-8", "surrogatepass"
            )
        )
        digest.update(b"\0")
    return len(rows), columns, digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", nargs="+", help="a run's --output folder (its chunks/ is read)")
    args = parser.parse_args(argv)
    for output in args.outputs:
        rows, columns, digest = chunks_sha256(output)
        print(f"{output}: {rows} rows, {len(columns)} columns: {digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
