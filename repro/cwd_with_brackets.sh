#!/bin/sh
# Relative --input/--output/--previous in a current folder whose name holds [ ]. On main the checks pass
# on the relative names, the workers get the absolute ones, which Beam reads as patterns (tracebacks).
# With bf9b8f4: the input is read, --output/--previous relative there are one option error.
set -u
R=/work/wt-hostile13/.venv/bin/rechunk
B=/tmp/h13-cwd; rm -rf "$B"; mkdir -p "$B/proj [v1]"; cd "$B/proj [v1]"
/work/wt-hostile13/.venv/bin/python -c "
import pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.table({'id':['a'],'content':['Hello world.'],'content_format':['text']}), 'a.parquet')
pq.write_table(pa.table({'id':['a'],'content':['Hello world.'],'content_format':['text']}), '$B/a.parquet')"
echo "== relative --input (main: traceback, exit 1, 'No files found'; with 95d2909: exit 2 'no file matches')"
$R --input a.parquet --output "$B/o1" --tokenizer utf8-bytes 2>&1 | grep -E "^rechunk|Error" | tail -2
echo "== relative --output: the job runs, then FinalizeWrite fails (traceback, exit 1, beam-temp left)"
$R --input "$B/a.parquet" --output o2 --tokenizer utf8-bytes 2>&1 | grep -E "^rechunk|Error" | tail -1
find o2 -type f
echo "== relative --previous: traceback, exit 1"
$R --input "$B/a.parquet" --output "$B/o3" --tokenizer utf8-bytes >/dev/null 2>&1
cp -r "$B/o3" prev
$R --input "$B/a.parquet" --output "$B/o4" --previous prev --tokenizer utf8-bytes 2>&1 | grep -E "^rechunk|Error" | tail -1
