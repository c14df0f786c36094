#!/bin/bash
# Fixed in a280308 (the second run is refused: chunks/ already holds files).
# A run killed while writing leaves OUT/chunks/beam-temp-*/ (a partial Parquet file). A second run
# into the same --output is accepted (the check looks at OUT/chunks/* only, not below), finishes,
# and leaves the dead temp file inside chunks/: pyarrow.dataset / DuckDB's chunks/**.parquet /
# benchmarks/chunks_sha256.py then fail on it (or would count its rows twice if it were whole).
set -u
W=/work/wt-hostile13; OUT=/tmp/h13-kill2; rm -rf $OUT
nice $W/.venv/bin/rechunk --input /work/shared/data/corpus/docs.parquet --output $OUT >/tmp/h13-kill2.log 2>&1 &
P=$!
for i in $(seq 1 900); do
  if find $OUT -path '*beam-temp*' -type f 2>/dev/null | grep -q .; then kill -TERM $P; break; fi; sleep 0.1
done
wait $P; echo "first run killed: exit $?"; find $OUT -type f
nice $W/.venv/bin/rechunk --input /work/shared/data/corpus/docs_small.parquet --output $OUT 2>&1 | grep 'rechunk:' | head -1
find $OUT -type f
$W/.venv/bin/python -c "
import pyarrow.dataset as ds
ds.dataset('$OUT/chunks').to_table()" 2>&1 | tail -1
