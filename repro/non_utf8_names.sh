#!/bin/bash
# Local names of bytes that are not UTF-8: main gives a UnicodeEncodeError traceback (exit 1)
# after the checks passed; with 98aa0fd, one option error line (exit 2).
R=/work/wt-hostile13/.venv/bin/rechunk
B=/tmp/h13-nonutf8; rm -rf "$B"; mkdir -p "$B/in" "$B/raw"
/work/wt-hostile13/.venv/bin/python -c "
import pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.table({'id':['a'],'content':['Hello world.']}), '$B/in/plain.parquet')"
mv "$B/in/plain.parquet" "$(printf "$B/in/caf\xe9.parquet")"
printf '# T\n\ntext\n' > "$(printf "$B/raw/r\xe9sum\xe9.md")"
$R --input "$B/in/" --output "$B/o1" --tokenizer utf8-bytes 2>&1 | tail -1
$R --input "$B/in/$(printf 'caf\xe9').parquet" --output "$(printf "$B/o\xff")" --tokenizer utf8-bytes 2>&1 | tail -1
$R parse --input "$B/raw/*" --output "$B/p" 2>&1 | tail -1
