"""Build folders of small document Parquet files with odd names under /tmp/h13/in*."""
import os, pyarrow as pa, pyarrow.parquet as pq
def doc(path, ident, text="Hello world. " * 20):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"id": [ident], "content": [text], "content_format": ["text"]}), path)
B = "/tmp/h13"
# 1: mixed names
for n in ["a.parquet", "_b.parquet", ".c.parquet", "sub/d.parquet", "-e.parquet", "~f.parquet", " g.parquet", "ü h.parquet", "[i].parquet", "!j.parquet"]:
    doc(f"{B}/in1/{n}", n)
open(f"{B}/in1/_SUCCESS", "w").close()
open(f"{B}/in1/.DS_Store", "wb").write(b"\0\0\0\1Bud1")
# 2: only underscore files (e.g. a user's "_2024-01.parquet" naming)
doc(f"{B}/in2/_2024-01.parquet", "x1"); doc(f"{B}/in2/_2024-02.parquet", "x2")
# 3: folder whose own name starts with _ / . 
doc(f"{B}/_in3/a.parquet", "y1"); doc(f"{B}/.in4/a.parquet", "y2")
# 5: folder with a name holding glob chars
doc(f"{B}/in5 [v1]/a.parquet", "z1")
# 6: empty folder
os.makedirs(f"{B}/in6", exist_ok=True)
