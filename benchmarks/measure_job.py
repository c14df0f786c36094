"""Run the rechunk job as a subprocess and record wall time and peak memory of its process tree.

    python benchmarks/measure_job.py --label in_memory -- --input ../shared/data/corpus/docs.parquet \
        --output /tmp/run1 --direct_running_mode=in_memory

Peak memory is the largest sum of resident set sizes over the job's process and all of its
descendants (worker processes included), sampled from /proc every 0.2 s; Linux only. Also the
job process's own peak, its VmHWM (the kernel's high-water mark of its resident memory, so no
peak between samples is missed; ``ru_maxrss`` would not do: it keeps the RSS of the parent it
was forked from): with the default in_memory runner the whole job runs in that one process.
Prints one JSON line: label, exit status, wall seconds, peak RSS in MiB, and the report's counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def process_tree(root: int) -> dict[int, tuple[int, float]]:
    """``{pid: (resident bytes, CPU seconds user + system)}`` of ``root`` and each of its
    descendants, read from Linux's /proc (a process that ends meanwhile is left out)."""
    page, tick = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    figures: dict[int, tuple[int, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{name}/statm") as f:
                rss = int(f.read().split()[1]) * page
        except OSError:
            continue
        figures[int(name)] = (rss, (int(fields[11]) + int(fields[12])) / tick)
        children.setdefault(int(fields[1]), []).append(int(name))
    tree, stack = {}, [root]
    while stack:
        pid = stack.pop()
        if pid in figures:
            tree[pid] = figures[pid]
        stack.extend(children.get(pid, []))
    return tree


def _tree_rss_bytes(root: int) -> int:
    return sum(rss for rss, _ in process_tree(root).values())


def _high_water_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure(label: str, job_args: list[str], **popen) -> dict:
    """Run the job with ``job_args``; return the figures (and the report's counts, if written)."""
    output = job_args[job_args.index("--output") + 1]
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pipelines.rechunk", *job_args], **popen)
    peak = high_water = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss_bytes(proc.pid))
        high_water = max(high_water, _high_water_bytes(proc.pid))
        time.sleep(0.2)
    wall = time.monotonic() - started
    result = {
        "label": label,
        "exit": proc.returncode,
        "wall_seconds": round(wall, 1),
        "peak_rss_mib": round(peak / 2**20),
        "high_water_mib": round(high_water / 2**20),
    }
    try:
        with open(os.path.join(output, "report.json")) as f:
            report = json.load(f)
        for key in (
            "documents_read",
            "documents_chunked",
            "documents_dead_lettered",
            "chunks_written",
            "dead_letter_by_reason",
            "token_count",
        ):
            result[key] = report[key]
    except OSError:
        pass
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True)
    parser.add_argument("job_args", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    print(json.dumps(measure(args.label, [a for a in args.job_args if a != "--"])))


if __name__ == "__main__":
    main()
