"""Documents whose dead-letter payload is tens of MB: an unsupported format (60 MB ASCII), a
2-byte-per-char one (30 M chars, 60 MB UTF-8), and one too large for --max-document-chars.
Writes /tmp/h13/huge/docs.parquet (content in plain pages, as the README advises)."""
import os, pyarrow as pa, pyarrow.parquet as pq
os.makedirs("/tmp/h13/huge", exist_ok=True)
rows = {
    "id": ["pdf-60mb", "latin-30mchars", "small"],
    "content": ["%PDF " + "x" * 60_000_000, "é" * 30_000_000, "small doc. " * 10],
    "content_format": ["pdf", "pdf", "text"],
}
pq.write_table(pa.table(rows), "/tmp/h13/huge/docs.parquet", use_dictionary=["id", "content_format"])
