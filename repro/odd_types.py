"""Input files whose id/content/content_format/metadata columns have odd Arrow types: every row
must end up as chunks or dead-letter rows (no traceback, no silent loss)."""
import json, os, shutil, subprocess, sys
import pyarrow as pa, pyarrow.parquet as pq, pyarrow.dataset as ds
B = "/tmp/h13/types"; shutil.rmtree(B, ignore_errors=True); os.makedirs(B)
text = "Some sentence here. " * 30
cases = {
    "id_int": pa.table({"id": pa.array([1, 2, None], pa.int64()), "content": [text] * 3}),
    "id_float": pa.table({"id": pa.array([1.5, float("nan"), 3.0]), "content": [text] * 3}),
    "id_dict": pa.table({"id": pa.array(["a", "b", "a"]).dictionary_encode(), "content": [text] * 3}),
    "id_binary": pa.table({"id": pa.array([b"a", b"\xff", b""], pa.binary()), "content": [text] * 3}),
    "id_list": pa.table({"id": pa.array([["a"], [], None], pa.list_(pa.string())), "content": [text] * 3}),
    "id_struct": pa.table({"id": pa.array([{"x": 1}, {"x": 2}, None], pa.struct([("x", pa.int64())])), "content": [text] * 3}),
    "id_ts": pa.table({"id": pa.array([0, 1, 2], pa.timestamp("ns")), "content": [text] * 3}),
    "id_bool": pa.table({"id": pa.array([True, False, None]), "content": [text] * 3}),
    "content_dict": pa.table({"id": ["a", "b", "c"], "content": pa.array([text, text, None]).dictionary_encode()}),
    "content_large": pa.table({"id": ["a", "b", "c"], "content": pa.array([text, "", None], pa.large_string())}),
    "content_lbin": pa.table({"id": ["a", "b", "c"], "content": pa.array([text.encode(), b"\xff\xfe", None], pa.large_binary())}),
    "content_int": pa.table({"id": ["a", "b", "c"], "content": pa.array([1, 2, None])}),
    "content_list": pa.table({"id": ["a", "b", "c"], "content": pa.array([[text], [], None], pa.list_(pa.string()))}),
    "content_view": pa.table({"id": ["a", "b", "c"], "content": pa.array([text, "x", None], pa.string_view())}),
    "fmt_int": pa.table({"id": ["a", "b", "c"], "content": [text] * 3, "content_format": pa.array([1, None, 3])}),
    "fmt_dict": pa.table({"id": ["a", "b", "c"], "content": [text] * 3, "content_format": pa.array(["text", "markdown", "html"]).dictionary_encode()}),
    "meta_struct": pa.table({"id": ["a", "b", "c"], "content": [text] * 3, "metadata": pa.array([{"k": "v"}, None, {"k": None}], pa.struct([("k", pa.string())]))}),
    "meta_map": pa.table({"id": ["a", "b", "c"], "content": [text] * 3, "metadata": pa.array([[("k", "v")], None, []], pa.map_(pa.string(), pa.string()))}),
    "meta_badjson": pa.table({"id": ["a", "b", "c"], "content": [text] * 3, "metadata": ["{", "[1]", "null"]}),
    "extra_f16": pa.table({"id": ["a", "b", "c"], "content": [text] * 3, "x": pa.array([1, 2, 3], pa.float16()) if False else pa.array([1.0, None, float("inf")])}),
    "extra_decimal": pa.table({"id": ["a", "b", "c"], "content": [text] * 3, "x": pa.array([1, 2, None], pa.decimal128(38, 2))}),
    "extra_dur": pa.table({"id": ["a", "b", "c"], "content": [text] * 3, "x": pa.array([1, 2, None], pa.duration("s"))}),
    "extra_date": pa.table({"id": ["a", "b", "c"], "content": [text] * 3, "x": pa.array([1, 2, None], pa.date32())}),
    "extra_nested": pa.table({"id": ["a", "b", "c"], "content": [text] * 3, "x": pa.array([[{"a": [1]}], None, []], pa.list_(pa.struct([("a", pa.list_(pa.int8()))])))}),
    "extra_null": pa.table({"id": ["a", "b", "c"], "content": [text] * 3, "x": pa.nulls(3)}),
    "extra_dupname": None,
}
rechunk = "/work/wt-hostile13/.venv/bin/rechunk"
for name, table in cases.items():
    if table is None:
        continue
    path = f"{B}/{name}.parquet"
    try:
        pq.write_table(table, path)
    except Exception as e:
        print(f"{name}: cannot write ({e})"); continue
    out = f"{B}/out-{name}"
    proc = subprocess.run([rechunk, "--input", path, "--output", out, "--tokenizer", "utf8-bytes", "--progress-seconds", "0"],
                          capture_output=True, text=True)
    tb = "Traceback" in proc.stderr
    if proc.returncode != 0:
        print(f"{name}: exit {proc.returncode}{' TRACEBACK' if tb else ''}: {proc.stderr.strip().splitlines()[-1][:200]}")
        continue
    rows = table.num_rows
    chunks = ds.dataset(f"{out}/chunks").to_table().to_pylist()
    dead = ds.dataset(f"{out}/dead_letter").to_table().to_pylist()
    chunked = {c["document_id"] for c in chunks}
    dead_docs = [d for d in dead if d["chunk_id"] is None]
    accounted = len(chunked) + len(dead_docs)
    flag = "" if accounted >= rows else "  <-- LOST?"
    print(f"{name}: {rows} rows -> {len(chunked)} chunked docs, {len(dead_docs)} doc dead letters "
          f"({sorted({d['reason'] for d in dead})}){flag}")
