"""Odd contents in every format; then benchmarks/check_output.py checks the output's invariants
(every document accounted for, offsets, coverage)."""
import os, shutil, pyarrow as pa, pyarrow.parquet as pq
B = "/tmp/h13/content"; shutil.rmtree(B, ignore_errors=True); os.makedirs(B)
para = "Word " * 120
docs = [
    ("crlf-md", "markdown", "# T\r\n\r\n" + (para + "\r\n\r\n") * 5),
    ("cr-only", "markdown", "# T\r\r" + (para + "\r\r") * 5),
    ("nul", "text", ("abc\x00def " * 300)),
    ("ls-ps", "text", ("line\u2028next\u2029para " * 300)),
    ("bom", "markdown", "\ufeff# Title\n\n" + para),
    ("zwj", "text", "👩‍👩‍👧‍👦" * 3000),
    ("combining", "text", "e" + "\u0301" * 5000),
    ("oneline", "text", "x" * 1_000_000),
    ("script-only", "html", "<html><script>" + "var a=1;" * 1000 + "</script><style>p{}</style></html>"),
    ("html-entities", "html", "<p>" + "&amp;&lt;&#x1F600;&nbsp;" * 2000 + "</p>"),
    ("rst-weird", "rst", ".. |x| replace:: y\n\n" + "Title\n=====\n\n" + ".. code:: python\n\n   " + "a=1\n   " * 2000),
    ("md-fence-open", "markdown", "```\n" + "code line\n" * 5000),
    ("md-table-wide", "markdown", "|" + "a|" * 3000 + "\n|" + "-|" * 3000 + "\n|" + "b|" * 3000 + "\n"),
    ("md-deep-list", "markdown", "".join("  " * i + "- item\n" for i in range(300))),
    ("html-deep", "html", "<div>" * 5000 + "text" + "</div>" * 5000),
    ("only-ws-html", "html", "<p>   </p><br/>"),
    ("surrogate-ish", "text", "a\udcff b" if False else "tab\tsep\vvt\fff " * 500),
    ("docling-min", "docling", '{"schema_name":"DoclingDocument","version":"1.0.0","name":"x","body":{"self_ref":"#/body","children":[]}}'),
]
pq.write_table(pa.table({"id": [d[0] for d in docs], "content_format": [d[1] for d in docs], "content": [d[2] for d in docs]}),
               f"{B}/docs.parquet", use_dictionary=["id", "content_format"])
