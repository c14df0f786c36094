#!/bin/sh
# A relative --input whose first component holds a glob: main says "no file matches" (exit 2)
# though the files are there (Beam lists a relative pattern from the folder before its first
# glob character: none). Fixed in 95d2909.
R=/work/wt-hostile13/.venv/bin/rechunk
B=/tmp/h13-relglob; rm -rf "$B"; mkdir -p "$B/in1"
/work/wt-hostile13/.venv/bin/python -c "
import pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.table({'id':['a'],'content':['Hello world.']}), '$B/in1/a.parquet')"
cd "$B/in1" && $R --input '*.parquet' --output "$B/o1" --tokenizer utf8-bytes 2>&1 | grep rechunk: | head -1
cd "$B" && $R --input 'in[1]/a.parquet' --output "$B/o2" --tokenizer utf8-bytes 2>&1 | grep rechunk: | head -1
