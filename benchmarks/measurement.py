"""What the benchmarks share: their input option, a job run measured as a process, the report header.

Process figures are read from Linux's /proc (resident set sizes, CPU seconds, the kernel's
high-water mark ``VmHWM``); on another system they read as 0.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
#: The default input of every benchmark: the documents shipped in ``sample/``.
SAMPLE = REPO / "sample" / "docs.parquet"
#: The report counts a measured job run returns beside its process figures.
REPORT_COUNTS = (
    "documents_read",
    "documents_chunked",
    "documents_dead_lettered",
    "chunks_written",
    "dead_letter_by_reason",
    "token_count",
)


def job_input(path: str | Path) -> str:
    """``path`` as the job's ``--input`` takes it: a folder as ``DIR/`` (every Parquet file in it)."""
    text = str(path)
    return text.rstrip("/") + "/" if Path(text).is_dir() else text


def shown(path: str | Path) -> str:
    """``path`` as a table names it: relative to the repository inside it, else its last part only,
    so that a written table names no machine path."""
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(REPO))
    except ValueError:
        return resolved.name + ("/" if resolved.is_dir() else "")


def read_documents(path: str | Path, columns: list[str] | None = None):
    """A Parquet file, or every Parquet file of a folder, as one ``pyarrow.Table`` of ``columns``."""
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    if Path(path).is_dir():
        return ds.dataset(str(path), format="parquet").to_table(columns=columns)
    return pq.read_table(path, columns=columns)


def job_options(remainder: list[str]) -> list[str]:
    """The job options given after ``--`` (``argparse.REMAINDER`` keeps the ``--`` itself)."""
    return [a for a in remainder if a != "--"]


# -- processes -------------------------------------------------------------------------------------


def process_tree(root: int) -> dict[int, tuple[int, float]]:
    """``{pid: (resident bytes, CPU seconds user + system)}`` of ``root`` and each of its
    descendants, read from /proc (a process that ends meanwhile is left out)."""
    page, tick = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    figures: dict[int, tuple[int, float]] = {}
    names = os.listdir("/proc") if os.path.isdir("/proc") else []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{name}/statm") as f:
                rss = int(f.read().split()[1]) * page
        except (OSError, IndexError):
            continue
        figures[int(name)] = (rss, (int(fields[11]) + int(fields[12])) / tick)
        children.setdefault(int(fields[1]), []).append(int(name))
    tree: dict[int, tuple[int, float]] = {}
    stack = [root]
    while stack:
        pid = stack.pop()
        if pid in figures:
            tree[pid] = figures[pid]
        stack.extend(children.get(pid, []))
    return tree


def _runs_python(pid: int) -> bool:
    """Whether the process's program is a Python interpreter (read from its command line)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            program = f.read().split(b"\0", 1)[0]
    except OSError:
        return False
    return os.path.basename(program).startswith(b"python")


def high_water_bytes(pid: int) -> int:
    """The process's peak resident set (``VmHWM``), so no peak between two samples is missed.

    ``ru_maxrss`` would not do: a forked child keeps the RSS of the parent it was forked from.
    """
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure_process(argv: list[str], output: str | Path | None = None, cwd: str | Path = REPO) -> dict[str, Any]:
    """Run ``argv`` (run from ``cwd``, the repository root by default; output discarded) and
    sample it every 0.1 s.

    Returns ``exit``; ``seconds`` (wall); ``peak_mib``, the largest sum of resident sets over the
    process and its descendants (worker processes included); ``high_water_mib``, the process's
    own ``VmHWM`` (with the in_memory runner the whole job runs in that one process);
    ``workers_high_water_mib``, the largest ``VmHWM`` of its descendants (the worker processes of
    ``multi_processing``; 0 without any); ``workers_high_water_each_mib``, the ``VmHWM`` of
    each descendant that runs Python (the worker processes, not a helper program they start),
    largest first;
    ``cpu_busiest``, the CPU seconds of the busiest process (on an idle machine the wall time
    cannot be less); ``cpu_total``; ``cpu_by_process``, the process itself and then each
    descendant of at least 0.05 s, busiest first; and, when ``output`` holds a job's
    ``report.json``, its counts (``REPORT_COUNTS``).
    """
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = high = 0
    workers: dict[int, int] = {}
    pythons: set[int] = set()
    cpu: dict[int, float] = {}
    while proc.poll() is None:
        tree = process_tree(proc.pid)
        peak = max(peak, sum(rss for rss, _ in tree.values()))
        high = max(high, high_water_bytes(proc.pid))
        for pid, (_, seconds) in tree.items():
            cpu[pid] = max(cpu.get(pid, 0.0), seconds)
            if pid != proc.pid:
                workers[pid] = max(workers.get(pid, 0), high_water_bytes(pid))
                if pid not in pythons and _runs_python(pid):
                    pythons.add(pid)
        time.sleep(0.1)
    result: dict[str, Any] = {
        "exit": proc.returncode,
        "seconds": time.monotonic() - started,
        "peak_mib": max(peak, high) / 2**20,
        "high_water_mib": high / 2**20,
        "workers_high_water_mib": max(workers.values(), default=0) / 2**20,
        "workers_high_water_each_mib": sorted(
            (b / 2**20 for pid, b in workers.items() if pid in pythons), reverse=True
        ),
        "cpu_busiest": max(cpu.values(), default=0.0),
        "cpu_total": sum(cpu.values()),
        "cpu_by_process": [cpu.get(proc.pid, 0.0)]
        + sorted((s for p, s in cpu.items() if p != proc.pid and s >= 0.05), reverse=True),
    }
    report = Path(output) / "report.json" if output is not None else None
    if report is not None and report.is_file():
        counts = json.loads(report.read_text())
        result.update({key: counts[key] for key in REPORT_COUNTS if key in counts})
    return result


def job_command(*args: str) -> list[str]:
    """The command line of one run of the chunk job (``python -m pipelines.rechunk ARGS``), with
    any share of dead-lettered documents accepted (a measurement's exit status is the run's, not
    the verdict's)."""
    return [sys.executable, "-m", "pipelines.rechunk", "--max-dead-letter-fraction", "1", *args]


# -- the report ------------------------------------------------------------------------------------


def machine() -> str:
    """The CPU model, cores, load average, kernel and Python of this machine, on one line."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{cpu}, {os.cpu_count()} cores (load average at start {load}); "
        f"{platform.system()} {platform.release()}; Python {platform.python_version()}"
    )


def versions(*packages: str) -> str:
    """``name version`` of rechunk and each installed package of ``packages``, comma-separated."""
    found = []
    for name in ("rechunk", *packages):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    return ", ".join(found)


def header(*packages: str) -> list[str]:
    """The lines every table starts with: the date (UTC), the machine and the versions."""
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    return [f"Date: {today}.", f"Machine: {machine()}.", f"Versions: {versions(*packages)}.", ""]


def write_markdown(path: str | Path | None, text: str) -> None:
    """Print ``text`` and, given ``path``, write it there as a Markdown file (folders made)."""
    print(text)
    if path:
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
