#!/bin/sh
# A folder whose name holds a "[" that nothing closes, given as DIR/: Beam read the "[" literally
# in DIR/* (e9a2ac1 read the file), but the "]" of DIR/[!._]* closed it on main (0c910c0, f85c4af): no file matches. Fixed in d981e4f.
R=/work/wt-hostile13/.venv/bin/rechunk
B=/tmp/h13-bracket; rm -rf "$B"; mkdir -p "$B/data[2024"
/work/wt-hostile13/.venv/bin/python -c "
import pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.table({'id':['a'],'content':['Hello world.']}), '$B/data[2024/a.parquet')"
echo "== main:"; $R --input "$B/data[2024/" --output "$B/o1" --tokenizer utf8-bytes 2>&1 | grep rechunk: | head -1
echo "== e9a2ac1:"; (cd /tmp/old-h13 && /work/wt-hostile13/.venv/bin/python -c "import sys;sys.path.insert(0,'/tmp/old-h13');import pipelines.rechunk as r;sys.argv[0]='rechunk';sys.exit(r.cli())" --input "$B/data[2024/" --output "$B/o2" --tokenizer utf8-bytes 2>&1 | grep rechunk: | head -1)
echo "== main, written [[]:"; $R --input "$B/data[[]2024/" --output "$B/o3" --tokenizer utf8-bytes 2>&1 | grep rechunk: | head -1
