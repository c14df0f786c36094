"""CPU time of normalize_html, another checkout's against this one's, interleaved in one process (s10-html).

    python benchmarks/html_speed.py --baseline /work/main [--rounds 3] [--input X.parquet ...]

Runs every HTML document of the corpus (``content_format == "html"``; or of each ``--input``) through
the baseline checkout's ``transforms/structure/normalizers/html.py`` and this one's, alternating by
round, and prints the best round's CPU seconds (``time.process_time``) of each and the ratio. For
this checkout it also times each path forced on every page (``STREAM_DOCUMENT_CHARS`` huge, or 0).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="a checkout (e.g. main)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--input", action="append", default=[], help="Parquet files of documents (default: the corpus)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    import pyarrow.parquet as pq

    inputs = args.input or ["/work/shared/data/corpus/docs.parquet"]
    pages = []
    for path in inputs:
        rows = pq.read_table(path, columns=["content", "content_format"]).to_pylist()
        pages += [row["content"] for row in rows if row["content_format"] == "html"]
    base = load(Path(args.baseline) / "transforms/structure/normalizers/html.py", "html_baseline")
    from transforms.structure.normalizers import html as branch

    def forced(threshold):
        def normalize(content):
            saved = branch.STREAM_DOCUMENT_CHARS
            branch.STREAM_DOCUMENT_CHARS = threshold
            try:
                return branch.normalize_html(content)
            finally:
                branch.STREAM_DOCUMENT_CHARS = saved

        return normalize

    runs = {
        "baseline": base.normalize_html,
        "branch": branch.normalize_html,
        "branch, whole tree forced": forced(1 << 62),
        "branch, windows forced": forced(0),
    }
    best = {name: float("inf") for name in runs}
    for _ in range(args.rounds):
        for name, fn in runs.items():
            gc.collect()
            started = time.process_time()
            for content in pages:
                fn(content)
            best[name] = min(best[name], time.process_time() - started)
    chars = sum(map(len, pages))
    print(f"{len(pages)} pages, {chars:,} characters, best of {args.rounds} rounds (CPU s)")
    for name, seconds in best.items():
        print(f"  {name}: {seconds:.3f} s ({seconds / best['baseline']:.2f} x baseline)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
